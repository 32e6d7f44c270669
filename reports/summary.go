package reports

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"time"

	"github.com/gpusim/gpusim/sim"
)

// SummarySchema identifies the summary.json format; it changes only on
// incompatible changes.
const SummarySchema = "gpusim.summary/v1"

// floatDecimals is the number of decimals every float in summary.json is rounded
// to, so the text is stable across platforms and runs.
const floatDecimals = 6

// SlowdownBound is the run-time floor of bounded slowdown: jobs shorter than this
// count as this long, so very short jobs do not dominate the mean.
const SlowdownBound = 10 * sim.Second

// Provenance records where a run came from.
type Provenance struct {
	Version        string `json:"version"`         // gpusim version
	GoVersion      string `json:"go_version"`      // Go toolchain that built gpusim
	Seed           uint64 `json:"seed"`            // master seed of the run
	Scenario       string `json:"scenario"`        // scenario name
	ScenarioSHA256 string `json:"scenario_sha256"` // hex SHA-256 of the scenario file bytes
}

// Stats summarizes a sample of values. Percentiles use the nearest-rank method on
// the sorted values; every field is 0 when there are no values.
type Stats struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// JobCounts counts jobs by final state.
type JobCounts struct {
	Total     int `json:"total"`     // jobs in the run
	Completed int `json:"completed"` // ended in state completed
	// Unfinished = Running + Pending: jobs not ended when the run stopped.
	Unfinished   int `json:"unfinished"`
	Running      int `json:"running"`       // running when the run stopped
	Pending      int `json:"pending"`       // pending when the run stopped (incl. requeued)
	NeverStarted int `json:"never_started"` // never started at all
	Killed       int `json:"killed"`        // stopped for good by the policy
	Timeout      int `json:"timeout"`       // stopped at their walltime
	Preemptions  int `json:"preemptions"`   // total preemptions (requeue and kill) over all jobs
}

// GroupSummary is the statistics of one job class or queue.
type GroupSummary struct {
	Jobs      int   `json:"jobs"`
	Completed int   `json:"completed"`
	WaitS     Stats `json:"wait_s"`
	JCTS      Stats `json:"jct_s"`
	Slowdown  Stats `json:"slowdown"`
	// Preemptions counts the group's preemptions (requeue and kill).
	Preemptions int `json:"preemptions"`
	// GPUHours is the GPU time the group's jobs held (allocated GPUs x share x time,
	// every run counted, from the event log) in GPU-hours; Share is that over all
	// groups' GPU-hours (0..1).
	GPUHours float64 `json:"gpu_hours"`
	Share    float64 `json:"share"`
	// WastedGPUHours is GPU time that produced no surviving work: work lost since
	// the last checkpoint at preemptions, checkpoint save/restore time, and whole
	// runs ended by a kill or timeout (sim.Job.Wasted x GPUs).
	WastedGPUHours float64 `json:"wasted_gpu_hours"`
	// RequeueDelayS is the time from each preemption (requeue or suspend) of the
	// group's jobs to the job's next start, in seconds (requeues not restarted by
	// the end of the run are not counted).
	RequeueDelayS Stats `json:"requeue_delay_s"`
	// Cost is GPUHours priced at showback.pricePerGPUHour (0 without prices).
	Cost float64 `json:"cost"`
	// NominalGPUs is the queue's nominal GPU quota where the policy has quotas
	// (kueue: the nominalQuota of nvidia.com/gpu of its ClusterQueue); omitted
	// otherwise. Only in per_queue.
	NominalGPUs float64 `json:"nominal_gpus,omitempty"`
}

// Fairness holds Jain's fairness index J = (sum x)^2 / (n * sum x^2) of the mean
// bounded slowdown x of each user (each queue) with at least one completed job.
// J is 1 when all are equal and 1/n at worst; 0 when no group has a completed job.
type Fairness struct {
	JainUsers  float64 `json:"jain_users"`
	JainQueues float64 `json:"jain_queues"`
}

