package kubeops

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gpusim/gpusim/internal/kubetest"
)

// The end-to-end fault tests run the real gpusim binary (built once per
// test binary with go build) as a subprocess against a fresh etcd +
// kube-apiserver per test, with kubetest's FakeKubelet running the pods.

var (
	gpusimOnce sync.Once
	gpusimPath string
	gpusimErr  error
	gpusimDir  string
)

// gpusimBinary builds ./cmd/gpusim (skipping the test when the e2e
// binaries are missing).
func gpusimBinary(t testing.TB) string {
	t.Helper()
	kubetest.BinDirOrSkip(t)
	gpusimOnce.Do(func() {
		root, err := kubetest.RepoRoot()
		if err != nil {
			gpusimErr = err
			return
		}
		if gpusimDir, gpusimErr = os.MkdirTemp("", "gpusim-kubeops-bin-"); gpusimErr != nil {
			return
		}
		gpusimPath = filepath.Join(gpusimDir, "gpusim")
		cmd := exec.Command("go", "build", "-o", gpusimPath, "./cmd/gpusim")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			gpusimErr = fmt.Errorf("go build ./cmd/gpusim: %v\n%s", err, out)
		}
	})
	if gpusimErr != nil {
		t.Fatal(gpusimErr)
	}
	return gpusimPath
}

// EnvFull runs the fault tests in a plain go test (make e2e runs them
// too, through GPUSIM_E2E_REQUIRE=1).
const EnvFull = "GPUSIM_E2E_FULL"

// faultTest skips (or fails, with GPUSIM_E2E_REQUIRE=1) without the
// binaries, and skips unless make e2e or GPUSIM_E2E_FULL=1 asked for the
// fault tests: each runs its own control plane and scheduler processes for
// 20-45 s, too long for every go test ./... on a shared machine.
func faultTest(t *testing.T) {
	t.Helper()
	kubetest.BinDirOrSkip(t)
	if os.Getenv(kubetest.EnvRequire) != "1" && os.Getenv(EnvFull) != "1" {
		t.Skipf("fault test (20-45 s): run with make e2e or %s=1", EnvFull)
	}
}

// faultNS is the namespace of the fault tests' pods.
const faultNS = "team"

