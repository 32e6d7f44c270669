package slurm

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
)

// Params are the slurm policy's scenario parameters, shaped like slurm.conf (keys
// in camelCase; SchedulerParameters keep Slurm's snake_case names). Every field
// is optional; the defaults are Slurm's (docs/slurm.md lists them).
type Params struct {
	// Partitions (PartitionName=...). None given: one partition "default" over
	// all nodes, Default=YES.
	Partitions []PartitionConf `yaml:"partitions"`
	// PartitionMapping maps a job's trace queue to a partition name. Unmapped
	// jobs use the partition named like their queue, then the Default partition.
	PartitionMapping map[string]string `yaml:"partitionMapping"`
	// Priority configures priority/multifactor (PriorityWeight*, PriorityMaxAge,
	// PriorityCalcPeriod, PriorityDecayHalfLife, PriorityFlags).
	Priority PriorityConf `yaml:"priority"`
	// Accounts is the association tree under root (sacctmgr accounts and users
	// with fairshare shares).
	Accounts []AccountConf `yaml:"accounts"`
	// DefaultAccount receives users that no account lists and whose job team
	// names no account (default: an implicit top-level account "default" with 1 share).
	DefaultAccount string `yaml:"defaultAccount"`
	// QOS lists the QOS (sacctmgr qos). "normal" (priority 0) always exists.
	QOS []QOSConf `yaml:"qos"`
	// QOSMapping maps a job class (training, serving, ...) to a QOS name; other
	// jobs get "normal".
	QOSMapping map[string]string `yaml:"qosMapping"`
	// SchedulerParameters (sched/backfill and the main scheduler).
	SchedulerParameters SchedConf `yaml:"schedulerParameters"`
	// PreemptType: none (default), partition_prio or qos (preempt/partition_prio,
	// preempt/qos; a "preempt/" prefix is accepted).
	PreemptType string `yaml:"preemptType"`
	// PreemptMode is the cluster-wide mode: OFF (default), CANCEL, REQUEUE or SUSPEND.
	PreemptMode string `yaml:"preemptMode"`
	// PreemptExemptTime: a job is not preempted before it has run this long
	// (default: none). The engine's own protection applies as well.
	PreemptExemptTime *policies.Dur `yaml:"preemptExemptTime"`
	// PreemptParameters (youngest_first).
	PreemptParameters struct {
		// YoungestFirst orders victims by start time, most recent first, instead
		// of by tier/QOS priority then size.
		YoungestFirst bool `yaml:"youngestFirst"`
	} `yaml:"preemptParameters"`
	// Reservations are advanced reservations (scontrol create reservation).
	Reservations []ReservationConf `yaml:"reservations"`
	// EnforcePartLimits: a job whose time limit exceeds its partition's MaxTime is
	// a configuration error (true, like EnforcePartLimits=ALL rejecting it at
	// submission) instead of pending forever (false, the default NO).
	EnforcePartLimits bool `yaml:"enforcePartLimits"`
	// TopologyPlugin: flat (default: nodes in index order) or tree
	// (topology/tree over the fabric's leaf switches and spine blocks; a
	// "topology/" prefix is accepted).
	TopologyPlugin string `yaml:"topologyPlugin"`
	// Placement, when set, chooses the nodes of jobs that start now (the main
	// scheduler and backfill's immediate starts) with a gpusim placement that can
	// be confined to the job's partition and the nodes Slurm would consider
	// (placement.HonoursAllow: first-fit, best-fit, spread, fgd), instead of
	// select/cons_tres's node order. Empty (the default) keeps Slurm's. Not with
	// topologyPlugin tree. See docs/slurm.md.
	Placement string `yaml:"placement"`

	// NodeSelection is select/cons_tres's choice of nodes for a job that
	// starts: best-fit (the default: the tightest run of consecutive usable
	// nodes, then the node with the fewest free CPUs, as _eval_nodes does) or
	// first-fit (nodes in index order, gpusim's model before issue 17). See
	// docs/fidelity.md.
	NodeSelection string `yaml:"nodeSelection"`
	// BestFitCPUs is what best-fit node selection counts as a node's CPUs:
	// free (the default, gpusim's model before: the node's free CPUs) or job
	// (Slurm's: the CPUs the job's tasks would take there, tasks x CPUs per
	// task, as select/cons_tres _allocate_sc computes avail_cpus for
	// _eval_nodes, so the nodes that can host a replica tie and the first in
	// index order wins; docs/fidelity.md). The default stays free so that
	// existing outputs do not change.
	BestFitCPUs string `yaml:"bestFitCPUs"`
	// KillWait is slurm.conf's KillWait (default 30 s): backfill's will-run
	// test expects a job past its time limit to end KillWait after it
	// (_guess_job_end).
	KillWait *policies.Dur `yaml:"killWait"`
	// WholeSeconds: a running job's start, and so the end_time (start +
	// time limit) that backfill's will-run test (willRun: windows) frees it
	// at, are whole seconds, as Slurm's time(NULL) makes them. Default false
	// (exact times, gpusim's model before).
	WholeSeconds bool `yaml:"wholeSeconds"`
	// AccountingStorage: slurmdbd (the default) or none
	// (AccountingStorageType=accounting_storage/none). Without accounting,
	// Slurm 22.05 computes a job's priority once, at submission: no fair
	// share, and no PriorityCalcPeriod recalculation, so the age factor stays
	// 0 (sprio in the fidelity fixture priority).
	AccountingStorage string `yaml:"accountingStorage"`
	// AccountingStorageEnforce is slurm.conf's AccountingStorageEnforce
	// (comma-separated: associations, limits, qos, safe, wckeys, nojobs,
	// nosteps, all, none; default "associations,limits"). Without limits (or
	// safe, all), the usage a run accrued since the last PriorityCalcPeriod
	// pass is lost when it ends, as in Slurm (see parseEnforce).
	AccountingStorageEnforce string `yaml:"accountingStorageEnforce"`
	// GangNodes: distinct (the default: each replica of a gang on its own
	// node, as sbatch -N replicas --ntasks-per-node=1 asks) or shared
	// (replicas may share a node, gpusim's model before issue 17).
	GangNodes string `yaml:"gangNodes"`
	// RequeueDelay is how long a requeued job stays ineligible (its begin
	// time is pushed back when it is requeued; default DefaultRequeueDelay);
	// it then waits for the next scheduling pass.
	RequeueDelay *policies.Dur `yaml:"requeueDelay"`
	// ClockOffset is the wall-clock time of simulated t=0 past a whole minute
	// (Unix time modulo 60 s): backfill rounds reservations to multiples of
	// bf_resolution of the wall clock, not of t=0 (default 0).
	ClockOffset *policies.Dur `yaml:"clockOffset"`
	// ControllerUptime is how long slurmctld had been running at t=0: the
	// periodic passes (sched_interval, bf_interval, PriorityCalcPeriod) are
	// timed from its start (default 0).
	ControllerUptime *policies.Dur `yaml:"controllerUptime"`
	// CalcUptime is how long priority/multifactor's decay thread
	// (_decay_thread, which runs the PriorityCalcPeriod passes) had been
	// running at t=0 (default: controllerUptime). slurmctld starts it once it
	// has loaded the associations from slurmdbd, 1 to 2 s after its own start
	// in the fidelity fixture fairshare.
	CalcUptime *policies.Dur `yaml:"calcUptime"`
	// Version selects Slurm behaviour that differs between releases:
	// "latest" (default: SchedMD master) or "22.05" (Debian 12's 22.05.8).
	// docs/fidelity.md lists each difference.
	Version string `yaml:"version"`
	// WillRun selects how backfill finds a pending job's earliest start and
	// nodes: "exact" (default) tries every running job's expected end;
	// "windows" is Slurm's search (backfill.c TRY_LATER with
	// select/cons_tres _will_run_test freeing running jobs in doubling time
	// windows). docs/fidelity.md describes both.
	WillRun string `yaml:"willRun"`
}