// Summary is the content of summary.json. Field order is the file's key order;
// map keys (class and queue names) are written sorted.
type Summary struct {
	Schema   string    `json:"schema"`
	Policy   string    `json:"policy"`
	Scenario string    `json:"scenario"`
	Jobs     JobCounts `json:"jobs"`
	// WaitS is FirstStart - Submit over every job that started at least once.
	WaitS Stats `json:"wait_s"`
	// JCTS is End - Submit over jobs that completed.
	JCTS Stats `json:"jct_s"`
	// Slowdown is max(1, jct / max(run, 10 s)) over completed jobs, run being the
	// job's true duration at reference speed.
	Slowdown Stats                   `json:"slowdown"`
	Classes  map[string]GroupSummary `json:"classes"`
	PerQueue map[string]GroupSummary `json:"per_queue"`
	// PerUser is the same per user; "unknown" for jobs without one.
	PerUser map[string]GroupSummary `json:"per_user"`
	// PerTeam is the same per team (the trace's team column); "unknown" for jobs
	// without one.
	PerTeam  map[string]GroupSummary `json:"per_team"`
	Fairness Fairness                `json:"fairness"`
	// MakespanS is the time of the last job end (finish, kill or timeout), seconds.
	MakespanS float64 `json:"makespan_s"`
	// EndS is the virtual time the run stopped at, seconds.
	EndS float64 `json:"end_s"`
	// GPUUtilization is allocated GPU-time / GPU capacity-time over [0, makespan].
	GPUUtilization   float64    `json:"gpu_utilization"`
	GPUCapacity      int64      `json:"gpu_capacity"`
	Events           int64      `json:"events"`
	SchedulingPoints int64      `json:"scheduling_points"`
	WallSeconds      float64    `json:"wall_seconds"`
	EventsPerSecond  float64    `json:"events_per_second"`
	Provenance       Provenance `json:"provenance"`
	// Sharing is present only in runs with device-level GPU sharing.
	Sharing *SharingSummary `json:"sharing,omitempty"`
	// Serving is present only in runs with serving jobs (docs/serving.md).
	Serving *ServingSummary `json:"serving,omitempty"`
	// Failures is present only in runs with failures: (failures.go).
	Failures *FailureSummary `json:"failures,omitempty"`
	// Power is present only in runs with a power: block (docs/power.md).
	Power *PowerSummary `json:"power,omitempty"`
	// DAG is present only in runs with job dependencies (docs/dag.md).
	DAG *DAGSummary `json:"dag,omitempty"`
	// CheckpointIO is present only in runs with a storage: block (docs/checkpoint-io.md).
	CheckpointIO *CheckpointIOSummary `json:"checkpoint_io,omitempty"`
	// Telemetry is present only in runs with a telemetry: block (docs/telemetry.md).
	Telemetry *TelemetrySummary `json:"telemetry,omitempty"`
	// Forecast is present only for a queue policy run with forecast: params (docs/forecast.md).
	Forecast *ForecastSummary `json:"forecast,omitempty"`
	// Mode is "live" for a run of `gpusim live` (absent for simulations); Live
	// describes it (docs/live.md).
	Mode string       `json:"mode,omitempty"`
	Live *LiveSummary `json:"live,omitempty"`
}

// QueueName maps an empty queue name to "default" (the name used in summary.json
// and reports).
func QueueName(q string) string {
	if q == "" {
		return "default"
	}
	return q
}

// UserName maps an empty user name to "unknown".
func UserName(u string) string {
	if u == "" {
		return "unknown"
	}
	return u
}

// classOf returns the class name reported for a job ("" reported as unknown).
func classOf(c sim.JobClass) string {
	if c == "" {
		return string(sim.ClassUnknown)
	}
	return string(c)
}

