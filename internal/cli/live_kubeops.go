package cli

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"

	"github.com/gpusim/gpusim/live/kube"
	"github.com/gpusim/gpusim/live/kubeops"
)

// The scheduler core reports to kubeops.Metrics through its Observer.
var _ kube.Observer = (*kubeops.Metrics)(nil)

// KubeOpsFlags are the operations flags of `gpusim live --backend
// kubernetes`: leader election and the metrics/health endpoint
// (docs/kubernetes-ops.md).
type KubeOpsFlags struct {
	LeaderElection kubeops.LeaderElection
	MetricsAddr    string
}

func addKubeOpsFlags(f *pflag.FlagSet, k *KubeOpsFlags) {
	k.LeaderElection = kubeops.DefaultLeaderElection()
	k.LeaderElection.AddFlags(f)
	f.StringVar(&k.MetricsAddr, "metrics-addr", "", "kubernetes: serve /healthz, /readyz and Prometheus /metrics on this address, e.g. :8080 (default: off)")
}

// validate checks the operations flags (exit 2, naming the flag) before
// anything is loaded or contacted.
func (k *KubeOpsFlags) validate() error {
	if err := k.LeaderElection.Validate(); err != nil {
		return UsageError(fmt.Errorf("live: %w", err))
	}
	return nil
}

// runKubeOps runs kube.Run(ctx, opt) under the operations layer: with
// --metrics-addr the HTTP endpoint serves for the whole command (standby
// included) and the core reports to its metrics; with --leader-elect the
// core runs only while this replica holds the Lease. A lost lease is a
// runtime error (exit 1: the pod restarts and campaigns again, as
// kube-scheduler); a stop before leading returns ctx's error.
func runKubeOps(ctx context.Context, io *IO, client kubernetes.Interface, k *KubeOpsFlags, opt kube.Options) error {
	if err := k.validate(); err != nil {
		return err
	}
	var el kubeops.Elected
	if opt.Log != nil {
		el.Log = opt.Log
	}
	var wg sync.WaitGroup
	if k.MetricsAddr != "" {
		el.Metrics, el.Health = kubeops.NewMetrics(), kubeops.NewHealth()
		srv, err := kubeops.Listen(k.MetricsAddr, kubeops.Handler(el.Metrics, el.Health))
		if err != nil {
			return UsageError(fmt.Errorf("live: %w", err))
		}
		sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		defer func() { stop(); wg.Wait() }()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Serve(sctx); err != nil {
				fmt.Fprintf(io.Err, "gpusim: %v\n", err) // the scheduler goes on without it
			}
		}()
		if el.Log != nil {
			fmt.Fprintf(el.Log, "serving /healthz, /readyz and /metrics on %s\n", srv.Addr())
		}
		opt.Observer = el.Metrics
		ready := opt.Ready
		opt.Ready = func() {
			el.Health.SetReady(true)
			if ready != nil {
				ready()
			}
		}
	}
	err := kubeops.RunElected(ctx, client, k.LeaderElection, el, func(ctx context.Context) error {
		return kube.Run(ctx, opt)
	})
	if errors.Is(err, kubeops.ErrLeaseLost) {
		return RuntimeError(fmt.Errorf("live: %w", err))
	}
	return err
}
