package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"runtime"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpusim/gpusim/live/kube"
	"github.com/gpusim/gpusim/reports"
	"github.com/gpusim/gpusim/sim"
)

// KubeFlags are the flags of `gpusim live --backend kubernetes`.
type KubeFlags struct {
	Kubeconfig    string
	SchedulerName string
	Namespace     string
	DryRun        bool
	Shadow        bool
	ClassLabels   []string
	RackLabel     string
	BlockLabel    string
	ZoneLabel     string
	GangTimeout   time.Duration
	RunFor        time.Duration
	DefaultDurS   float64
	Ops           KubeOpsFlags // leader election, metrics (live_kubeops.go)
}

func addKubeFlags(f *pflag.FlagSet, k *KubeFlags) {
	f.StringVar(&k.Kubeconfig, "kubeconfig", "", "kubernetes: kubeconfig file (default: in-cluster config, then $KUBECONFIG, then ~/.kube/config)")
	f.StringVar(&k.SchedulerName, "scheduler-name", kube.DefaultSchedulerName, "kubernetes: schedule the pods whose spec.schedulerName is this")
	f.StringVar(&k.Namespace, "namespace", "", "kubernetes: only this namespace (default: all)")
	f.BoolVar(&k.DryRun, "dry-run", false, "kubernetes: decide and record, never bind or evict")
	f.BoolVar(&k.Shadow, "shadow", false, "kubernetes: watch every scheduler's pods and record what gpusim would have done; never act")
	f.StringSliceVar(&k.ClassLabels, "class-labels", nil, "kubernetes: node label keys that split nodes into eligibility classes (for nodeSelector/affinity on them)")
	f.StringVar(&k.RackLabel, "rack-label", kube.DefaultRackLabel, "kubernetes: node label of the rack (leaf) level")
	f.StringVar(&k.BlockLabel, "block-label", kube.DefaultBlockLabel, "kubernetes: node label of the block (spine) level")
	f.StringVar(&k.ZoneLabel, "zone-label", kube.DefaultZoneLabel, "kubernetes: node label used as the spine level when a node has no block label")
	f.DurationVar(&k.GangTimeout, "gang-timeout", time.Minute, "kubernetes: skip (with an Event) a gang still incomplete after this long")
	f.DurationVar(&k.RunFor, "run-for", 0, "kubernetes: stop after this long and write the outputs (0: until interrupted)")
	addKubeOpsFlags(f, &k.Ops)
	f.Float64Var(&k.DefaultDurS, "default-duration", 3600, "kubernetes: model duration (simulated seconds) of pods without a gpusim.io/duration annotation")
}

