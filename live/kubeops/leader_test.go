package kubeops

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// fastLE is a valid election config with short durations. Lease durations
// are stored in whole seconds, so LeaseDuration must be >= 1s.
func fastLE(id string) LeaderElection {
	return LeaderElection{
		Enabled: true, Namespace: "gpusim-system", LeaseName: "gpusim-scheduler", Identity: id,
		LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond,
	}
}

// replica is one elector on a clientset that shares the object tracker of
// the others; partitioned makes every Lease request fail, as a network
// partition between this replica and the API server would.
type replica struct {
	client      *fake.Clientset
	partitioned atomic.Bool
	metrics     *Metrics
	health      *Health
	mu          sync.Mutex
	started     time.Time // fn started
	lastWork    time.Time // last "bind" fn made
	returned    time.Time // fn returned
	result      error
	done        chan struct{}
}

func newReplicas(n int) []*replica {
	base := fake.NewClientset()
	out := make([]*replica, n)
	for i := range out {
		r := &replica{client: &fake.Clientset{}, metrics: NewMetrics(), health: NewHealth(), done: make(chan struct{})}
		r.client.AddReactor("*", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
			if r.partitioned.Load() {
				return true, nil, errors.New("partitioned")
			}
			return false, nil, nil
		})
		r.client.AddReactor("*", "*", k8stesting.ObjectReaction(base.Tracker()))
		out[i] = r
	}
	return out
}

// start runs RunElected for r. fn "binds" every 5ms (records lastWork)
// until its context ends, checking the context before each bind as the
// scheduler core must.
func (r *replica) start(ctx context.Context, t *testing.T, le LeaderElection) {
	go func() {
		defer close(r.done)
		err := RunElected(ctx, r.client, le, Elected{Metrics: r.metrics, Health: r.health}, func(ctx context.Context) error {
			r.mu.Lock()
			r.started = time.Now()
			r.mu.Unlock()
			for {
				select {
				case <-ctx.Done():
					r.mu.Lock()
					r.returned = time.Now()
					r.mu.Unlock()
					return ctx.Err()
				case <-time.After(5 * time.Millisecond):
				}
				if ctx.Err() != nil {
					continue
				}
				r.mu.Lock()
				r.lastWork = time.Now()
				r.mu.Unlock()
			}
		})
		r.mu.Lock()
		r.result = err
		r.mu.Unlock()
	}()
}

func (r *replica) snapshot() (started, lastWork, returned time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started, r.lastWork, r.returned
}

