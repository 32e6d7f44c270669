package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpusim/gpusim/calibrate"
	"github.com/gpusim/gpusim/live"
	"github.com/gpusim/gpusim/reports"
	"github.com/gpusim/gpusim/scenarios"
	"github.com/gpusim/gpusim/sim"
)

// LiveOptions are the flags of `gpusim live`.
type LiveOptions struct {
	CalibrateProbeOptions
	Scenario   string
	Backend    string
	Policy     string
	Sets       []string
	OutDir     string
	StateDir   string
	Scale      float64
	Grace      time.Duration
	Poll       time.Duration
	Command    string
	InheritEnv bool
	MIGAsGPUs  bool
	NoSim      bool
	Quiet      bool
	QueueDir   string
	MaxQueued  int
	Kube       KubeFlags // --backend kubernetes (live_kube.go)
}

func init() { register(func(io *IO) *cobra.Command { return NewCmdLive(io) }) }

// NewCmdLive builds `gpusim live` and `gpusim live preempt`.
func NewCmdLive(io *IO) *cobra.Command {
	o := &LiveOptions{}
	cmd := &cobra.Command{
		Use:   "live SCENARIO.yaml --backend local [--fake] [--policy NAME] [--scale N] [-o DIR]",
		Short: "Run a policy live: the scenario's jobs as real processes on this GPU box",
		Long: `Live runs one policy of the scenario on this machine, unchanged: the policy
schedules the scenario's jobs (trace or synthetic) on the GPUs NVML discovers
(--fake: the simulated 8-GPU node of calibrate), and each job runs as a process
(default: sleep for its duration / --scale; --command for your own) in its own
process group with CUDA_VISIBLE_DEVICES set to its placement. Walltimes are
enforced; preemption is SIGTERM, --grace, SIGKILL. Every launch, start, end and
stop is journalled (fsynced) in --state DIR: run the same command again after a
crash or Ctrl-C to resume (running processes are re-adopted; no run is started
twice). 'gpusim live preempt --state DIR JOB' asks the runner to preempt a job.

It writes DIR/live/<policy>/ (the files of a simulation run, summary.json with
"mode": "live") and, unless --no-sim, DIR/sim/<policy>/: the simulation of the
same jobs on the same discovered machine. 'gpusim report DIR/sim/<policy>
DIR/live/<policy> -o R' puts them side by side with a fidelity section. See
docs/live.md.`,
		Example: `  gpusim live scenarios/examples/live-local.yaml --backend local --fake --scale 600 -o out/live
  gpusim live s.yaml --backend local --policy easy-backfill --command 'python train.py --job {id}' --scale 1
  gpusim live preempt --state out/live/state j007`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return UsageErrorf("live needs exactly one SCENARIO file")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Scenario = args[0]
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return RunLive(ctx, io, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Backend, "backend", "", "where jobs run: local (this machine) or kubernetes (a secondary scheduler; required)")
	f.BoolVar(&o.Fake, "fake", false, "use the fake NVML node (8 H100, GPU 7 in MIG mode) instead of this machine's GPUs")
	f.StringVar(&o.NVMLLib, "nvml-lib", "", "path of libnvidia-ml.so (default: the system's)")
	f.StringVar(&o.Policy, "policy", "", "policy label or name (default: the scenario's only policy)")
	f.StringArrayVar(&o.Sets, "set", nil, "override a scenario field (path=value), repeatable")
	f.StringVarP(&o.OutDir, "output", "o", "", "output directory (default out/<scenario name>-live)")
	f.StringVar(&o.StateDir, "state", "", "journal and run logs; reuse to resume (default DIR/state)")
	f.Float64Var(&o.Scale, "scale", 1, "time scale: simulated seconds per real second (60: a trace minute per second)")
	f.DurationVar(&o.Grace, "grace", 2*time.Second, "real time between SIGTERM and SIGKILL when a job is preempted (when the policy gives none)")
	f.DurationVar(&o.Poll, "poll", 20*time.Millisecond, "longest real time between checks of the clock and the jobs")
	f.StringVar(&o.Command, "command", "", "command of every job, split on spaces; {id} {run} {duration} {gpus} {ngpus} are replaced (default 'sleep {duration}')")
	f.BoolVar(&o.InheritEnv, "inherit-env", false, "pass the whole environment to jobs (default: PATH, HOME, LANG, ... and the job's own variables only)")
	f.BoolVar(&o.MIGAsGPUs, "mig-as-gpus", false, "use the MIG instances of GPUs in MIG mode as GPUs (default: leave those GPUs out)")
	f.BoolVar(&o.NoSim, "no-sim", false, "do not also write the simulation of the same jobs on this machine")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no per-job lines on stderr")
	f.StringVar(&o.QueueDir, "queue", "", "also take jobs from job files dropped in this directory while it runs; end with 'gpusim live stop'")
	f.IntVar(&o.MaxQueued, "max-queued", 10_000, "most jobs taken from --queue")
	addKubeFlags(f, &o.Kube)
	cmd.AddCommand(newCmdLivePreempt(io), newCmdLiveStop(io))
	return cmd
}

func newCmdLivePreempt(io *IO) *cobra.Command {
	var state string
	cmd := &cobra.Command{
		Use:   "preempt --state DIR JOB_ID...",
		Short: "Ask a running 'gpusim live' to preempt (requeue) jobs",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return UsageErrorf("live preempt needs at least one JOB_ID")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if state == "" {
				return UsageErrorf("live preempt: --state DIR is required")
			}
			for _, id := range args {
				if err := live.RequestPreempt(state, id); err != nil {
					return UsageError(err)
				}
				fmt.Fprintf(io.Out, "asked to preempt %s\n", id)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "the live run's state directory")
	return cmd
}

func newCmdLiveStop(io *IO) *cobra.Command {
	var state string
	cmd := &cobra.Command{
		Use:   "stop --state DIR",
		Short: "Ask a running 'gpusim live --queue' to take no more jobs and end when all have ended",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if state == "" {
				return UsageErrorf("live stop: --state DIR is required")
			}
			if err := live.RequestStop(state); err != nil {
				return UsageError(err)
			}
			fmt.Fprintln(io.Out, "asked the live run to stop taking jobs")
			return nil
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "the live run's state directory")
	return cmd
}

// RunLive implements `gpusim live`: bad input exits 2, runtime failures 1, an
// interrupt 130 (after stopping every job).
func RunLive(ctx context.Context, io *IO, o *LiveOptions) error {
	switch o.Backend {
	case "local":
	case "":
		return UsageErrorf("live: --backend is required (local, kubernetes)")
	case "kubernetes", "k8s":
		return runLiveKube(ctx, io, o)
	default:
		return UsageErrorf("live: unknown --backend %q (local, kubernetes)", o.Backend)
	}
	if !(o.Scale > 0) {
		return UsageErrorf("live: --scale must be > 0, got %v", o.Scale)
	}
	if o.Grace < 0 || o.Poll <= 0 {
		return UsageErrorf("live: --grace must be >= 0 and --poll > 0")
	}
	sc, pi, err := o.scenarioPolicy()
	if err != nil {
		return err
	}
	label := sc.Policies[pi].DisplayName()
	probe, err := openProbe(o.CalibrateProbeOptions)
	if err != nil {
		return err
	}
	host := hostInfo(o.Fake)
	rep, err := calibrate.Discover(probe, host)
	probe.Shutdown()
	if err != nil {
		return RuntimeError(fmt.Errorf("NVML discovery: %w", err))
	}
	m, err := live.MachineOf(rep, host, o.MIGAsGPUs)
	if err != nil {
		return RuntimeError(err)
	}
	if m.Note != "" && !o.Quiet {
		fmt.Fprintf(io.Err, "gpusim: live: %s\n", m.Note)
	}
	cluster, err := sim.NewCluster(m.Nodes)
	if err != nil {
		return RuntimeError(fmt.Errorf("live cluster: %w", err))
	}
	jobs, _, err := sc.Jobs(cluster)
	if err != nil {
		return UsageError(fmt.Errorf("%w (live runs the jobs on this machine: %d GPUs)", err, cluster.NumGPUs()))
	}
	if shr, err := sc.SharingConfig(); err != nil || shr != nil {
		return UsageErrorf("%s: cluster.pools[].sharing: device-level GPU sharing cannot run live", o.Scenario)
	}
	out := o.OutDir
	if out == "" {
		out = filepath.Join("out", sc.Name+"-live")
	}
	state := o.StateDir
	if state == "" {
		state = filepath.Join(out, "state")
	}
	var cmdArgv []string
	if o.Command != "" {
		cmdArgv = strings.Fields(o.Command)
	}
	cfg := sc.Config()
	cfg.Cluster, cfg.Jobs = cluster, jobs
	prov := reports.Provenance{Version: VersionString(), GoVersion: runtime.Version(), Seed: sc.SeedValue(), Scenario: sc.Name, ScenarioSHA256: sc.SHA256()}
	pol, err := sc.Policy(pi)
	if err != nil {
		return UsageError(err)
	}
	cfg.Policy = pol
	if o.MaxQueued < 1 {
		return UsageErrorf("live: --max-queued must be >= 1")
	}
	lopt := live.Options{StateDir: state, Scale: o.Scale, Grace: o.Grace, Poll: o.Poll, QueueDir: o.QueueDir, MaxQueued: o.MaxQueued,
		Local:  live.LocalOptions{Command: cmdArgv, Devices: m.Devices, InheritEnv: o.InheritEnv},
		Policy: label, Scenario: sc.Name, ScenarioSHA256: sc.SHA256()}
	if !o.Quiet {
		lopt.Log = io.Err
	}
	runner, err := live.NewRunner(cfg, lopt)
	if err != nil {
		return UsageError(err)
	}
	t0 := time.Now()
	res, st, err := runner.Run(ctx)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return InterruptedError(fmt.Errorf("%w; every job was stopped; run the same command to resume", err))
		}
		return RuntimeError(err)
	}
	res.Policy = label + " (live)"
	sum := reports.SummarizeWith(res, prov, time.Since(t0), sc.Prices())
	sum.Mode = reports.ModeLive
	sum.Live = &reports.LiveSummary{Backend: o.Backend, Policy: label, Scale: o.Scale, Host: host.Name, Fake: o.Fake,
		GPUs: int(cluster.NumGPUs()), Resumed: st.Resumed, Adopted: st.Adopted, Recovered: st.Recovered, Lost: st.Lost}
	dir := filepath.Join(out, "live", fileSafeLabel(label))
	if err := reports.WriteRunDir(dir, res, sum); err != nil {
		return RuntimeError(err)
	}
	if !o.NoSim {
		pol, err := sc.Policy(pi)
		if err != nil {
			return UsageError(err)
		}
		// The simulated twin: the same jobs (queue jobs with the submit times
		// the live run gave them) on the same machine.
		scfg := cfg
		scfg.Policy = pol
		scfg.Jobs = make([]sim.JobSpec, len(res.Jobs))
		for i := range res.Jobs {
			scfg.Jobs[i] = res.Jobs[i].Spec
		}
		e, err := sim.NewEngine(scfg)
		if err != nil {
			return UsageError(fmt.Errorf("policy %s: %w", label, err))
		}
		t0 := time.Now()
		sres, err := e.Run(ctx)
		if err != nil {
			return classifyRunError(fmt.Errorf("simulation: policy %s: %w", label, err))
		}
		sres.Policy = label
		dir := filepath.Join(out, "sim", fileSafeLabel(label))
		if err := reports.WriteRunDir(dir, sres, reports.SummarizeWith(sres, prov, time.Since(t0), sc.Prices())); err != nil {
			return RuntimeError(err)
		}
		if !o.Quiet {
			fmt.Fprintf(io.Err, "gpusim: live: simulation of the same jobs on this machine in %s\n", dir)
		}
	}
	fmt.Fprintf(io.Out, "live run of %s: %d jobs, %d completed, %d preemptions, makespan %.1f s (simulated); results in %s\n",
		label, sum.Jobs.Total, sum.Jobs.Completed, sum.Jobs.Preemptions, sum.MakespanS, dir)
	return nil
}

// fileSafeLabel maps a policy label to a directory name.
func fileSafeLabel(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 || r == ' ' {
			return '_'
		}
		return r
	}, s)
}

// scenarioPolicy loads the live run's scenario (with --set) and picks its one
// policy entry (--policy, or the only one); a fill experiment or several
// policies without --policy are usage errors.
func (o *LiveOptions) scenarioPolicy() (*scenarios.Scenario, int, error) {
	sc, err := loadScenario(o.Scenario, false, o.Sets, nil)
	if err != nil {
		return nil, 0, err
	}
	if sc.Experiment != nil {
		return nil, 0, UsageErrorf("%s: experiment: a fill experiment cannot run live", o.Scenario)
	}
	var sels []string
	if o.Policy != "" {
		sels = []string{o.Policy}
	}
	idx, err := sc.Select(sels)
	if err != nil {
		return nil, 0, UsageError(err)
	}
	if len(idx) != 1 {
		return nil, 0, UsageErrorf("live: the scenario lists %d policies; choose one with --policy", len(idx))
	}
	return sc, idx[0], nil
}