// JobMetrics are one job's derived metrics; Has* say whether they exist.
type JobMetrics struct {
	Wait, JCT, Slowdown float64 // seconds, seconds, ratio
	HasWait, HasJCT     bool    // HasJCT: the job completed (Slowdown is set too)
}

// MetricsOf computes wait, JCT and bounded slowdown of one job as defined in
// docs/metrics.md.
func MetricsOf(j *sim.Job) JobMetrics {
	var m JobMetrics
	if j.FirstStart != sim.Never {
		m.HasWait = true
		m.Wait = j.FirstStart.Sub(j.Spec.Submit).Seconds()
	}
	if j.State == sim.StateCompleted && j.End != sim.Never {
		m.HasJCT = true
		jct := j.End.Sub(j.Spec.Submit)
		m.JCT = jct.Seconds()
		m.Slowdown = BoundedSlowdown(jct, j.Spec.Duration)
	}
	return m
}

// BoundedSlowdown returns max(1, jct / max(run, SlowdownBound)).
func BoundedSlowdown(jct, run sim.Duration) float64 {
	d := max(run, SlowdownBound)
	return max(1, float64(jct)/float64(d))
}

// acc is one group's figures (see summaryScratch.collect).
type acc struct {
	jobs, completed, preempt int
	wait, jct, sd, requeue   []float64
	gpuH, wastedH, cost      float64
}

func (a *acc) group(totalH float64) GroupSummary {
	g := GroupSummary{Jobs: a.jobs, Completed: a.completed,
		WaitS: ComputeStats(a.wait), JCTS: ComputeStats(a.jct), Slowdown: ComputeStats(a.sd),
		Preemptions: a.preempt, GPUHours: round(a.gpuH), WastedGPUHours: round(a.wastedH),
		RequeueDelayS: ComputeStats(a.requeue), Cost: round(a.cost)}
	if totalH > 0 {
		g.Share = round(a.gpuH / totalH)
	}
	return g
}

// gpuHours returns, per job, the GPU-hours held over all its runs (from the event
// log; the last run only without one), the wasted GPU-hours (sim.Job.Wasted) and
// the delays from each preemption or suspension to the next start, in seconds
// (only jobs that have any are in the map).
func gpuHours(res *sim.Result) (held, wasted []float64, requeue map[sim.JobRef][]float64) {
	held = make([]float64, len(res.Jobs))
	wasted = make([]float64, len(res.Jobs))
	requeue = map[sim.JobRef][]float64{}
	perH := func(j *sim.Job) float64 { return float64(j.Spec.GPUDemandMilli()) / 1000 / 3600 }
	for i := range res.Jobs {
		wasted[i] = res.Jobs[i].Wasted.Seconds() * perH(&res.Jobs[i])
	}
	if len(res.Log) == 0 {
		for i := range res.Jobs {
			j := &res.Jobs[i]
			if j.LastStart != sim.Never {
				end := j.End
				if end == sim.Never {
					end = res.End
				}
				held[i] = (end - j.LastStart).Seconds() * perH(j)
			}
		}
		return held, wasted, requeue
	}
	start := make([]sim.Time, len(res.Jobs))
	stopped := make([]sim.Time, len(res.Jobs))
	for i := range start {
		start[i], stopped[i] = sim.Never, sim.Never
	}
	for _, e := range res.Log {
		j := &res.Jobs[e.Job]
		switch e.Kind {
		case sim.EvStart:
			start[e.Job] = e.Time
			if stopped[e.Job] != sim.Never {
				requeue[e.Job] = append(requeue[e.Job], e.Time.Sub(stopped[e.Job]).Seconds())
				stopped[e.Job] = sim.Never
			}
		case sim.EvFinish, sim.EvTimeout, sim.EvPreempt, sim.EvKill, sim.EvSuspend:
			if start[e.Job] == sim.Never {
				continue
			}
			held[e.Job] += (e.Time - start[e.Job]).Seconds() * perH(j)
			start[e.Job] = sim.Never
			if e.Kind == sim.EvPreempt || e.Kind == sim.EvSuspend {
				stopped[e.Job] = e.Time
			}
		}
	}
	for i, t := range start { // still running at the end
		if t != sim.Never {
			held[i] += (res.End - t).Seconds() * perH(&res.Jobs[i])
		}
	}
	return held, wasted, requeue
}

