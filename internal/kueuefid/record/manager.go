package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gpusim/gpusim/internal/kubetest"
)

// kueueNamespace is the manager's namespace (Kueue's default, kueue-system).
const kueueNamespace = "kueue-system"

// manager is a running Kueue manager (cmd/kueue) and its loopback ports.
type manager struct {
	cmd         *exec.Cmd
	done        chan struct{}
	log         string
	webhookPort int
	healthPort  int
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// writeKubeconfig writes a kubeconfig for the harness's admin user (group
// system:masters) from the PKI kubetest wrote into dir.
func writeKubeconfig(dir, host string) (string, error) {
	path := filepath.Join(dir, "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: e2e, cluster: {server: %q, certificate-authority: %q}}]
users: [{name: admin, user: {client-certificate: %q, client-key: %q}}]
contexts: [{name: e2e, context: {cluster: e2e, user: admin}}]
current-context: e2e
`, host, filepath.Join(dir, "ca.crt"), filepath.Join(dir, "admin.crt"), filepath.Join(dir, "admin.key"))
	return path, os.WriteFile(path, []byte(kc), 0o600)
}

// copyFile copies src to dst (mode 0600).
func copyFile(dst, src string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o600)
}

// managerConfig returns the manager's Configuration (config.kueue.x-k8s.io/
// v1beta2): the fixture's Configuration (fairSharing, waitForPodsReady, ...)
// with the harness's settings over it: no leader election, webhook and
// probes on loopback ports, the harness's serving certificate (internal
// certificate management off), a client rate limit far above what a fixture
// needs, and only the batch/job integration (no Job is created).
func managerConfig(fixtureCfg map[string]any, certDir string, webhookPort, healthPort, metricsPort int) map[string]any {
	cfg := map[string]any{}
	for k, v := range fixtureCfg {
		cfg[k] = v
	}
	cfg["apiVersion"] = "config.kueue.x-k8s.io/v1beta2"
	cfg["kind"] = "Configuration"
	cfg["namespace"] = kueueNamespace
	cfg["leaderElection"] = map[string]any{"leaderElect": false}
	cfg["webhook"] = map[string]any{"port": webhookPort, "host": "127.0.0.1", "certDir": certDir}
	cfg["health"] = map[string]any{"healthProbeBindAddress": "127.0.0.1:" + strconv.Itoa(healthPort)}
	cfg["metrics"] = map[string]any{"bindAddress": "127.0.0.1:" + strconv.Itoa(metricsPort)}
	cfg["internalCertManagement"] = map[string]any{"enable": false}
	cfg["clientConnection"] = map[string]any{"qps": 1000, "burst": 2000}
	cfg["integrations"] = map[string]any{"frameworks": []any{"batch/job"}}
	fg := map[string]any{"VisibilityOnDemand": false}
	if m, ok := fixtureCfg["featureGates"].(map[string]any); ok {
		for k, v := range m {
			fg[k] = v
		}
	}
	cfg["featureGates"] = fg
	return cfg
}

// startManager writes the manager's configuration and certificates into
// dir and starts bin. Kueue's cmd/kueue reads its metrics serving
// certificate from the fixed path /etc/kueue/metrics/certs when internal
// certificate management is off, so the manager runs in a private mount
// namespace (unshare -m) where an overlay adds that directory to /etc; the
// host's /etc is not changed. The webhook server uses the API server's
// serving certificate from kubetest's PKI (it names 127.0.0.1).
func startManager(ctx context.Context, bin, version, dir, host string, fixtureCfg map[string]any) (*manager, error) {
	kubeconfig, err := writeKubeconfig(dir, host)
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(dir, "webhook-certs")
	metricsDir := filepath.Join(dir, "etc-overlay", "kueue", "metrics", "certs")
	for _, d := range []string{certDir, metricsDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
		if err := copyFile(filepath.Join(d, "tls.crt"), filepath.Join(dir, "apiserver.crt")); err != nil {
			return nil, err
		}
		if err := copyFile(filepath.Join(d, "tls.key"), filepath.Join(dir, "apiserver.key")); err != nil {
			return nil, err
		}
	}
	var ports [4]int
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	cfg := managerConfig(fixtureCfg, certDir, ports[0], ports[1], ports[2])
	cb, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "kueue-config.yaml")
	if err := os.WriteFile(cfgPath, cb, 0o600); err != nil {
		return nil, err
	}
	m := &manager{log: filepath.Join(dir, "kueue-manager.log"), webhookPort: ports[0], healthPort: ports[1], done: make(chan struct{})}
	logf, err := os.Create(m.log)
	if err != nil {
		return nil, err
	}
	args := []string{"-c", `mount -t overlay overlay -o "lowerdir=$1:/etc" /etc && shift && exec "$@"`, "sh",
		filepath.Join(dir, "etc-overlay"), bin}
	m.cmd = exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "sh"},
		append(args, managerArgs(version, cfgPath, kubeconfig, ports[3])...)...)...)
	m.cmd.Stdout, m.cmd.Stderr = logf, logf
	m.cmd.Dir = dir
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := m.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start kueue manager: %w", err)
	}
	go func() { _ = m.cmd.Wait(); logf.Close(); close(m.done) }()
	// readyz waits for the webhook server (Kueue's setupProbeEndpoints).
	deadline := time.Now().Add(120 * time.Second)
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", m.healthPort))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return m, nil
			}
		}
		select {
		case <-m.done:
			return nil, fmt.Errorf("kueue manager exited before it was ready; see %s", m.log)
		case <-ctx.Done():
			m.stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			m.stop()
			return nil, fmt.Errorf("kueue manager not ready after 120s; see %s", m.log)
		}
	}
}

// managerArgs are cmd/kueue's flags. --visibility-server-port exists from
// v0.17.0 on (cmd/kueue/main.go); v0.16.2's manager rejects it, and starts
// no visibility server anyway with VisibilityOnDemand off (managerConfig).
func managerArgs(version, cfgPath, kubeconfig string, visibilityPort int) []string {
	args := []string{"--config=" + cfgPath, "--kubeconfig=" + kubeconfig}
	var major, minor int
	if _, err := fmt.Sscanf(version, "v%d.%d", &major, &minor); err != nil || major > 0 || minor >= 17 {
		args = append(args, "--visibility-server-port="+strconv.Itoa(visibilityPort))
	}
	// Level 6: the scheduler's snapshot of each cycle (kueuefid.Cycle).
	return append(args, "--zap-log-level=6")
}

// stop sends SIGTERM to the manager's process (sh exec'd into the manager,
// so the PID is the manager's) and SIGKILL after 5 s.
func (m *manager) stop() { kubetest.StopProcess(m.cmd, m.done, 5*time.Second) }

// webhookGVRs are the admission webhook configuration resources.
var webhookGVRs = map[string]schema.GroupVersionResource{
	"MutatingWebhookConfiguration":   {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"},
	"ValidatingWebhookConfiguration": {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"},
}

// registerWebhooks creates Kueue's webhook configurations from its
// config/components/webhook/manifests.yaml, keeping the webhooks for the
// kueue.x-k8s.io group (the job integrations' webhooks are dropped: no job
// object is created and the manager serves only batch/job's), each pointing
// at the manager's loopback port (url instead of Kueue's Service) and
// trusting the harness's CA.
func registerWebhooks(ctx context.Context, c *kubetest.Cluster, manifests string, port int, caPEM []byte) (int, error) {
	b, err := os.ReadFile(manifests)
	if err != nil {
		return 0, err
	}
	docs, err := kubetest.DecodeYAML(manifests, b)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range docs {
		gvr, ok := webhookGVRs[d.GetKind()]
		if !ok {
			continue
		}
		hooks, _, _ := unstructured.NestedSlice(d.Object, "webhooks")
		var keep []any
		for _, h := range hooks {
			hm := h.(map[string]any)
			if !hasKueueRule(hm) {
				continue
			}
			cc, _ := hm["clientConfig"].(map[string]any)
			svc, _ := cc["service"].(map[string]any)
			path, _ := svc["path"].(string)
			hm["clientConfig"] = map[string]any{
				"url":      fmt.Sprintf("https://127.0.0.1:%d%s", port, path),
				"caBundle": base64.StdEncoding.EncodeToString(caPEM),
			}
			keep = append(keep, hm)
		}
		if len(keep) == 0 {
			continue
		}
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": d.GetKind(),
			"metadata": map[string]any{"name": "kueue-" + d.GetName()}, "webhooks": keep}}
		if _, err := c.Dynamic.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return 0, fmt.Errorf("create %s: %w", d.GetKind(), err)
		}
		n += len(keep)
	}
	return n, nil
}

// hasKueueRule reports whether a webhook's rules name the kueue.x-k8s.io group.
func hasKueueRule(h map[string]any) bool {
	rules, _ := h["rules"].([]any)
	for _, r := range rules {
		rm, _ := r.(map[string]any)
		groups, _ := rm["apiGroups"].([]any)
		if slices.Contains(groups, any("kueue.x-k8s.io")) {
			return true
		}
	}
	return false
}
