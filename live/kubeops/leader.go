package kubeops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ErrLeaseLost is returned by RunElected when this replica stopped holding
// the lease (renewal failed for RenewDeadline) while the scheduling function
// ran. The function's context was cancelled at that moment. As
// kube-scheduler does (it exits with "leaderelection lost"), the caller
// should exit so that its pod is restarted and campaigns afresh.
var ErrLeaseLost = errors.New("kubeops: leader lease lost")

// LeaderElection configures leader election on a coordination.k8s.io/v1
// Lease. The field meanings and defaults are those of kube-scheduler's
// --leader-elect-* flags (k8s.io/component-base/config LeaderElectionConfiguration).
type LeaderElection struct {
	// Enabled turns leader election on; off, RunElected calls the
	// function at once.
	Enabled bool
	// Namespace and LeaseName name the Lease (created if missing).
	Namespace string
	LeaseName string
	// Identity is this replica's holder identity; empty means
	// "<hostname>_<random UUID>", as kube-scheduler.
	Identity string
	// LeaseDuration is how long a standby waits after the last observed
	// renewal before it takes the lease over.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps retrying a failed
	// renewal before it gives up leadership (and cancels the function).
	RenewDeadline time.Duration
	// RetryPeriod is the wait between attempts to acquire or renew.
	RetryPeriod time.Duration
}

// DefaultLeaderElection is off, Lease gpusim-system/gpusim-scheduler,
// 15s/10s/2s (kube-scheduler's defaults).
func DefaultLeaderElection() LeaderElection {
	return LeaderElection{
		Namespace:     "gpusim-system",
		LeaseName:     "gpusim-scheduler",
		LeaseDuration: 15 * time.Second,
		RenewDeadline: 10 * time.Second,
		RetryPeriod:   2 * time.Second,
	}
}

// AddFlags registers --leader-elect, --leader-elect-namespace,
// --leader-elect-lease-name, --leader-elect-identity,
// --leader-elect-lease-duration, --leader-elect-renew-deadline and
// --leader-elect-retry-period, with c's current values as defaults.
func (c *LeaderElection) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&c.Enabled, "leader-elect", c.Enabled, "kubernetes: run only while holding a coordination.k8s.io Lease (for several replicas)")
	fs.StringVar(&c.Namespace, "leader-elect-namespace", c.Namespace, "kubernetes: namespace of the leader Lease")
	fs.StringVar(&c.LeaseName, "leader-elect-lease-name", c.LeaseName, "kubernetes: name of the leader Lease")
	fs.StringVar(&c.Identity, "leader-elect-identity", c.Identity, "kubernetes: this replica's holder identity (default <hostname>_<uuid>)")
	fs.DurationVar(&c.LeaseDuration, "leader-elect-lease-duration", c.LeaseDuration, "kubernetes: how long standbys wait after the last renewal before taking over")
	fs.DurationVar(&c.RenewDeadline, "leader-elect-renew-deadline", c.RenewDeadline, "kubernetes: how long the leader retries renewing before it stops scheduling")
	fs.DurationVar(&c.RetryPeriod, "leader-elect-retry-period", c.RetryPeriod, "kubernetes: wait between acquire/renew attempts")
}

// Validate checks the configuration; errors name the flag. Besides
// client-go's own rules (LeaseDuration > RenewDeadline > 1.2 ×
// RetryPeriod, all positive) it requires LeaseDuration > RenewDeadline +
// RetryPeriod: a leader gives up at the latest RetryPeriod + RenewDeadline
// after its last successful renewal, and a standby takes over no earlier
// than LeaseDuration after it, so the old leader has stopped before a new
// one starts (clock rates assumed equal; see docs/kubernetes-ops.md).
func (c LeaderElection) Validate() error {
	if !c.Enabled {
		return nil
	}
	switch {
	case c.Namespace == "":
		return errors.New("--leader-elect-namespace: empty")
	case c.LeaseName == "":
		return errors.New("--leader-elect-lease-name: empty")
	case c.RetryPeriod <= 0:
		return fmt.Errorf("--leader-elect-retry-period: %v is not positive", c.RetryPeriod)
	case c.RenewDeadline <= time.Duration(leaderelection.JitterFactor*float64(c.RetryPeriod)):
		return fmt.Errorf("--leader-elect-renew-deadline: %v must exceed %.1f × --leader-elect-retry-period (%v)", c.RenewDeadline, leaderelection.JitterFactor, c.RetryPeriod)
	case c.LeaseDuration <= c.RenewDeadline+c.RetryPeriod:
		return fmt.Errorf("--leader-elect-lease-duration: %v must exceed --leader-elect-renew-deadline + --leader-elect-retry-period (%v)", c.LeaseDuration, c.RenewDeadline+c.RetryPeriod)
	}
	return nil
}

// identity is c.Identity or "<hostname>_<uuid>".
func (c LeaderElection) identity() string {
	if c.Identity != "" {
		return c.Identity
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "gpusim"
	}
	return host + "_" + string(uuid.NewUUID())
}