// freshCluster starts a control plane of the test's own (the scheduler
// models every node of the cluster, so tests must not share nodes), with
// deploy/'s namespace and RBAC, the workload CRDs, namespace faultNS and
// nodes GPU nodes of 8 GPUs.
func freshCluster(t testing.TB, nodes int) *kubetest.Cluster {
	t.Helper()
	bin := kubetest.BinDirOrSkip(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := kubetest.StartRetry(ctx, kubetest.Options{BinDir: bin, Dir: filepath.Join(t.TempDir(), "cp")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	applyDeploy(t, ctx, c.Dynamic, "namespace.yaml", "rbac.yaml")
	if err := c.InstallWorkloadCRDs(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateNamespace(ctx, faultNS); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < nodes; i++ {
		if _, err := c.CreateReadyGPUNode(ctx, fmt.Sprintf("gpu-%03d", i), 8, map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// kubeconfig writes a kubeconfig for c's API server: with token, a bearer
// token; otherwise c's admin client certificate.
func kubeconfig(t testing.TB, c *kubetest.Cluster, token string) string {
	t.Helper()
	auth := &clientcmdapi.AuthInfo{Token: token}
	if token == "" {
		auth = &clientcmdapi.AuthInfo{ClientCertificateData: c.Config.CertData, ClientKeyData: c.Config.KeyData}
	}
	cfg := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"e2e": {Server: c.Config.Host, CertificateAuthorityData: c.Config.CAData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"u": auth},
		Contexts:       map[string]*clientcmdapi.Context{"e2e": {Cluster: "e2e", AuthInfo: "u"}},
		CurrentContext: "e2e",
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// serviceAccountToken asks the API server (TokenRequest) for a bearer
// token of gpusim-system/gpusim, the identity deploy/ gives the scheduler.
func serviceAccountToken(t testing.TB, c *kubetest.Cluster) string {
	t.Helper()
	exp := int64(3600)
	tr, err := c.Client.CoreV1().ServiceAccounts("gpusim-system").CreateToken(context.Background(), "gpusim",
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Status.Token) < 100 {
		t.Fatalf("token of %d bytes", len(tr.Status.Token))
	}
	return tr.Status.Token
}

// scenarioFromDeploy writes the scenario of deploy/scheduler.yaml's
// ConfigMap to a file: the tests run what the Deployment runs.
func scenarioFromDeploy(t testing.TB) string {
	t.Helper()
	path, objs := readDeploy(t, "scheduler.yaml")
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" {
			s, _, _ := unstructured.NestedString(o.Object, "data", "scenario.yaml")
			out := filepath.Join(t.TempDir(), "scenario.yaml")
			if err := os.WriteFile(out, []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
	t.Fatalf("%s: no ConfigMap", path)
	return ""
}

// schedProc is one gpusim scheduler process.
type schedProc struct {
	name     string
	cmd      *exec.Cmd
	stdout   kubetest.SyncBuffer
	stderr   kubetest.SyncBuffer
	out      string // -o directory
	done     chan struct{}
	exitCode int
}

// scale is simulated seconds per real second for the fault tests: a
// gpusim.io/duration of 60 (s) runs 1 s.
const scale = 60

// startScheduler runs `gpusim live SCENARIO --backend kubernetes` on
// kubeconfig kc for namespace faultNS, with /metrics on a free port, plus
// extra flags.
func startScheduler(t testing.TB, name, kc, scenario string, extra ...string) *schedProc {
	t.Helper()
	p := &schedProc{name: name, out: filepath.Join(t.TempDir(), "out"), done: make(chan struct{})}
	args := append([]string{"live", scenario, "--backend=kubernetes", "--kubeconfig=" + kc, "--namespace=" + faultNS,
		"--scale=" + strconv.Itoa(scale), "--metrics-addr=127.0.0.1:0", "--poll=20ms", "-o", p.out}, extra...)
	p.cmd = exec.Command(gpusimBinary(t), args...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.Env = append(os.Environ(), "KUBECONFIG=/nonexistent")
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		p.exitCode = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("--- %s stderr:\n%s", p.name, tail(p.stderr.String(), 6000))
		}
	})
	return p
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// kill sends SIGKILL (kill -9) and waits for the exit.
func (p *schedProc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop sends SIGTERM and waits up to 30s for the exit; it returns the
// exit code.
func (p *schedProc) stop(t testing.TB) int {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Errorf("%s did not exit 30s after SIGTERM", p.name)
		p.kill()
	}
	return p.exitCode
}

var servingRE = regexp.MustCompile(`serving /healthz, /readyz and /metrics on (\S+)`)

// addr waits for the metrics address in the log.
func (p *schedProc) addr(t testing.TB) string {
	t.Helper()
	var a string
	waitFor(t, p.name+" metrics address", 30*time.Second, func() bool {
		m := servingRE.FindStringSubmatch(p.stderr.String())
		if m != nil {
			a = m[1]
		}
		return m != nil || p.exited()
	})
	if a == "" {
		t.Fatalf("%s exited (%d) before serving", p.name, p.exitCode)
	}
	return a
}

func (p *schedProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// httpGet returns the status and body of http://addr/path (0 on error).
func httpGet(addr, path string) (int, string) {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitReady waits until /readyz answers 200 and the informers have synced
// (the core logged its cluster line).
func (p *schedProc) waitReady(t testing.TB) {
	t.Helper()
	a := p.addr(t)
	waitFor(t, p.name+" ready", 60*time.Second, func() bool {
		code, _ := httpGet(a, "/readyz")
		return (code == http.StatusOK && strings.Contains(p.stderr.String(), " GPU nodes, ")) || p.exited()
	})
	if p.exited() {
		t.Fatalf("%s exited (%d)", p.name, p.exitCode)
	}
}

// metric returns the value of one sample line of /metrics ("" if absent).
func (p *schedProc) metric(t testing.TB, series string) string {
	t.Helper()
	_, body := httpGet(p.addr(t), "/metrics")
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			return v
		}
	}
	return ""
}

var boundRE = regexp.MustCompile(`(?m)^\s*\S+s\s+(\S+)\s+bound to `)

// boundGangs are the gangs the process logged as bound, in order.
func (p *schedProc) boundGangs() []string {
	var out []string
	for _, m := range boundRE.FindAllStringSubmatch(p.stderr.String(), -1) {
		out = append(out, m[1])
	}
	return out
}

func waitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// createGangs creates gangs g<first>..g<first+n-1> in faultNS: a
// scheduler-plugins PodGroup with minMember = size and size pods of gpus
// GPUs each, schedulerName gpusim, running dur simulated seconds.
func createGangs(t testing.TB, c *kubetest.Cluster, first, n, size, gpus int, dur string) {
	t.Helper()
	createGangsNS(t, c, faultNS, first, n, size, gpus, dur, nil)
}

// createGangsNS is createGangs in namespace ns; onCreate (if not nil) runs
// just before each pod's Create.
func createGangsNS(t testing.TB, c *kubetest.Cluster, ns string, first, n, size, gpus int, dur string, onCreate func(pod string)) {
	t.Helper()
	ctx := context.Background()
	for g := first; g < first+n; g++ {
		name := fmt.Sprintf("g%03d", g)
		pg := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
			"metadata": map[string]any{"name": name, "namespace": ns}, "spec": map[string]any{"minMember": int64(size)},
		}}
		if _, err := c.Dynamic.Resource(podGroupsX).Namespace(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for r := 0; r < size; r++ {
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, r), Namespace: ns,
					Labels:      map[string]string{"scheduling.x-k8s.io/pod-group": name},
					Annotations: map[string]string{kubetest.DurationAnnotation: dur}},
				Spec: corev1.PodSpec{SchedulerName: "gpusim", Containers: []corev1.Container{{
					Name: "train", Image: "registry.invalid/train:1",
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
						kubetest.GPUResource: *resource.NewQuantity(int64(gpus), resource.DecimalSI)}},
				}}},
			}
			if onCreate != nil {
				onCreate(p.Name)
			}
			if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// startKubelet runs kubetest's FakeKubelet at 1/scale until the test ends.
func startKubelet(t testing.TB, c *kubetest.Cluster) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	k, err := kubetest.StartFakeKubelet(ctx, c.Client, 1.0/scale)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); k.Wait() })
}

// gangOfPod is the pod's PodGroup.
func gangOfPod(p *corev1.Pod) string { return p.Labels["scheduling.x-k8s.io/pod-group"] }

// halfBoundWatch lists faultNS every 50ms and records every gang seen
// with some but not all pods bound for longer than persist (a gang being
// bound is half-bound for milliseconds; one left half-bound stays so).
type halfBoundWatch struct {
	mu       sync.Mutex
	since    map[string]time.Time
	persist  time.Duration
	bad      []string
	observed int // snapshots
	stop     context.CancelFunc
	done     chan struct{}
}

func watchHalfBound(c *kubetest.Cluster, persist time.Duration) *halfBoundWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &halfBoundWatch{since: map[string]time.Time{}, persist: persist, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			pods, err := c.Client.CoreV1().Pods(faultNS).List(ctx, metav1.ListOptions{})
			if err == nil {
				w.snapshot(pods.Items, time.Now())
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *halfBoundWatch) snapshot(pods []corev1.Pod, now time.Time) {
	bound, total := map[string]int{}, map[string]int{}
	for i := range pods {
		g := gangOfPod(&pods[i])
		total[g]++
		if pods[i].Spec.NodeName != "" {
			bound[g]++
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.observed++
	for g, n := range total {
		if b := bound[g]; b > 0 && b < n {
			s, ok := w.since[g]
			if !ok {
				w.since[g] = now
			} else if now.Sub(s) > w.persist && !slices.Contains(w.bad, g) {
				w.bad = append(w.bad, fmt.Sprintf("%s (%d of %d bound for %v)", g, b, n, now.Sub(s).Round(time.Millisecond)))
			}
		} else {
			delete(w.since, g)
		}
	}
}

// finish stops the watch and returns the gangs left half-bound.
func (w *halfBoundWatch) finish() (bad []string, snapshots int) {
	w.stop()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bad, w.observed
}

// waitAllSucceeded waits until every pod of faultNS (want of them) has
// Succeeded.
func waitAllSucceeded(t testing.TB, c *kubetest.Cluster, want int, timeout time.Duration) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	var last string
	deadline := time.Now().Add(timeout)
	for {
		l, err := c.Client.CoreV1().Pods(faultNS).List(context.Background(), metav1.ListOptions{})
		if err == nil {
			pods = l.Items
			phases := map[corev1.PodPhase]int{}
			for i := range pods {
				phases[pods[i].Status.Phase]++
			}
			last = fmt.Sprint(phases)
			if len(pods) == want && phases[corev1.PodSucceeded] == want {
				return pods
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("not all %d pods Succeeded after %v: %s (err %v)", want, timeout, last, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// auditPlacements checks the end state: every pod ran on exactly one node,
// the one gpusim recorded for it (gpusim.io/node), every gang's pods carry
// one gpusim.io/placement naming their nodes, and no GPU of a node served
// two pods at once (from the pods' gpusim.io/gpus and the kubelet's start
// and finish times, which the API server keeps to the second: truncation is
// monotone, so an overlap found is real).
func auditPlacements(t testing.TB, pods []corev1.Pod) {
	t.Helper()
	place := map[string]string{}
	type use struct {
		pod        string
		start, end time.Time
	}
	uses := map[string][]use{} // node/gpu -> uses
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" {
			t.Errorf("pod %s never bound", p.Name)
			continue
		}
		if n := p.Annotations["gpusim.io/node"]; n != p.Spec.NodeName {
			t.Errorf("pod %s on %s, gpusim.io/node %q", p.Name, p.Spec.NodeName, n)
		}
		g, pl := gangOfPod(p), p.Annotations["gpusim.io/placement"]
		if prev, ok := place[g]; ok && prev != pl {
			t.Errorf("gang %s: two placements %q and %q", g, prev, pl)
		}
		place[g] = pl
		if !strings.Contains(pl, p.Spec.NodeName+":") {
			t.Errorf("pod %s on %s, not in its gang's placement %q", p.Name, p.Spec.NodeName, pl)
		}
		if p.Status.StartTime == nil || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Terminated == nil {
			t.Errorf("pod %s: no start/finish times", p.Name)
			continue
		}
		u := use{p.Name, p.Status.StartTime.Time, p.Status.ContainerStatuses[0].State.Terminated.FinishedAt.Time}
		for _, gpu := range strings.Split(p.Annotations["gpusim.io/gpus"], ",") {
			if gpu != "" {
				k := p.Spec.NodeName + "/" + gpu
				uses[k] = append(uses[k], u)
			}
		}
	}
	for k, us := range uses {
		for i := range us {
			for j := i + 1; j < len(us); j++ {
				a, b := us[i], us[j]
				if a.start.Before(b.end) && b.start.Before(a.end) {
					t.Errorf("GPU %s served %s [%v, %v] and %s [%v, %v] at once", k, a.pod, a.start, a.end, b.pod, b.start, b.end)
				}
			}
		}
	}
}

// bindProxy is a TLS reverse proxy in front of the API server (it forwards
// as c's admin) that sees every request path: hook runs after each
// pods/binding response came back from the API server and before it is
// passed on, so a test can kill the scheduler between two binds of a gang.
type bindProxy struct {
	srv  *httptest.Server
	mu   sync.Mutex
	hook func(pod string) // the bound pod's name
	// hold names pods whose binding request is never forwarded: it waits
	// until the client goes (the scheduler was killed) and then fails, so a
	// test can pin down which pods of a gang whose binds are in flight
	// together get bound.
	hold func(pod string) bool
	// blockLeases makes every Lease request fail with 503, as a partition
	// between the scheduler and the API server's coordination API would,
	// while other requests (binds) still pass.
	blockLeases   bool
	firstBindSent time.Time // request start of the first pods/binding
	lastBindDone  time.Time // response of the last successful pods/binding
	binds         int
}

func startBindProxy(t testing.TB, c *kubetest.Cluster) *bindProxy {
	t.Helper()
	target, err := url.Parse(c.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := rest.TransportFor(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	bp := &bindProxy{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			if r.In.Method == http.MethodPost && strings.HasSuffix(r.In.URL.Path, "/binding") {
				bp.mu.Lock()
				if bp.firstBindSent.IsZero() {
					bp.firstBindSent = time.Now()
				}
				bp.mu.Unlock()
			}
		},
		Transport:     rt,
		FlushInterval: -1, // watches stream
		ModifyResponse: func(resp *http.Response) error {
			r := resp.Request
			if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/binding") && resp.StatusCode < 300 {
				parts := strings.Split(r.URL.Path, "/")
				bp.mu.Lock()
				h := bp.hook
				bp.lastBindDone = time.Now()
				bp.binds++
				bp.mu.Unlock()
				if h != nil && len(parts) >= 2 {
					h(parts[len(parts)-2])
				}
			}
			return nil
		},
		ErrorLog: log.New(io.Discard, "", 0),
	}
	bp.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bp.mu.Lock()
		block := bp.blockLeases
		bp.mu.Unlock()
		if block && strings.Contains(r.URL.Path, "/leases") {
			http.Error(w, "partitioned", http.StatusServiceUnavailable)
			return
		}
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/binding") {
			parts := strings.Split(r.URL.Path, "/")
			bp.mu.Lock()
			hold := bp.hold
			bp.mu.Unlock()
			if hold != nil && len(parts) >= 2 && hold(parts[len(parts)-2]) {
				// Read the body so that the server notices the client
				// going (it cancels the request's context then).
				io.Copy(io.Discard, r.Body)
				select {
				case <-r.Context().Done():
				case <-time.After(30 * time.Second):
				}
				http.Error(w, "held", http.StatusServiceUnavailable)
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(bp.srv.Close)
	return bp
}

// kubeconfig is a kubeconfig for the proxy (no credentials: the proxy
// authenticates upstream).
func (bp *bindProxy) kubeconfig(t testing.TB) string {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: bp.srv.Certificate().Raw})
	cfg := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"proxy": {Server: bp.srv.URL, CertificateAuthorityData: ca}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"u": {}},
		Contexts:       map[string]*clientcmdapi.Context{"proxy": {Cluster: "proxy", AuthInfo: "u"}},
		CurrentContext: "proxy",
	}
	path := filepath.Join(t.TempDir(), "kubeconfig-proxy")
	if err := clientcmd.WriteToFile(cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func (bp *bindProxy) setHook(h func(pod string)) {
	bp.mu.Lock()
	defer bp.mu.Unlock()
	bp.hook = h
}

func (bp *bindProxy) setHold(h func(pod string) bool) {
	bp.mu.Lock()
	defer bp.mu.Unlock()
	bp.hold = h
}

// bindTimes returns the request start of the first bind, the response of
// the last successful one, and the count of successful binds.
func (bp *bindProxy) bindTimes() (first, last time.Time, n int) {
	bp.mu.Lock()
	defer bp.mu.Unlock()
	return bp.firstBindSent, bp.lastBindDone, bp.binds
}

func (bp *bindProxy) partitionLeases() {
	bp.mu.Lock()
	defer bp.mu.Unlock()
	bp.blockLeases = true
}