// Summarize computes the summary of a finished run. wall is the measured
// wall-clock run time (the caller measures it; it only feeds wall_seconds and
// events_per_second). A nil result gives an empty summary.
func Summarize(res *sim.Result, prov Provenance, wall time.Duration) *Summary {
	return SummarizeWith(res, prov, wall, Prices{})
}

// Prices is the showback price list: currency units per GPU-hour, per GPU model,
// with Default for models not listed. A job's GPU-hours are priced at the model of
// its last placement (or its only allowed model if it never ran).
type Prices struct {
	PerModel map[string]float64
	Default  float64
}

func (p Prices) of(res *sim.Result, j *sim.Job) float64 {
	if len(p.PerModel) == 0 {
		return p.Default
	}
	m := ""
	if len(j.Nodes) > 0 && res.Cluster != nil {
		m = res.Cluster.Node(j.Nodes[0]).GPUModel
	} else if len(j.Spec.GPUModels) == 1 {
		m = j.Spec.GPUModels[0]
	}
	if v, ok := p.PerModel[m]; ok {
		return v
	}
	return p.Default
}

// SummarizeWith is Summarize with showback prices (GroupSummary.Cost).
func SummarizeWith(res *sim.Result, prov Provenance, wall time.Duration, price Prices) *Summary {
	s := &Summary{Schema: SummarySchema, Scenario: prov.Scenario, Provenance: prov,
		Classes: map[string]GroupSummary{}, PerQueue: map[string]GroupSummary{}, PerUser: map[string]GroupSummary{}, PerTeam: map[string]GroupSummary{}}
	if res == nil {
		return s
	}
	s.Policy = res.Policy
	c := &s.Jobs
	held, wasted, requeue := gpuHours(res)
	n := len(res.Jobs)
	sc := &summaryScratch{res: res, held: held, wasted: wasted, requeue: requeue, price: price,
		gid: make([]int32, n), wait: make([]float64, 0, n), jct: make([]float64, 0, n), sd: make([]float64, 0, n)}
	var totalH float64
	for i := range res.Jobs {
		j := &res.Jobs[i]
		totalH += held[i]
		c.Total++
		c.Preemptions += int(j.Preempted)
		switch j.State {
		case sim.StateCompleted:
			c.Completed++
		case sim.StateRunning:
			c.Running++
		case sim.StatePending:
			c.Pending++
		case sim.StateKilled:
			c.Killed++
		case sim.StateTimeout:
			c.Timeout++
		}
		if j.FirstStart == sim.Never {
			c.NeverStarted++
		}
	}
	c.Unfinished = c.Running + c.Pending
	all := sc.all()
	s.WaitS = ComputeStats(all.wait)
	s.JCTS = ComputeStats(all.jct)
	s.Slowdown = ComputeStats(all.sd)
	s.Classes, _ = sc.groups(func(j *sim.Job) string { return classOf(j.Spec.Class) }, totalH)
	var queueSD, userSD map[string]float64
	s.PerQueue, queueSD = sc.groups(func(j *sim.Job) string { return QueueName(j.Spec.Queue) }, totalH)
	s.PerUser, userSD = sc.groups(func(j *sim.Job) string { return UserName(j.Spec.User) }, totalH)
	s.PerTeam, _ = sc.groups(func(j *sim.Job) string { return UserName(j.Spec.Team) }, totalH)
	s.Fairness.JainUsers = round(jainOfMeans(userSD))
	s.Fairness.JainQueues = round(jainOfMeans(queueSD))

	s.MakespanS = round(res.Makespan.Seconds())
	s.EndS = round(res.End.Seconds())
	if res.Cluster != nil {
		s.GPUCapacity = res.Cluster.NumGPUs()
	}
	if ms := res.Makespan.Seconds(); ms > 0 && s.GPUCapacity > 0 {
		s.GPUUtilization = round(res.BusyMilliSecondsToMakespan / (1000 * float64(s.GPUCapacity) * ms))
	}
	s.Events = res.Events
	s.SchedulingPoints = res.SchedulingPoints
	if wall > 0 {
		s.WallSeconds = round(wall.Seconds())
		s.EventsPerSecond = round(float64(res.Events) / wall.Seconds())
	}
	summarizeSharing(res, s)
	summarizeServing(res, s)
	summarizeFailures(res, s)
	summarizePower(res, s)
	summarizeDAG(res, s)
	summarizeStorage(res, s)
	summarizeTelemetry(res, s)
	return s
}