// PartitionConf is one partition.
type PartitionConf struct {
	Name string `yaml:"name"`
	// Nodes: "ALL", node-name globs ("h100-*"), Slurm hostlists ("h100-[0-3,8]"),
	// pool names, or node index ranges ("0-7"); a list or a comma-free string.
	Nodes NodeList `yaml:"nodes"`
	// PriorityTier orders partitions in the queue and in partition_prio
	// preemption (default 1).
	PriorityTier *int `yaml:"priorityTier"`
	// PriorityJobFactor feeds the partition priority factor (default 1).
	PriorityJobFactor *int `yaml:"priorityJobFactor"`
	// MaxTime is the partition's time limit (default UNLIMITED).
	MaxTime *policies.Dur `yaml:"maxTime"`
	// DefaultTime is the time limit of jobs that give none (default: MaxTime).
	DefaultTime *policies.Dur `yaml:"defaultTime"`
	// PreemptMode overrides the cluster mode for jobs of this partition as victims
	// (partition_prio).
	PreemptMode string `yaml:"preemptMode"`
	// Default marks the partition of jobs that name none (Default=YES).
	Default bool `yaml:"default"`
	// OverSubscribe: NO (default), EXCLUSIVE, YES[:N] or FORCE[:N]. A job of
	// this partition can be suspended by preemption only with FORCE: a
	// suspended job keeps its allocation, so its preemptor must be allowed
	// onto the same resources (the fixture preempt-suspend shows no
	// suspension without it).
	OverSubscribe string `yaml:"overSubscribe"`
}

