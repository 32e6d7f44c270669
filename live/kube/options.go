package kube

import (
	"context"
	"io"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/gpusim/gpusim/sim"
)

// Observer receives the scheduler's operational signals (for Prometheus metrics).
type Observer interface {
	QueueLength(pending int)     // pending jobs after each cycle
	Decision(kind string)        // "start", "preempt", "rollback", "skip", "dry-run"
	BindLatency(d time.Duration) // from the last pod of a gang being observed pending to its last bind
	Error(kind string)           // "bind", "evict", "event", "decode", "apiserver"
}

// Default label keys and names.
const (
	DefaultSchedulerName = "gpusim"
	DefaultRackLabel     = "topology.kubernetes.io/rack"
	DefaultBlockLabel    = "topology.kubernetes.io/block"
	DefaultZoneLabel     = "topology.kubernetes.io/zone"
)

// Options configure Run. Client/Dynamic talk to the API server; Ready is called
// once the informers have synced.
//
// Run is leader-agnostic: a caller that wants leader election (package
// live/kubeops) calls Run only while it leads and cancels ctx when it loses
// the lease. Observer methods are called from Run's driver goroutine only.
type Options struct {
	Client        kubernetes.Interface
	Dynamic       dynamic.Interface
	SchedulerName string // pods with this spec.schedulerName are gpusim's ("" = DefaultSchedulerName)
	Namespace     string // "" = all namespaces
	// DryRun decides and records but never binds nor evicts; Events and
	// outputs say so. Shadow watches pods of any scheduler, records what
	// gpusim would have done against the real cluster state and never acts.
	DryRun, Shadow bool
	Observer       Observer // nil = none
	Ready          func()   // nil = none

	// Config carries the policy and the engine settings of the scenario
	// (Cluster and Jobs are filled by Run from the API server; Policy is
	// required).
	Config sim.Config
	// PolicyLabel names the policy in the outputs.
	PolicyLabel string
	// Scale is simulated seconds per real second (1 = real time): the sim
	// model's clock and the gpusim.io/duration annotations are read in
	// simulated seconds.
	Scale float64
	// Grace is the real eviction grace period of a preemption whose plan gives
	// none (default 2 s).
	Grace time.Duration
	// Poll is the longest the driver sleeps between cycles (default 50 ms).
	Poll time.Duration
	// MaxJobs bounds the jobs one run takes (the job table is sized up front;
	// default 100,000).
	MaxJobs int
	// RackLabel, BlockLabel and ZoneLabel are the node label keys of the
	// topology levels ("" = the Default* keys).
	RackLabel, BlockLabel, ZoneLabel string
	// ClassLabels are node label keys whose values split nodes into
	// eligibility classes, so that nodeSelector / node affinity on them is
	// honoured exactly (see docs/live.md; nil = the GPU product, taints and
	// spec.unschedulable only).
	ClassLabels []string
	// DefaultDuration is the model's duration of a job whose pods carry no
	// gpusim.io/duration annotation (simulated time; default 1 h).
	DefaultDuration sim.Duration
	// GangTimeout is how long an incomplete gang (a PodGroup whose minMember
	// is 0 or larger than its pods, a Kubeflow/JobSet/indexed Job with
	// missing pods) waits before it is skipped with an Event (default 60 s
	// real time).
	GangTimeout time.Duration
	// EventInterval is the shortest real time between two wait-reason Events
	// on the same pod (default 10 s).
	EventInterval time.Duration
	// OutDir, when set, receives the run directory (events.parquet,
	// jobs.csv, summary.json with mode "live") when Run returns.
	OutDir string
	// Host names the API server in summary.json (its URL host; never
	// credentials).
	Host string
	// Provenance fields for summary.json.
	Version, Scenario, ScenarioSHA256 string
	Seed                              uint64
	// Done, when set, gets the run's result after the outputs are written
	// (the command line simulates the same jobs beside it).
	Done func(res *sim.Result)
	// Log receives one line per decision, skip and error (nil = none). It
	// never receives credentials.
	Log io.Writer
	// Now is the wall clock (nil = time.Now).
	Now func() time.Time
}

// Run schedules the pods of opt.SchedulerName (or, with Shadow, watches
// every pod) with opt.Config.Policy until ctx is done, then writes the run
// directory to opt.OutDir and returns nil; a fatal error (informers that
// cannot sync, an invalid plan) is returned at once.
func Run(ctx context.Context, opt Options) error {
	s, err := newScheduler(opt)
	if err != nil {
		return err
	}
	return s.run(ctx)
}