// jainOfMeans returns Jain's index of the groups' mean slowdowns (means holds
// only groups with completed jobs; 0 when it is empty). Groups are visited in
// sorted order so the float sum is deterministic.
func jainOfMeans(means map[string]float64) float64 {
	keys := make([]string, 0, len(means))
	for k := range means {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	xs := make([]float64, 0, len(keys))
	for _, k := range keys {
		xs = append(xs, means[k])
	}
	return Jain(xs)
}

// Jain returns Jain's fairness index (sum x)^2 / (n * sum x^2) of xs, or 0 when xs
// is empty or all zero.
func Jain(xs []float64) float64 {
	var s, s2 float64
	for _, x := range xs {
		s += x
		s2 += x * x
	}
	if len(xs) == 0 || s2 == 0 {
		return 0
	}
	return s * s / (float64(len(xs)) * s2)
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// ComputeStats sorts xs in place and returns mean, nearest-rank p50/p95/p99 and
// max, each rounded to the summary's precision. Empty input gives zeros.
func ComputeStats(xs []float64) Stats {
	if len(xs) == 0 {
		return Stats{}
	}
	sortFloats(xs)
	return Stats{
		Mean: round(mean(xs)),
		P50:  round(Percentile(xs, 50)),
		P95:  round(Percentile(xs, 95)),
		P99:  round(Percentile(xs, 99)),
		Max:  round(xs[len(xs)-1]),
	}
}

// Percentile returns the nearest-rank p-th percentile of sorted values: the value
// at rank ceil(p/100 * n) (1-based, at least 1). It returns 0 for no values.
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	r := int(math.Ceil(p / 100 * float64(n)))
	r = min(max(r, 1), n)
	return sorted[r-1]
}

// round rounds x to floatDecimals decimals; NaN and infinities become 0 so the
// JSON is always valid.
func round(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	f := math.Pow10(floatDecimals)
	r := math.Round(x*f) / f
	if r == 0 {
		return 0 // no negative zero
	}
	return r
}

// MarshalSummary returns the summary.json text: indented JSON with a trailing
// newline.
func MarshalSummary(s *Summary) ([]byte, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode summary: %w", err)
	}
	return append(b, '\n'), nil
}

// ReadSummary reads a summary.json. Errors name the file.
func ReadSummary(path string) (*Summary, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read summary: %w", err)
	}
	return ParseSummary(path, b)
}

// ParseSummary decodes summary.json text; name is used in errors.
func ParseSummary(name string, b []byte) (*Summary, error) {
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: invalid summary JSON: %w", name, err)
	}
	if s.Schema != "" && s.Schema != SummarySchema {
		return nil, fmt.Errorf("%s: schema %q is not supported (want %q)", name, s.Schema, SummarySchema)
	}
	if s.Classes == nil {
		s.Classes = map[string]GroupSummary{}
	}
	if s.PerQueue == nil {
		s.PerQueue = map[string]GroupSummary{}
	}
	return &s, nil
}
