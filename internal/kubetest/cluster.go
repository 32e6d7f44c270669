package kubetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Options configure Start. The zero value is not usable: BinDir is required.
type Options struct {
	// BinDir holds the etcd and kube-apiserver binaries (see BinDir).
	BinDir string
	// Dir is the working directory (data, certificates, logs); it must exist
	// and the caller removes it (t.TempDir() in tests).
	Dir string
	// StartTimeout bounds each wait for a process to become healthy
	// (default 60s: a cold kube-apiserver on a loaded 2-core machine takes
	// 5-20s).
	StartTimeout time.Duration
}

// Cluster is a running etcd + kube-apiserver pair. Its methods are not safe
// for concurrent use with each other; its clients are.
type Cluster struct {
	// Config reaches the API server as user gpusim-e2e in group system:masters.
	Config *rest.Config
	// Client and Dynamic are built from Config.
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	// Dir is Options.Dir; etcd.log and kube-apiserver.log are written there.
	Dir string

	opt     Options
	etcd    *proc
	api     *proc
	apiArgs []string
	apiPort int
}

// proc is a child process and the channel its exit status arrives on.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // valid after done is closed
}

// Start runs etcd and kube-apiserver on free loopback ports and waits until
// the API server's /readyz answers ok. On error everything started is
// stopped. Call Stop when done.
func Start(ctx context.Context, opt Options) (_ *Cluster, err error) {
	if opt.BinDir == "" || opt.Dir == "" {
		return nil, errors.New("kubetest: Start needs Options.BinDir and Options.Dir")
	}
	if opt.StartTimeout <= 0 {
		opt.StartTimeout = 60 * time.Second
	}
	c := &Cluster{Dir: opt.Dir, opt: opt}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	pki, err := writePKI(opt.Dir)
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	// Flags as in etcd's own single-member quick start; --unsafe-no-fsync
	// because the data dir is throw-away.
	c.etcd, err = startProc(opt, "etcd",
		"--name=e2e", "--data-dir="+filepath.Join(opt.Dir, "etcd-data"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=e2e="+peerURL, "--unsafe-no-fsync", "--log-level=warn")
	if err != nil {
		return nil, err
	}
	if err := waitFor(ctx, opt.StartTimeout, c.etcd, func() bool {
		resp, err := http.Get(etcdURL + "/health")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK && bytes.Contains(b, []byte(`"health":"true"`))
	}); err != nil {
		return nil, err
	}
	c.apiPort = ports[2]
	// Modelled on controller-runtime's envtest control plane: loopback
	// only, client-certificate authentication, RBAC. The ServiceAccount
	// admission plugin is off because no controller manager creates the
	// "default" service account it would require of every pod.
	c.apiArgs = []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(c.apiPort),
		"--cert-dir=" + filepath.Join(opt.Dir, "certs"),
		"--tls-cert-file=" + pki.ServerCert, "--tls-private-key-file=" + pki.ServerKey,
		"--client-ca-file=" + pki.CACert,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + pki.SAPub,
		"--service-account-signing-key-file=" + pki.SAKey,
		"--service-cluster-ip-range=10.96.0.0/24",
		"--authorization-mode=RBAC",
		"--disable-admission-plugins=ServiceAccount",
		"--allow-privileged=true",
		"--profiling=false",
	}
	c.Config = &rest.Config{
		Host: fmt.Sprintf("https://127.0.0.1:%d", c.apiPort),
		TLSClientConfig: rest.TLSClientConfig{
			CAData: pki.caPEM, CertData: pki.adminCertPEM, KeyData: pki.adminKeyPEM,
		},
		QPS: 1000, Burst: 2000,
		Timeout: 30 * time.Second,
	}
	if c.Client, err = kubernetes.NewForConfig(c.Config); err != nil {
		return nil, fmt.Errorf("kubetest: client: %w", err)
	}
	if c.Dynamic, err = dynamic.NewForConfig(c.Config); err != nil {
		return nil, fmt.Errorf("kubetest: dynamic client: %w", err)
	}
	if err := c.startAPIServer(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// startAPIServer starts kube-apiserver with c.apiArgs and waits for /readyz.
func (c *Cluster) startAPIServer(ctx context.Context) error {
	var err error
	c.api, err = startProc(c.opt, "kube-apiserver", c.apiArgs...)
	if err != nil {
		return err
	}
	return waitFor(ctx, c.opt.StartTimeout, c.api, func() bool {
		b, err := c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(b) == "ok"
	})
}

// apiGrace is how long Stop and RestartAPIServer wait after SIGTERM before
// SIGKILL. kube-apiserver stops listening at once but, with a watch open,
// was seen still running 20s later; tests need not wait for that drain.
const apiGrace = 3 * time.Second

// RestartAPIServer stops kube-apiserver (SIGTERM, then SIGKILL after
// apiGrace) and starts it again on the same port with the same flags and
// etcd, so the stored state survives. Existing clients reconnect on their next request;
// watches end and must be re-established (informers do so themselves).
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	if c.api != nil {
		c.api.stop(apiGrace)
	}
	return c.startAPIServer(ctx)
}

// Stop stops kube-apiserver, then etcd. It is safe to call more than once.
func (c *Cluster) Stop() {
	if c.api != nil {
		c.api.stop(apiGrace)
	}
	if c.etcd != nil {
		c.etcd.stop(10 * time.Second)
	}
}

// CreateNamespace creates namespace name (AlreadyExists is not an error).
func (c *Cluster) CreateNamespace(ctx context.Context, name string) error {
	_, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kubetest: namespace %s: %w", name, err)
	}
	return nil
}

// startProc starts binary name from opt.BinDir with its output in
// Dir/<name>.log.
func startProc(opt Options, name string, args ...string) (*proc, error) {
	logPath := filepath.Join(opt.Dir, name+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("kubetest: %w", err)
	}
	cmd := exec.Command(filepath.Join(opt.BinDir, name), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = opt.Dir
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("kubetest: start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

// stop sends SIGTERM and waits up to grace before SIGKILL.
func (p *proc) stop(grace time.Duration) { StopProcess(p.cmd, p.done, grace) }

// StopProcess stops a started command whose waiter closes done when it has
// exited: SIGTERM, then SIGKILL after grace; it returns once done is closed
// (at once if it already is).
func StopProcess(cmd *exec.Cmd, done <-chan struct{}, grace time.Duration) {
	select {
	case <-done:
		return
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-done
	}
}

// waitFor polls ready every 100ms until it is true, the process exits, ctx
// ends or timeout passes; errors quote the tail of the process log.
func waitFor(ctx context.Context, timeout time.Duration, p *proc, ready func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if ready() {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("kubetest: %s exited before it was ready (%v); %s ends:\n%s", p.name, p.err, p.log, logTail(p.log))
		case <-ctx.Done():
			return fmt.Errorf("kubetest: waiting for %s: %w", p.name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kubetest: %s not ready after %v; %s ends:\n%s", p.name, timeout, p.log, logTail(p.log))
		}
	}
}

// logTail returns the last 2 KiB of the file at path.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 2048 {
		b = b[len(b)-2048:]
	}
	return strings.TrimSpace(string(b))
}

var portMu sync.Mutex

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	portMu.Lock()
	defer portMu.Unlock()
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("kubetest: free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
