package kubetest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StartRetry is Start in subdirectory 0 of opt.Dir, and once more in
// subdirectory 1 if that fails (a free loopback port can be taken by
// another process between picking it and binding it).
func StartRetry(ctx context.Context, opt Options) (*Cluster, error) {
	parent := opt.Dir
	var err error
	for try := 0; try < 2; try++ {
		opt.Dir = filepath.Join(parent, strconv.Itoa(try))
		if err = os.MkdirAll(opt.Dir, 0o755); err != nil {
			return nil, err
		}
		var c *Cluster
		if c, err = Start(ctx, opt); err == nil {
			return c, nil
		}
	}
	return nil, err
}

// Shared is one control plane for all end-to-end tests of a test binary,
// started on first use (starting one costs seconds); tests share it and work
// in their own namespaces. Call Stop from TestMain after m.Run.
type Shared struct {
	// Prefix names the temporary directory (os.MkdirTemp pattern).
	Prefix string
	// Setup, if set, runs once after the control plane is up (CRDs, nodes).
	Setup func(ctx context.Context, c *Cluster) error

	once sync.Once
	c    *Cluster
	err  error
	dir  string
}

// Get returns the shared control plane, starting it on the first call; it
// skips t (fails it with GPUSIM_E2E_REQUIRE=1) when the binaries are not
// built, and fails t when the control plane or Setup failed.
func (s *Shared) Get(t testing.TB) *Cluster {
	t.Helper()
	bin := BinDirOrSkip(t)
	s.once.Do(func() {
		if s.dir, s.err = os.MkdirTemp("", s.Prefix); s.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		start := time.Now()
		if s.c, s.err = StartRetry(ctx, Options{BinDir: bin, Dir: s.dir}); s.err != nil {
			return
		}
		t.Logf("etcd + kube-apiserver ready in %v", time.Since(start).Round(time.Millisecond))
		if s.Setup != nil {
			s.err = s.Setup(ctx, s.c)
		}
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.c
}

// Stop stops the shared control plane (if it was started) and removes its
// directory.
func (s *Shared) Stop() {
	if s.c != nil {
		s.c.Stop()
	}
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

// CreateReadyGPUNode is CreateGPUNode plus what the node lifecycle controller
// (not running here) would do once the node is Ready: it removes the
// node.kubernetes.io/not-ready taint the API server's TaintNodesByCondition
// admission gives every new node, so pods can be scheduled onto it.
func (c *Cluster) CreateReadyGPUNode(ctx context.Context, name string, gpus int, labels map[string]string) (*corev1.Node, error) {
	n, err := c.CreateGPUNode(ctx, name, gpus, labels)
	if err != nil || len(n.Spec.Taints) == 0 {
		return n, err
	}
	n.Spec.Taints = nil
	if n, err = c.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		return nil, fmt.Errorf("kubetest: untaint node %s: %w", name, err)
	}
	return n, nil
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers and readers (a
// scheduler's log read by a test while the scheduler writes it).
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