// NodeList is a list of node expressions; a scalar is one expression.
type NodeList []string

// UnmarshalYAML accepts a string or a sequence of strings.
func (l *NodeList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*l = NodeList{n.Value}
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return policies.TypeErrorf(n, "want a node expression or a list of them")
	}
	s := make([]string, 0, len(n.Content))
	for _, c := range n.Content {
		if c.Kind != yaml.ScalarNode {
			return policies.TypeErrorf(c, "want a node expression (a string)")
		}
		s = append(s, c.Value)
	}
	*l = s
	return nil
}

// PriorityConf configures priority/multifactor.
type PriorityConf struct {
	Weights struct {
		Age       uint32 `yaml:"age"`
		FairShare uint32 `yaml:"fairshare"`
		JobSize   uint32 `yaml:"jobSize"`
		Partition uint32 `yaml:"partition"`
		QOS       uint32 `yaml:"qos"`
	} `yaml:"weights"`
	// MaxAge: the age factor reaches 1 after this long pending (default 7 days).
	MaxAge *policies.Dur `yaml:"maxAge"`
	// FavorSmall: the job size factor favours small jobs (default false).
	FavorSmall bool `yaml:"favorSmall"`
	// CalcPeriod: priorities and usage decay are recomputed every CalcPeriod (default 5m).
	CalcPeriod *policies.Dur `yaml:"calcPeriod"`
	// DecayHalfLife of recorded usage (default 7 days; 0 = no decay).
	DecayHalfLife *policies.Dur `yaml:"decayHalfLife"`
	// UsageModel: exact (the default: continuous decay 2^(-t/half-life),
	// usage charged as it accrued) or slurm (priority_multifactor.c: the
	// per-second factor 1 - 0.693/half-life, and a step's new usage weighted
	// by that factor over its own length; see usage.go).
	UsageModel string `yaml:"usageModel"`
	// FairTree selects the Fair Tree algorithm (default true); false is classic
	// fair share (PriorityFlags=NO_FAIR_TREE).
	FairTree *bool `yaml:"fairTree"`
	// DampeningFactor is FairShareDampeningFactor of classic fair share (default 1).
	DampeningFactor *int `yaml:"dampeningFactor"`
	// SmallRelativeToTime is PriorityFlags=SMALL_RELATIVE_TO_TIME: the job
	// size factor is the job's CPUs (at least its nodes' share of the
	// cluster's CPUs) divided by its time limit in minutes and by the
	// cluster's CPUs (default false).
	SmallRelativeToTime bool `yaml:"smallRelativeToTime"`
}

// AccountConf is an account association with child accounts and users.
type AccountConf struct {
	Name     string        `yaml:"name"`
	Shares   *int          `yaml:"shares"` // default 1
	Accounts []AccountConf `yaml:"accounts"`
	Users    []UserConf    `yaml:"users"`
}

// UserConf is a user association.
type UserConf struct {
	Name   string `yaml:"name"`
	Shares *int   `yaml:"shares"` // default 1
}

// QOSConf is one QOS.
type QOSConf struct {
	Name     string   `yaml:"name"`
	Priority int      `yaml:"priority"`
	Preempt  []string `yaml:"preempt"`
	// PreemptMode overrides the cluster mode for jobs of this QOS as victims (qos).
	PreemptMode string `yaml:"preemptMode"`
}

// SchedConf holds SchedulerParameters.
type SchedConf struct {
	SchedInterval         *policies.Dur `yaml:"sched_interval"`            // 60s
	DefaultQueueDepth     *int          `yaml:"default_queue_depth"`       // 100
	BfInterval            *policies.Dur `yaml:"bf_interval"`               // 30s
	BfWindow              *Minutes      `yaml:"bf_window"`                 // 1440 (minutes)
	BfResolution          *policies.Dur `yaml:"bf_resolution"`             // 60s
	BfMaxJobTest          *int          `yaml:"bf_max_job_test"`           // 500
	BfMaxJobUser          *int          `yaml:"bf_max_job_user"`           // 0 = unlimited
	BfMaxJobPart          *int          `yaml:"bf_max_job_part"`           // 0 = unlimited
	BfJobPartCountReserve *int          `yaml:"bf_job_part_count_reserve"` // 0 = all
	BfMinPrioReserve      *int64        `yaml:"bf_min_prio_reserve"`       // 0
	BfContinue            *bool         `yaml:"bf_continue"`               // read, not modelled
	BatchSchedDelay       *policies.Dur `yaml:"batch_sched_delay"`         // 3s; 0 = main pass at each arrival
}