func waitUntil(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func leaderGauge(m *Metrics) float64 {
	var v float64
	fams, _ := m.Registry().Gather()
	for _, f := range fams {
		if f.GetName() == "gpusim_leader" {
			v = f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return v
}

func holder(t *testing.T, r *replica) string {
	t.Helper()
	l, err := r.client.CoordinationV1().Leases("gpusim-system").Get(context.Background(), "gpusim-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// TestRunElectedDisabled: without leader election fn runs at once and
// gpusim_leader is 1 while it runs.
func TestRunElectedDisabled(t *testing.T) {
	m := NewMetrics()
	var during float64
	err := RunElected(context.Background(), nil, LeaderElection{}, Elected{Metrics: m}, func(context.Context) error {
		during = leaderGauge(m)
		return errors.New("boom")
	})
	if err == nil || err.Error() != "boom" {
		t.Errorf("err = %v, want fn's error", err)
	}
	if during != 1 || leaderGauge(m) != 0 {
		t.Errorf("gpusim_leader during/after = %v/%v, want 1/0", during, leaderGauge(m))
	}
}

// TestRunElectedHandover: A leads, B waits as a ready standby; A shutting
// down releases the Lease only after its fn returned, and B takes over at
// its next retry, well before the 2s lease would have expired.
func TestRunElectedHandover(t *testing.T) {
	rs := newReplicas(2)
	a, b := rs[0], rs[1]
	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	ctxB, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	a.start(ctxA, t, fastLE("a"))
	waitUntil(t, "a to lead", 5*time.Second, func() bool { s, _, _ := a.snapshot(); return !s.IsZero() })
	b.start(ctxB, t, fastLE("b"))
	time.Sleep(500 * time.Millisecond) // b campaigns at least twice
	if s, _, _ := b.snapshot(); !s.IsZero() {
		t.Fatal("b started while a holds the lease")
	}
	if holder(t, a) != "a" || leaderGauge(a.metrics) != 1 || leaderGauge(b.metrics) != 0 {
		t.Fatalf("holder %q, gauges a=%v b=%v", holder(t, a), leaderGauge(a.metrics), leaderGauge(b.metrics))
	}
	if !b.health.Ready() || a.health.Ready() {
		t.Errorf("ready: a=%v (not synced yet) b=%v (standby)", a.health.Ready(), b.health.Ready())
	}

	cancelA()
	<-a.done
	_, lastA, retA := a.snapshot()
	if a.result != nil && !errors.Is(a.result, context.Canceled) {
		t.Errorf("a: %v, want nil or context.Canceled after shutdown", a.result)
	}
	waitUntil(t, "b to take over", 5*time.Second, func() bool { s, _, _ := b.snapshot(); return !s.IsZero() })
	startB, _, _ := b.snapshot()
	if !startB.After(retA) || !startB.After(lastA) {
		t.Errorf("b started %v, a returned %v, a's last bind %v: overlap", startB, retA, lastA)
	}
	// Released lease: b needs one retry period (200ms, jittered), not
	// the 2s lease duration.
	if d := startB.Sub(retA); d > 1500*time.Millisecond {
		t.Errorf("takeover took %v after release, want < 1.5s (release not used?)", d)
	}
	if holder(t, b) != "b" || leaderGauge(a.metrics) != 0 || leaderGauge(b.metrics) != 1 {
		t.Errorf("after handover: holder %q, gauges a=%v b=%v", holder(t, b), leaderGauge(a.metrics), leaderGauge(b.metrics))
	}
}

// TestRunElectedLeaseLost: a partitioned leader stops its fn once renewal
// fails for RenewDeadline, returns ErrLeaseLost, and its last bind comes
// before the standby's first: the standby waits out the full lease.
func TestRunElectedLeaseLost(t *testing.T) {
	rs := newReplicas(2)
	a, b := rs[0], rs[1]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a.start(ctx, t, fastLE("a"))
	waitUntil(t, "a to lead", 5*time.Second, func() bool { s, _, _ := a.snapshot(); return !s.IsZero() })
	b.start(ctx, t, fastLE("b"))
	time.Sleep(300 * time.Millisecond)
	cut := time.Now()
	a.partitioned.Store(true)

	<-a.done
	_, lastA, retA := a.snapshot()
	if !errors.Is(a.result, ErrLeaseLost) || !strings.Contains(a.result.Error(), "identity a") {
		t.Errorf("a: %v, want ErrLeaseLost naming identity a", a.result)
	}
	// a gives up between RenewDeadline (1s) and RetryPeriod+RenewDeadline
	// (1.2s, +jitter and scheduling slack) after its last renewal, which
	// was at most one RetryPeriod before the cut.
	if d := retA.Sub(cut); d < 700*time.Millisecond || d > 2*time.Second {
		t.Errorf("a stopped %v after the partition, want ~1-1.2s", d)
	}
	if leaderGauge(a.metrics) != 0 {
		t.Error("a's gpusim_leader still 1 after losing the lease")
	}
	waitUntil(t, "b to take over", 6*time.Second, func() bool { s, _, _ := b.snapshot(); return !s.IsZero() })
	startB, _, _ := b.snapshot()
	if !startB.After(lastA) || !startB.After(retA) {
		t.Errorf("b started %v before a stopped binding (last bind %v, returned %v)", startB, lastA, retA)
	}
	// b must wait the lease duration (2s) after it last saw a renew.
	if d := startB.Sub(cut); d < 1500*time.Millisecond {
		t.Errorf("b took over %v after the partition, want >= lease duration", d)
	}
	cancel()
	<-b.done
}

// TestRunElectedCancelBeforeLeading: a standby whose context ends returns
// context.Canceled without running fn.
func TestRunElectedCancelBeforeLeading(t *testing.T) {
	rs := newReplicas(2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rs[0].start(ctx, t, fastLE("a"))
	waitUntil(t, "a to lead", 5*time.Second, func() bool { s, _, _ := rs[0].snapshot(); return !s.IsZero() })
	bctx, bcancel := context.WithCancel(context.Background())
	ran := false
	errc := make(chan error, 1)
	go func() {
		errc <- RunElected(bctx, rs[1].client, fastLE("b"), Elected{}, func(context.Context) error { ran = true; return nil })
	}()
	time.Sleep(300 * time.Millisecond)
	bcancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) || ran {
			t.Errorf("standby cancelled: err=%v ran=%v, want context.Canceled/false", err, ran)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("standby did not return after cancel")
	}
}

// TestLeaderElectionValidate: flag-named errors.
func TestLeaderElectionValidate(t *testing.T) {
	ok := DefaultLeaderElection()
	ok.Enabled = true
	if err := ok.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	cases := []struct {
		mut  func(*LeaderElection)
		want string
	}{
		{func(c *LeaderElection) { c.Namespace = "" }, "--leader-elect-namespace: empty"},
		{func(c *LeaderElection) { c.LeaseName = "" }, "--leader-elect-lease-name: empty"},
		{func(c *LeaderElection) { c.RetryPeriod = 0 }, "--leader-elect-retry-period: 0s is not positive"},
		{func(c *LeaderElection) { c.RenewDeadline = 2 * time.Second }, "--leader-elect-renew-deadline: 2s must exceed 1.2 × --leader-elect-retry-period (2s)"},
		{func(c *LeaderElection) { c.LeaseDuration = 12 * time.Second }, "--leader-elect-lease-duration: 12s must exceed --leader-elect-renew-deadline + --leader-elect-retry-period (12s)"},
	}
	for _, c := range cases {
		cfg := ok
		c.mut(&cfg)
		if err := cfg.Validate(); err == nil || err.Error() != c.want {
			t.Errorf("got %v, want %q", err, c.want)
		}
		cfg.Enabled = false
		if err := cfg.Validate(); err != nil {
			t.Errorf("disabled config validated: %v", err)
		}
	}
	if err := RunElected(context.Background(), nil, ok, Elected{}, func(context.Context) error { return nil }); err == nil {
		t.Error("RunElected without a client: no error")
	}
}
