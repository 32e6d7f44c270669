package kubeops

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestE2EKubeServiceAccount runs the scheduler with a kubeconfig holding a
// real bearer token of gpusim-system/gpusim (TokenRequest), so every
// request it makes is authorized by deploy/rbac.yaml alone: it schedules
// six 2-pod gangs on two 8-GPU nodes end to end. The token appears nowhere
// in its stdout, stderr or output files.
func TestE2EKubeServiceAccount(t *testing.T) {
	faultTest(t)
	c := freshCluster(t, 2)
	token := serviceAccountToken(t, c)
	kc := kubeconfig(t, c, token)
	startKubelet(t, c)
	p := startScheduler(t, "scheduler", kc, scenarioFromDeploy(t))
	p.waitReady(t)
	// 6 gangs x 2 pods x 4 GPUs, 60 simulated s (1 s real) each: two
	// gangs fit at once, three waves.
	createGangs(t, c, 0, 6, 2, 4, "60")
	pods := waitAllSucceeded(t, c, 12, 60*time.Second)
	auditPlacements(t, pods)
	waitFor(t, "six starts in /metrics", 10*time.Second, func() bool {
		return p.metric(t, `gpusim_decisions_total{kind="start"}`) == "6"
	})
	for series, want := range map[string]string{
		"gpusim_leader":                     "1",
		"gpusim_pending_jobs":               "0",
		"gpusim_bind_latency_seconds_count": "6",
		`gpusim_errors_total{kind="bind"}`:  "0",
		`gpusim_errors_total{kind="event"}`: "0",
	} {
		if got := p.metric(t, series); got != want {
			t.Errorf("%s = %q, want %s", series, got, want)
		}
	}
	if got := p.boundGangs(); len(got) != 6 {
		t.Errorf("logged %d bound gangs %v, want 6", len(got), got)
	}
	if code := p.stop(t); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0\n%s", code, tail(p.stderr.String(), 3000))
	}
	// The run directory exists and nothing the process wrote holds the
	// token (nor its signature part, the secret half of a JWT).
	sig := token[strings.LastIndex(token, ".")+1:]
	texts := map[string]string{"stdout": p.stdout.String(), "stderr": p.stderr.String()}
	files := 0
	filepath.WalkDir(p.out, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, rerr := os.ReadFile(path)
			if rerr != nil {
				t.Error(rerr)
			}
			texts[path] = string(b)
			files++
		}
		return nil
	})
	if files == 0 {
		t.Errorf("no output files under %s", p.out)
	}
	for where, s := range texts {
		if strings.Contains(s, token) || strings.Contains(s, sig) {
			t.Errorf("the bearer token appears in %s", where)
		}
	}
}

// TestE2EKubeBadTokenNotLogged runs the scheduler with a kubeconfig whose
// bearer token the API server rejects (401): the errors it logs while its
// informers cannot sync must not quote the token, and --run-for ends it.
func TestE2EKubeBadTokenNotLogged(t *testing.T) {
	faultTest(t)
	c := freshCluster(t, 1)
	const token = "gpusimBadTokenDoNotLog0123456789abcdefghijklmnopqrstuvwxyz"
	p := startScheduler(t, "scheduler", kubeconfig(t, c, token), scenarioFromDeploy(t), "--run-for=4s")
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Fatal("no exit 60s after --run-for=4s")
	}
	if p.exitCode == 0 {
		t.Errorf("exit code 0 with a rejected token")
	}
	out := p.stdout.String() + p.stderr.String()
	t.Logf("exit %d; %s", p.exitCode, tail(out, 400))
	if !strings.Contains(out, "Unauthorized") {
		t.Errorf("no Unauthorized error logged:\n%s", tail(out, 2000))
	}
	if strings.Contains(out, token) || strings.Contains(out, token[:20]) {
		t.Errorf("the rejected token appears in the output:\n%s", tail(out, 2000))
	}
}

// TestE2EKubeKill9 kills the scheduler with SIGKILL in the middle of
// binding a gang and restarts it. The first scheduler talks to the API
// server through a proxy that holds the binds of g004-2 and g004-3 and,
// once the API server has bound g004-0 and g004-1 (the binds of a gang are
// in flight together), kills the scheduler before passing the last response
// on: g004 is left with two of four pods bound, deterministically.
// The restarted scheduler (direct connection) must complete it from the
// gpusim.io/node annotations written before the binds. Checks: every pod
// ran once, on the node gpusim recorded for it, each gang under one
// placement, no GPU served two pods at once, every pod Succeeded, no gang
// bound by both processes, no gang half-bound once the restart settled.
func TestE2EKubeKill9(t *testing.T) { kill9(t, false) }

