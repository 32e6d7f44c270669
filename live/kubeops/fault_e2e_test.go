package kubeops

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestE2EKubeServiceAccount runs the scheduler with a kubeconfig holding a
// real bearer token of gpusim-system/gpusim (TokenRequest), so every
// request it makes is authorized by deploy/rbac.yaml alone: it schedules
// six 2-pod gangs on two 8-GPU nodes end to end. The token appears nowhere
// in its stdout, stderr or output files.
func TestE2EKubeServiceAccount(t *testing.T) {
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

// TestE2EKubeKill9 kills the scheduler with SIGKILL in the middle of
// binding a gang (at the first gpusim.io/node annotation of a later gang,
// written just before its binds), restarts it, and checks: every pod ran
// once on the node gpusim recorded for it, each gang under one placement,
// no GPU served two pods at once, every pod Succeeded, no gang bound by
// both processes (the second adopts or completes what the first bound),
// and no gang stayed half-bound once the restarted scheduler was ready.
func TestE2EKubeKill9(t *testing.T) {
	c := freshCluster(t, 2)
	kc := kubeconfig(t, c, "")
	scen := scenarioFromDeploy(t)
	startKubelet(t, c)
	a := startScheduler(t, "first", kc, scen)
	a.waitReady(t)
	// 12 gangs x 4 pods x 2 GPUs (8 GPUs each), 120 s simulated (2 s
	// real): two run at once.
	const gangs, size = 12, 4
	createGangs(t, c, 0, gangs, size, 2, "120")
	// Kill at the first annotation of the fifth gang or later: the scheduler
	// is between patching a gang's pods and binding them.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w, err := c.Client.CoreV1().Pods(faultNS).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for ev := range w.ResultChan() {
		p, ok := ev.Object.(interface{ GetAnnotations() map[string]string })
		if !ok {
			continue
		}
		if n := p.GetAnnotations()["gpusim.io/node"]; n != "" && len(a.boundGangs()) >= 4 {
			a.kill()
			break
		}
	}
	w.Stop()
	if !a.exited() {
		t.Fatal("the first scheduler was not killed (no gang annotated after four bound)")
	}
	firstBound := a.boundGangs()
	// What the kill left: gangs with some but not all pods bound, and
	// pods annotated but not bound.
	l, err := c.Client.CoreV1().Pods(faultNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bound, annotated := map[string]int{}, 0
	for i := range l.Items {
		p := &l.Items[i]
		if p.Spec.NodeName != "" {
			bound[gangOfPod(p)]++
		} else if p.Annotations["gpusim.io/node"] != "" {
			annotated++
		}
	}
	var half []string
	for g, n := range bound {
		if n < size {
			half = append(half, g)
		}
	}
	t.Logf("killed after %d gangs bound; left %d half-bound gang(s) %v and %d annotated unbound pod(s)", len(firstBound), len(half), half, annotated)

	b := startScheduler(t, "restarted", kc, scen)
	b.waitReady(t)
	hb := watchHalfBound(c, 2*time.Second)
	pods := waitAllSucceeded(t, c, gangs*size, 90*time.Second)
	bad, snaps := hb.finish()
	if len(bad) > 0 {
		t.Errorf("gangs left half-bound after the restart settled (%d snapshots): %v", snaps, bad)
	}
	auditPlacements(t, pods)
	// No gang bound by both: the second process binds only gangs the
	// first did not finish binding (it completes half-bound ones).
	for _, g := range b.boundGangs() {
		if slices.Contains(firstBound, g) {
			t.Errorf("gang %s bound by both processes", g)
		}
	}
	for _, g := range half {
		if !strings.Contains(b.stderr.String(), faultNS+"/"+g) {
			t.Errorf("half-bound gang %s not mentioned by the restarted scheduler", g)
		}
	}
	if got := len(firstBound) + len(b.boundGangs()); got+len(half) < gangs {
		t.Errorf("bound %d+%d gangs (+%d completed), want %d in all", len(firstBound), len(b.boundGangs()), len(half), gangs)
	}
	b.stop(t)
}

// TestE2EKubeAPIServerRestart restarts kube-apiserver while the scheduler
// runs gangs; the scheduler reconnects (its informers re-watch), schedules
// gangs created after the restart, and every pod finishes.
func TestE2EKubeAPIServerRestart(t *testing.T) {
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