// kubeClients builds the clients: --kubeconfig, else in-cluster, else the
// default loading rules ($KUBECONFIG, ~/.kube/config). Credentials are never
// printed.
func kubeClients(path string) (*rest.Config, error) {
	if path != "" {
		return clientcmd.BuildConfigFromFlags("", path)
	}
	if c, err := rest.InClusterConfig(); err == nil {
		return c, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
}

// runLiveKube is `gpusim live --backend kubernetes`: the scenario gives the
// policy and engine settings; the jobs are the cluster's pods.
func runLiveKube(ctx context.Context, io *IO, o *LiveOptions) error {
	k := &o.Kube
	if err := k.Ops.validate(); err != nil {
		return err
	}
	if !(o.Scale > 0) {
		return UsageErrorf("live: --scale must be > 0, got %v", o.Scale)
	}
	if k.DryRun && k.Shadow {
		return UsageErrorf("live: --dry-run and --shadow exclude each other")
	}
	if k.GangTimeout <= 0 || k.RunFor < 0 || !(k.DefaultDurS > 0) {
		return UsageErrorf("live: --gang-timeout and --default-duration must be > 0, --run-for >= 0")
	}
	sc, pi, err := o.scenarioPolicy()
	if err != nil {
		return err
	}
	label := sc.Policies[pi].DisplayName()
	pol, err := sc.Policy(pi)
	if err != nil {
		return UsageError(err)
	}
	if err := kube.CheckPolicy(pol.Name()); err != nil {
		return UsageError(fmt.Errorf("live: %w", err))
	}
	rc, err := kubeClients(k.Kubeconfig)
	if err != nil {
		return UsageError(fmt.Errorf("live: kubeconfig: %w", err))
	}
	if rc.QPS == 0 && rc.Burst == 0 {
		// kube-scheduler's client defaults (KubeSchedulerConfiguration
		// clientConnection: qps 50, burst 100; pkg/scheduler/apis/config/v1
		// defaults.go) rather than client-go's 5 and 10, which throttle a
		// gang's concurrent binds.
		rc.QPS, rc.Burst = 50, 100
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return RuntimeError(fmt.Errorf("live: kubernetes client: %w", err))
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return RuntimeError(fmt.Errorf("live: dynamic client: %w", err))
	}
	host := rc.Host
	if u, err := url.Parse(rc.Host); err == nil && u.Host != "" {
		host = u.Host // never userinfo or query
	}
	out := o.OutDir
	if out == "" {
		out = filepath.Join("out", sc.Name+"-live")
	}
	dir := filepath.Join(out, "live", fileSafeLabel(label))
	cfg := sc.Config()
	cfg.Policy = pol
	var result *sim.Result
	opt := kube.Options{Client: client, Dynamic: dyn, SchedulerName: k.SchedulerName, Namespace: k.Namespace,
		DryRun: k.DryRun, Shadow: k.Shadow, Config: cfg, PolicyLabel: label, Scale: o.Scale, Grace: o.Grace, Poll: o.Poll,
		MaxJobs: o.MaxQueued, RackLabel: k.RackLabel, BlockLabel: k.BlockLabel, ZoneLabel: k.ZoneLabel, ClassLabels: k.ClassLabels,
		GangTimeout: k.GangTimeout, DefaultDuration: sim.Seconds(k.DefaultDurS), OutDir: dir, Host: host,
		Version: VersionString(), Scenario: sc.Name, ScenarioSHA256: sc.SHA256(), Seed: sc.SeedValue(),
		Done: func(res *sim.Result) { result = res }}
	if !o.Quiet {
		opt.Log = io.Err
	}
	if k.RunFor > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, k.RunFor)
		defer cancel()
	}
	if err := runKubeOps(ctx, io, client, &k.Ops, opt); err != nil {
		var ee *ExitError
		if errors.As(err, &ee) {
			return err
		}
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return InterruptedError(err)
		}
		return RuntimeError(err)
	}
	if result != nil && !o.NoSim && !k.Shadow && !k.DryRun {
		// The simulated twin: the same jobs (submit times as observed) on
		// the same cluster model.
		pol, err := sc.Policy(pi)
		if err != nil {
			return UsageError(err)
		}
		scfg := cfg
		scfg.Policy = pol
		scfg.Cluster = result.Cluster.Clone()
		scfg.Cluster.Reset()
		scfg.Jobs = make([]sim.JobSpec, len(result.Jobs))
		for i := range result.Jobs {
			scfg.Jobs[i] = result.Jobs[i].Spec
		}
		e, err := sim.NewEngine(scfg)
		if err != nil {
			return UsageError(fmt.Errorf("policy %s: %w", label, err))
		}
		t0 := time.Now()
		sres, err := e.Run(context.Background())
		if err != nil {
			return classifyRunError(fmt.Errorf("simulation: policy %s: %w", label, err))
		}
		sres.Policy = label
		prov := reports.Provenance{Version: VersionString(), GoVersion: runtime.Version(), Seed: sc.SeedValue(), Scenario: sc.Name, ScenarioSHA256: sc.SHA256()}
		sdir := filepath.Join(out, "sim", fileSafeLabel(label))
		if err := reports.WriteRunDir(sdir, sres, reports.SummarizeWith(sres, prov, time.Since(t0), sc.Prices())); err != nil {
			return RuntimeError(err)
		}
	}
	fmt.Fprintf(io.Out, "kubernetes live run of %s; results in %s\n", label, dir)
	return nil
}
