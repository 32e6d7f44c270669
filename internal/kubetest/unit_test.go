package kubetest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Go cache lookup and the build script must agree on the cache entry.
func TestCacheKeyMatchesScript(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	gover, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		t.Fatalf("go env GOVERSION: %v", err)
	}
	cache := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "ensure-e2e-deps.sh"), "--print-dir")
	cmd.Env = append(os.Environ(), EnvCache+"="+cache)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ensure-e2e-deps.sh --print-dir: %v", err)
	}
	key, err := CacheKey(root, strings.TrimSpace(string(gover)))
	if err != nil {
		t.Fatal(err)
	}
	if len(key) != 16 {
		t.Errorf("key %q: want 16 hex digits", key)
	}
	if got, want := strings.TrimSpace(string(out)), filepath.Join(cache, key, "bin"); got != want {
		t.Errorf("script dir %s, Go dir %s", got, want)
	}
	// A changed Go version is another entry.
	if other, _ := CacheKey(root, "go0.0"); other == key {
		t.Errorf("key ignores the Go version")
	}
}

func TestBinDirMissing(t *testing.T) {
	t.Setenv(EnvBin, t.TempDir())
	if _, err := BinDir(); err == nil || !strings.Contains(err.Error(), "etcd not built (run make e2e-deps)") {
		t.Fatalf("BinDir on an empty dir: %v", err)
	}
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"3600", time.Hour, false},
		{"1.5", 1500 * time.Millisecond, false},
		{" 0 ", 0, false},
		{"10m", 10 * time.Minute, false},
		{"1h30m", 90 * time.Minute, false},
		{"-1", 0, true},
		{"-5s", 0, true},
		{"soon", 0, true},
		{"", 0, true},
		{"2e9", 0, true},
	} {
		got, err := ParseDuration(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// The statuses the stand-in writes are those of a kubelet: Running with
// Ready, then Succeeded with exit code 0 and the start time kept.
func TestStatuses(t *testing.T) {
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "x"}, {Name: "b"}}}}
	start := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	var s corev1.PodStatus
	runningStatus(&s, p, start)
	if s.Phase != corev1.PodRunning || !s.StartTime.Equal(&start) || len(s.ContainerStatuses) != 2 || s.ContainerStatuses[1].State.Running == nil || !s.ContainerStatuses[0].Ready {
		t.Fatalf("running status: %+v", s)
	}
	if c := s.Conditions[3]; c.Type != corev1.PodReady || c.Status != corev1.ConditionTrue {
		t.Errorf("Ready condition %+v", c)
	}
	succeededStatus(&s, p)
	term := s.ContainerStatuses[0].State.Terminated
	if s.Phase != corev1.PodSucceeded || term == nil || term.ExitCode != 0 || !term.StartedAt.Equal(&start) || term.FinishedAt.Before(&start) {
		t.Fatalf("succeeded status: %+v", s)
	}
	if c := s.Conditions[3]; c.Status != corev1.ConditionFalse || c.Reason != "PodCompleted" {
		t.Errorf("Ready condition after completion %+v", c)
	}
}

// Start fails with a clear error, and leaves nothing running, when a binary
// is missing or exits at once.
func TestStartErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := Start(ctx, Options{}); err == nil || !strings.Contains(err.Error(), "needs Options.BinDir and Options.Dir") {
		t.Errorf("Start with no options: %v", err)
	}
	bin := t.TempDir()
	if _, err := Start(ctx, Options{BinDir: bin, Dir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "kubetest: start etcd") {
		t.Errorf("Start without etcd: %v", err)
	}
	// An "etcd" that prints and exits: the error quotes its log.
	if err := os.WriteFile(filepath.Join(bin, "etcd"), []byte("#!/bin/sh\necho bad flag >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Start(ctx, Options{BinDir: bin, Dir: t.TempDir(), StartTimeout: 10 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "etcd exited before it was ready (exit status 3)") || !strings.Contains(err.Error(), "bad flag") {
		t.Errorf("Start with a failing etcd: %v", err)
	}
}