// Minutes is a duration whose plain numbers are minutes (as bf_window in
// slurm.conf); strings are Go durations ("24h").
type Minutes sim.Duration

// UnmarshalYAML parses minutes or a duration string.
func (m *Minutes) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return policies.TypeErrorf(n, "want minutes or a duration (e.g. 90, 24h)")
	}
	s := strings.TrimSpace(n.Value)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return policies.TypeErrorf(n, "%q must be a number of minutes >= 0", s)
		}
		*m = Minutes(sim.Seconds(f * 60))
		return nil
	}
	d, err := policies.ParseDur(s)
	if err != nil {
		return policies.TypeErrorf(n, "%v", err)
	}
	*m = Minutes(d)
	return nil
}

// ReservationConf is an advanced reservation.
type ReservationConf struct {
	Name  string   `yaml:"name"`
	Nodes NodeList `yaml:"nodes"`
	// StartTime is the reservation start, as a time from the simulation start.
	StartTime policies.Dur `yaml:"startTime"`
	// EndTime (from the simulation start) or Duration; neither = forever.
	EndTime  *policies.Dur `yaml:"endTime"`
	Duration *policies.Dur `yaml:"duration"`
	// Accounts and Users may use the reserved nodes during the window (a job's
	// account matches when it or any ancestor account is listed); Partition, when
	// set, further restricts them to jobs of that partition.
	Accounts  []string `yaml:"accounts"`
	Users     []string `yaml:"users"`
	Partition string   `yaml:"partition"`
}

type preemptMode uint8

const (
	modeUnset preemptMode = iota
	modeOff
	modeCancel
	modeRequeue
	modeSuspend
)

func (m preemptMode) String() string {
	return [...]string{"", "OFF", "CANCEL", "REQUEUE", "SUSPEND"}[m]
}

func parseMode(field, s string) (preemptMode, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "":
		return modeUnset, nil
	case "OFF":
		return modeOff, nil
	case "CANCEL":
		return modeCancel, nil
	case "REQUEUE":
		return modeRequeue, nil
	case "SUSPEND", "SUSPEND,GANG":
		return modeSuspend, nil
	case "GANG":
		return 0, fmt.Errorf("%s: GANG (time-slicing) is not modelled (want OFF, CANCEL, REQUEUE or SUSPEND)", field)
	}
	return 0, fmt.Errorf("%s: unknown preempt mode %q (want OFF, CANCEL, REQUEUE or SUSPEND)", field, s)
}

type preemptType uint8

const (
	preemptNone preemptType = iota
	preemptPartition
	preemptQOS
)

func parsePreemptType(s string) (preemptType, error) {
	switch strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "preempt/") {
	case "", "none":
		return preemptNone, nil
	case "partition_prio":
		return preemptPartition, nil
	case "qos":
		return preemptQOS, nil
	}
	return 0, fmt.Errorf("preemptType: unknown %q (want none, partition_prio or qos)", s)
}

// Slurm's defaults.
const (
	DefaultSchedInterval = 60 * sim.Second
	DefaultQueueDepth    = 100
	DefaultBfInterval    = 30 * sim.Second
	DefaultBfWindow      = 1440 * sim.Minute
	DefaultBfResolution  = 60 * sim.Second
	DefaultBfMaxJobTest  = 500
	DefaultMaxAge        = 7 * 24 * sim.Hour
	DefaultCalcPeriod    = 5 * sim.Minute
	DefaultHalfLife      = 7 * 24 * sim.Hour
	maxBfWindow          = 43200 * sim.Minute
	// DefaultRequeueDelay is the ineligible time of a requeued job:
	// see docs/fidelity.md (measured on Slurm 22.05.8).
	DefaultRequeueDelay = 121 * sim.Second
	// DefaultBatchSchedDelay is SchedulerParameters batch_sched_delay.
	DefaultBatchSchedDelay = 3 * sim.Second
)

func durOr(d *policies.Dur, def sim.Duration) sim.Duration {
	if d == nil {
		return def
	}
	return sim.Duration(*d)
}

func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}