// TestE2EKubeKill9Finished is TestE2EKubeKill9 with a restart that comes
// only after g004's two bound pods have Succeeded (the lost-pod case of a
// leader stopped between two binds of short pods): the restarted scheduler
// must still complete g004 to its recorded placement, not wait for
// --gang-timeout and skip its two pending pods.
func TestE2EKubeKill9Finished(t *testing.T) { kill9(t, true) }

func kill9(t *testing.T, waitFinished bool) {
	faultTest(t)
	c := freshCluster(t, 2)
	scen := scenarioFromDeploy(t)
	bp := startBindProxy(t, c)
	startKubelet(t, c)
	a := startScheduler(t, "first", bp.kubeconfig(t), scen)
	killed := make(chan struct{})
	// The scheduler binds a gang's pods concurrently: g004-2 and g004-3's
	// binds are held at the proxy, and the scheduler is killed once both
	// g004-0 and g004-1 are bound, whatever their order.
	bp.setHold(func(pod string) bool { return pod == "g004-2" || pod == "g004-3" })
	var g004 atomic.Int32
	bp.setHook(func(pod string) {
		if pod == "g004-0" || pod == "g004-1" {
			if g004.Add(1) == 2 {
				a.kill()
				close(killed)
			}
		}
	})
	a.waitReady(t)
	// 12 gangs x 4 pods x 2 GPUs (8 GPUs each), 120 s simulated (2 s
	// real): two run at once.
	const gangs, size = 12, 4
	createGangs(t, c, 0, gangs, size, 2, "120")
	select {
	case <-killed:
	case <-time.After(60 * time.Second):
		t.Fatal("pod g004-1 was never bound through the proxy")
	}
	bp.setHook(nil)
	bp.setHold(nil)
	firstBound := a.boundGangs()
	// What the kill left: gangs with some but not all pods bound.
	l, err := c.Client.CoreV1().Pods(faultNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bound := map[string]int{}
	for i := range l.Items {
		if l.Items[i].Spec.NodeName != "" {
			bound[gangOfPod(&l.Items[i])]++
		}
	}
	var half []string
	for g, n := range bound {
		if n < size {
			half = append(half, g)
		}
	}
	t.Logf("killed with %d gang(s) logged bound %v; half-bound: %v", len(firstBound), firstBound, half)
	if len(half) != 1 || half[0] != "g004" || bound["g004"] != 2 {
		t.Fatalf("half-bound gangs %v (g004: %d bound), want exactly g004 with 2 of 4", half, bound["g004"])
	}
	if waitFinished {
		waitFor(t, "g004's bound pods to succeed", 30*time.Second, func() bool {
			n := 0
			for _, name := range []string{"g004-0", "g004-1"} {
				p, err := c.Client.CoreV1().Pods(faultNS).Get(context.Background(), name, metav1.GetOptions{})
				if err == nil && p.Status.Phase == corev1.PodSucceeded {
					n++
				}
			}
			return n == 2
		})
	}

	b := startScheduler(t, "restarted", kubeconfig(t, c, ""), scen)
	b.waitReady(t)
	hb := watchHalfBound(c, 2*time.Second)
	pods := waitAllSucceeded(t, c, gangs*size, 90*time.Second)
	bad, snaps := hb.finish()
	if len(bad) > 0 {
		t.Errorf("gangs left half-bound after the restart settled (%d snapshots): %v", snaps, bad)
	}
	auditPlacements(t, pods)
	// No gang bound by both: the second process binds only gangs the
	// first had not bound; it completes g004 at start.
	second := b.boundGangs()
	for _, g := range second {
		if slices.Contains(firstBound, g) {
			t.Errorf("gang %s bound by both processes", g)
		}
	}
	if !strings.Contains(b.stderr.String(), faultNS+"/g004      half-bound gang completed (2 pods bound now)") {
		t.Errorf("the restarted scheduler did not complete g004 at start")
	}
	if got := len(firstBound) + len(second) + 1; got != gangs {
		t.Errorf("bound %d + %d gangs + g004 completed = %d, want %d", len(firstBound), len(second), got, gangs)
	}
	b.stop(t)
}

// TestE2EKubeAPIServerRestart restarts kube-apiserver while the scheduler
// runs gangs; the scheduler reconnects (its informers re-watch), schedules
// gangs created after the restart, and every pod finishes.
func TestE2EKubeAPIServerRestart(t *testing.T) {
	faultTest(t)
	c := freshCluster(t, 2)
	kc := kubeconfig(t, c, "")
	startKubelet(t, c)
	p := startScheduler(t, "scheduler", kc, scenarioFromDeploy(t))
	p.waitReady(t)
	createGangs(t, c, 0, 6, 2, 4, "120")
	waitFor(t, "two gangs bound", 30*time.Second, func() bool { return len(p.boundGangs()) >= 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t0 := time.Now()
	if err := c.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("API server restarted in %v; %d gangs bound before", time.Since(t0).Round(time.Millisecond), len(p.boundGangs()))
	if p.exited() {
		t.Fatalf("scheduler exited (%d) during the API-server restart", p.exitCode)
	}
	createGangs(t, c, 6, 4, 2, 4, "60")
	pods := waitAllSucceeded(t, c, 20, 90*time.Second)
	auditPlacements(t, pods)
	if got := p.boundGangs(); len(got) != 10 {
		t.Errorf("bound %d gangs, want 10: %v", len(got), got)
	}
	if code := p.stop(t); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
}

// TestE2EKubeLeaderElection runs two replicas with --leader-elect under
// the service account's token (so deploy/'s leader-election Role is what
// lets them campaign). Only the leader binds: the standby is ready, reports
// gpusim_leader 0 and no decisions, and logs no bind. When the leader is
// killed with SIGKILL, the standby takes over once the lease expires and
// schedules the gangs created after; every gang is bound by exactly one
// replica.
func TestE2EKubeLeaderElection(t *testing.T) {
	faultTest(t)
	c := freshCluster(t, 2)
	kc := kubeconfig(t, c, serviceAccountToken(t, c))
	scen := scenarioFromDeploy(t)
	startKubelet(t, c)
	le := func(id string) []string {
		return []string{"--leader-elect", "--leader-elect-identity=" + id,
			"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=500ms"}
	}
	a := startScheduler(t, "replica-a", kc, scen, le("replica-a")...)
	a.waitReady(t)
	if !strings.Contains(a.stderr.String(), "leader election: leading as replica-a") {
		t.Fatalf("replica-a ready but not leading")
	}
	b := startScheduler(t, "replica-b", kc, scen, le("replica-b")...)
	waitFor(t, "replica-b campaigning", 30*time.Second, func() bool {
		return strings.Contains(b.stderr.String(), "campaigning for Lease gpusim-system/gpusim-scheduler as replica-b")
	})
	if code, _ := httpGet(b.addr(t), "/readyz"); code != 200 {
		t.Errorf("standby /readyz = %d, want 200", code)
	}

	createGangs(t, c, 0, 6, 2, 4, "60")
	waitAllSucceeded(t, c, 12, 60*time.Second)
	if got := a.boundGangs(); len(got) != 6 {
		t.Errorf("leader bound %d gangs, want 6: %v", len(got), got)
	}
	if got := b.boundGangs(); len(got) != 0 {
		t.Errorf("standby bound gangs %v", got)
	}
	for series, want := range map[string]string{"gpusim_leader": "0", `gpusim_decisions_total{kind="start"}`: "0"} {
		if got := b.metric(t, series); got != want {
			t.Errorf("standby %s = %q, want %s", series, got, want)
		}
	}
	if got := a.metric(t, "gpusim_leader"); got != "1" {
		t.Errorf("leader gpusim_leader = %q", got)
	}

	killedAt := time.Now()
	a.kill()
	createGangs(t, c, 6, 6, 2, 4, "60")
	waitFor(t, "replica-b to lead", 30*time.Second, func() bool {
		return strings.Contains(b.stderr.String(), "leader election: leading as replica-b")
	})
	takeover := time.Since(killedAt)
	t.Logf("replica-b took over %v after replica-a was killed (lease 4s)", takeover.Round(time.Millisecond))
	if takeover < 2*time.Second {
		t.Errorf("takeover after %v: before the 4s lease could expire", takeover)
	}
	pods := waitAllSucceeded(t, c, 24, 60*time.Second)
	auditPlacements(t, pods)
	ga, gb := a.boundGangs(), b.boundGangs()
	for _, g := range gb {
		if slices.Contains(ga, g) {
			t.Errorf("gang %s bound by both replicas", g)
		}
	}
	if len(ga)+len(gb) != 12 || len(gb) != 6 {
		t.Errorf("replica-a bound %v, replica-b bound %v: want 6 + 6", ga, gb)
	}
	l, err := c.Client.CoordinationV1().Leases("gpusim-system").Get(context.Background(), "gpusim-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := l.Spec.HolderIdentity; h == nil || *h != "replica-b" {
		t.Errorf("lease holder %v, want replica-b", h)
	}
	if got := b.metric(t, "gpusim_leader"); got != "1" {
		t.Errorf("new leader gpusim_leader = %q", got)
	}
	// A clean stop releases the lease (ReleaseOnCancel) after the core
	// returned.
	if code := b.stop(t); code != 0 {
		t.Errorf("replica-b exit code %d, want 0", code)
	}
	l, err = c.Client.CoordinationV1().Leases("gpusim-system").Get(context.Background(), "gpusim-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := l.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("lease still held by %q after a clean stop", *h)
	}
}

// TestE2EKubeLeaseLost partitions the leader from the Lease API only (a
// proxy answers 503 to its Lease requests while its binds still pass):
// the leader must stop binding once its renewal fails for RenewDeadline
// and exit with code 1, and the standby (through a proxy of its own) must
// send its first bind only after the leader's last bind came back. Every
// pod still runs once.
func TestE2EKubeLeaseLost(t *testing.T) {
	faultTest(t)
	c := freshCluster(t, 4)
	scen := scenarioFromDeploy(t)
	pa, pb := startBindProxy(t, c), startBindProxy(t, c)
	startKubelet(t, c)
	le := func(id string) []string {
		return []string{"--leader-elect", "--leader-elect-identity=" + id,
			"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=500ms"}
	}
	a := startScheduler(t, "replica-a", pa.kubeconfig(t), scen, le("replica-a")...)
	a.waitReady(t)
	b := startScheduler(t, "replica-b", pb.kubeconfig(t), scen, le("replica-b")...)
	waitFor(t, "replica-b campaigning", 30*time.Second, func() bool {
		return strings.Contains(b.stderr.String(), "campaigning for Lease")
	})
	// 16 gangs of 7 s, four at a time: binding goes on for ~28 s. A gang
	// the leader left half-bound at the loss is still running when the
	// standby takes over (4-5 s later) and completes it.
	createGangs(t, c, 0, 16, 2, 4, "420")
	waitFor(t, "two gangs bound by replica-a", 30*time.Second, func() bool { return len(a.boundGangs()) >= 2 })
	cut := time.Now()
	pa.partitionLeases()
	select {
	case <-a.done:
	case <-time.After(30 * time.Second):
		t.Fatal("replica-a still running 30s after losing the Lease API")
	}
	if a.exitCode != 1 || !strings.Contains(a.stderr.String(), "leader election: lost Lease gpusim-system/gpusim-scheduler (replica-a): stopped scheduling") {
		t.Errorf("replica-a exit %d, want 1 with a lost-lease line", a.exitCode)
	}
	waitAllSucceeded(t, c, 32, 90*time.Second)
	_, lastA, na := pa.bindTimes()
	firstB, _, nb := pb.bindTimes()
	t.Logf("replica-a: %d binds, last %v after the cut; replica-b: %d binds, first %v after the cut",
		na, lastA.Sub(cut).Round(time.Millisecond), nb, firstB.Sub(cut).Round(time.Millisecond))
	if na+nb != 32 {
		t.Errorf("%d + %d binds, want 32 (each pod bound once)", na, nb)
	}
	if nb == 0 || !lastA.Before(firstB) {
		t.Errorf("replica-b's first bind was sent %v, before replica-a's last bind returned %v", firstB, lastA)
	}
	l, err := c.Client.CoreV1().Pods(faultNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	auditPlacements(t, l.Items)
	b.stop(t)
}