// Elected is what RunElected reports leadership changes to. Both fields
// may be nil.
type Elected struct {
	Metrics *Metrics  // gpusim_leader
	Health  *Health   // /readyz standby state and /healthz lease check
	Log     io.Writer // one line when campaigning, leading and stopping (nil = none)
}

func (e Elected) logf(format string, args ...any) {
	if e.Log != nil {
		fmt.Fprintf(e.Log, "leader election: "+format+"\n", args...)
	}
}

// RunElected runs fn under leader election c (or at once, with metrics
// gpusim_leader = 1, when c is not Enabled) and returns when fn has
// returned.
//
// Contract:
//   - fn starts only after this replica acquired the Lease and runs at most
//     once.
//   - fn's context is cancelled as soon as renewal fails for RenewDeadline
//     (the lease is lost) or ctx is cancelled. fn must stop scheduling when
//     its context is done (in particular: check it before every bind);
//     RunElected waits for fn to return before it returns.
//   - When fn returns (by itself or after ctx was cancelled) the Lease is
//     released (its holder cleared) only after that return, so a standby
//     takes over at once and the two never act together.
//   - Result: ErrLeaseLost (wrapped, with fn's own error if it returned one
//     other than a context error) when the lease was lost; otherwise fn's
//     error; ctx.Err() when ctx was cancelled before this replica led (fn
//     never ran).
func RunElected(ctx context.Context, client kubernetes.Interface, c LeaderElection, e Elected, fn func(context.Context) error) error {
	if !c.Enabled {
		if e.Metrics != nil {
			e.Metrics.SetLeader(true)
			defer e.Metrics.SetLeader(false)
		}
		return fn(ctx)
	}
	if err := c.Validate(); err != nil {
		return err
	}
	if client == nil {
		return errors.New("kubeops: leader election needs a Kubernetes client")
	}
	id := c.identity()
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: c.Namespace, Name: c.LeaseName},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	// leCtx drives the elector. It is not derived from ctx: cancelling it
	// releases the lease, which must happen only after fn has returned.
	leCtx, leCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer leCancel()

	var (
		mu       sync.Mutex
		started  bool // fn was called
		returned bool // RunElected is returning: fn must not start
		fnErr    error
		lost     bool // valid once fnDone is closed
		fnDone   = make(chan struct{})
	)
	// Cancelling ctx before fn started stops the campaign; once fn runs,
	// ctx reaches it through runCtx and leCtx is cancelled after it returns.
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !started {
			leCancel()
		}
	})
	defer stop()

	if e.Health != nil {
		e.Health.setStandby(true)
	}
	e.logf("campaigning for Lease %s/%s as %s", c.Namespace, c.LeaseName, id)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   c.LeaseDuration,
		RenewDeadline:   c.RenewDeadline,
		RetryPeriod:     c.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            c.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				// lctx is cancelled when renewal fails or leCtx ends.
				runCtx, cancel := context.WithCancel(lctx)
				defer cancel()
				stopRun := context.AfterFunc(ctx, cancel)
				defer stopRun()
				mu.Lock()
				if runCtx.Err() != nil || leCtx.Err() != nil || returned {
					mu.Unlock() // stopped before fn could start
					return
				}
				started = true
				mu.Unlock()
				if e.Health != nil {
					e.Health.setStandby(false)
				}
				if e.Metrics != nil {
					e.Metrics.SetLeader(true)
				}
				e.logf("leading as %s", id)
				fnErr = fn(runCtx)
				// Only this goroutine cancels leCtx once started is set,
				// so lctx done with leCtx live means renewal failed.
				lost = lctx.Err() != nil && leCtx.Err() == nil
				close(fnDone)
				leCancel() // release only now that fn has returned
			},
			OnStoppedLeading: func() {
				if e.Metrics != nil {
					e.Metrics.SetLeader(false)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("kubeops: leader election: %w", err)
	}
	if e.Health != nil {
		e.Health.setElector(le)
	}
	le.Run(leCtx)
	// Run returns when leCtx ended (ctx cancelled before leading, or fn
	// returned) or when renewal failed (fn's context is then cancelled).
	mu.Lock()
	ran := started
	returned = true
	mu.Unlock()
	if !ran {
		e.logf("stopped before leading (%s)", id)
		if ctx.Err() == nil && leCtx.Err() == nil {
			return fmt.Errorf("%w (identity %s, before the scheduler started)", ErrLeaseLost, id)
		}
		return ctx.Err()
	}
	<-fnDone
	if e.Health != nil {
		e.Health.SetReady(false)
	}
	if lost {
		e.logf("lost Lease %s/%s (%s): stopped scheduling", c.Namespace, c.LeaseName, id)
		if fnErr != nil && !errors.Is(fnErr, context.Canceled) {
			return fmt.Errorf("%w (identity %s; scheduler: %w)", ErrLeaseLost, id, fnErr)
		}
		return fmt.Errorf("%w (identity %s)", ErrLeaseLost, id)
	}
	return fnErr
}
