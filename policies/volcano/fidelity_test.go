package volcano

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// The fidelity fixtures (testdata/fidelity/<name>/) hold what the real Volcano
// scheduler (vc-scheduler v1.10.0 on kube-apiserver v1.34, recorded by `make
// fidelity-volcano`, internal/volcanofid) did with a set of jobs:
//
//	fixture.yaml            nodes, GPUs per node, time scale, and the volcano
//	                        policy params the scheduler configuration was made from
//	jobs.csv                the jobs (simulated seconds)
//	volcano-scheduler.conf  the configuration vc-scheduler ran with
//	recorded.csv            one row per run of each job: pods created, gang
//	                        bound, last pod ended (simulated seconds from T0),
//	                        evicted, nodes, PodGroup creation second and UID
//	recorded.meta           versions, time scale, schedule period, grace period,
//	                        vc-scheduler's session grid (fitted from its log)
//	want.yaml               optional: the agreement the test requires
//
// TestVolcanoFidelity replays each fixture without any daemon. Every job is
// submitted when its gang was complete in vc-scheduler's cache (cached_s:
// its PodGroup and last pod added, from the scheduler's log). The jobs of one flood (same submit time in jobs.csv) arrive
// together, at the latest of those times, in Volcano's tie order for jobs
// created in the same second: PodGroup UID (JobOrderFn's last key). Each run
// lasts its recorded length (last end - start: the duration plus the fake
// kubelet's latency). The policy runs its sessions at vc-scheduler's logged
// session instants (sessions.csv), and a run's start is the session that
// bound it (see decided below). It then requires, with P the configured
// schedule period:
//
//   - the same start order: no two runs that Volcano started in one order and
//     gpusim in the other, each by more than P;
//   - per-queue GPUs within one scheduling period: for each queue, the GPUs
//     it has been allocated up to time t (every run's start counts its GPUs)
//     and those it has released up to t (every run's end), in gpusim, lie
//     between Volcano's at t-P and at t+P: both curves are Volcano's shifted
//     by at most one period. The GPUs the queue holds (allocated - released)
//     then lie between Volcano's allocated(t-P) - released(t+P) and
//     allocated(t+P) - released(t-P). (Comparing the held GPUs directly
//     would fail whenever one job starts up to P earlier and another ends up
//     to P later in gpusim: the overlap is a value Volcano never shows.)

// cacheLag is how long, in simulated seconds at time scale 0.5 (25 ms real),
// a created pod takes to reach vc-scheduler's cache (its informer's watch),
// for recordings without cached_s: the recorder notes the creation when the
// API call returns, the scheduler sees it later.
const cacheLag = 0.05

// volcanoFixture is fixture.yaml (its params stay a YAML node for the policy).
type volcanoFixture struct {
	Nodes       int       `yaml:"nodes"`
	GPUsPerNode int32     `yaml:"gpusPerNode"`
	TimeScale   float64   `yaml:"timeScale"`
	Params      yaml.Node `yaml:"params"`
}

// fidelityWant is want.yaml: agreement a fixture may miss by (default 0).
type fidelityWant struct {
	MaxInversions      int `yaml:"maxInversions"`
	MaxQueueViolations int `yaml:"maxQueueViolations"`
}

// vcRun is one row of recorded.csv.
type vcRun struct {
	run                 int
	evicted             bool
	created, start, end float64
	pgSecond            int64
	pgUID               string
}

// stepCurve is a step function of time: value changes (time, +/- GPUs).
type stepCurve []struct{ t, d float64 }

// cum returns the GPUs started (sign +1) or released (sign -1) up to and
// including time t.
func (c stepCurve) cum(t float64, sign float64) float64 {
	v := 0.0
	for _, s := range c {
		if s.t <= t+1e-9 && s.d*sign > 0 {
			v += s.d * sign
		}
	}
	return v
}

func (c stepCurve) sorted() stepCurve {
	slices.SortStableFunc(c, func(a, b struct{ t, d float64 }) int { return cmp.Compare(a.t, b.t) })
	return c
}

// queueRecorder records each run's start and the GPUs each queue holds.
type queueRecorder struct {
	*Volcano
	starts map[string][]float64
	curves map[string]stepCurve
}

func (r *queueRecorder) Observe(v *sim.View, e sim.Event) {
	j := v.Job(e.Job)
	g := float64(j.Spec.TotalGPUs())
	q := j.Spec.Queue
	switch e.Kind {
	case sim.EvStart:
		id := string(j.Spec.ID)
		r.starts[id] = append(r.starts[id], e.Time.Seconds())
		r.curves[q] = append(r.curves[q], struct{ t, d float64 }{e.Time.Seconds(), g})
	case sim.EvFinish, sim.EvPreempt, sim.EvKill, sim.EvTimeout:
		r.curves[q] = append(r.curves[q], struct{ t, d float64 }{e.Time.Seconds(), -g})
	}
}

// vcResult is the agreement of one fixture.
type vcResult struct {
	runs, within, inversions, queueViolations int
	restarts                                  [2]int // Volcano's, gpusim's
	meanWaitVC, meanWaitSim, maxDiff          float64
	notes                                     []string
	lines                                     []string // every run's starts
}

// replayVolcano replays fixture dir in gpusim and compares with the recording.
// With grid the policy keeps its own session grid (multiples of the period)
// instead of vc-scheduler's logged sessions: the measured effect of that
// known difference.
func replayVolcano(t *testing.T, dir string, grid bool) vcResult {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "fixture.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var fx volcanoFixture
	if err := yaml.Unmarshal(b, &fx); err != nil {
		t.Fatalf("%s/fixture.yaml: %v", dir, err)
	}
	p, err := ParamsFromYAML(&fx.Params)
	if err != nil {
		t.Fatalf("%s/fixture.yaml: %v", dir, err)
	}
	period := time1s(p)
	// vc-scheduler's logged sessions, when recorded: the policy runs its
	// sessions at exactly those instants.
	var sessions []float64
	var replay []sim.Time
	if b, err := os.ReadFile(filepath.Join(dir, "sessions.csv")); err == nil {
		lines := strings.Fields(string(b))
		for _, l := range lines[1:] {
			sessions = append(sessions, simtest.Atof(t, l))
			if !grid {
				replay = append(replay, sim.Time(sim.Seconds(simtest.Atof(t, l))))
			}
		}
	}
	// A run starts, for the comparison, at the session that bound it: the
	// last session opened at or before its pods were bound. A session decides
	// on the snapshot taken when it opens (framework.OpenSession) and holds
	// the resources from then on in its cache; the bind lands later, after
	// the session's run time and the API round trip (up to 1 s of simulated
	// time on this loaded machine).
	decided := func(bound float64) float64 {
		if i := sort.SearchFloat64s(sessions, bound+1e-9) - 1; i >= 0 {
			return sessions[i]
		}
		return bound
	}

	rc, rrows := simtest.ReadCSV(t, filepath.Join(dir, "recorded.csv"))
	runs := map[string][]vcRun{}
	// The recorded grace period starts when the kubelets' stand-in sees an
	// evicted pod's deletion, after Volcano's evict calls (UpdateStatus,
	// Delete) and the watch; gpusim's starts at the session that evicts.
	// The replay adds the measured mean lag to evictionGracePeriod.
	var lag float64
	var evictions int
	for _, r := range rrows {
		vr := vcRun{run: int(simtest.Atof(t, r[rc["run"]])), evicted: r[rc["evicted"]] == "1",
			created: simtest.Atof(t, r[rc["created_s"]]) + cacheLag*fx.TimeScale/0.5, start: decided(simtest.Atof(t, r[rc["start_s"]])), end: simtest.Atof(t, r[rc["end_s"]]),
			pgSecond: int64(simtest.Atof(t, r[rc["pg_created_s"]])), pgUID: r[rc["pg_uid"]]}
		if k, ok := rc["cached_s"]; ok && r[k] != "" {
			// when vc-scheduler's cache had the PodGroup and all its pods
			vr.created = max(simtest.Atof(t, r[k]), vr.created-cacheLag*fx.TimeScale/0.5)
		}
		if k, ok := rc["evict_seen_s"]; ok && vr.evicted && r[k] != "" && !grid {
			seen := simtest.Atof(t, r[k])
			lag += seen - decided(seen)
			evictions++
		}
		runs[r[rc["id"]]] = append(runs[r[rc["id"]]], vr)
	}
	if evictions > 0 {
		g := sim.Seconds(30)
		if p.EvictionGracePeriod != nil {
			g = sim.Duration(*p.EvictionGracePeriod)
		}
		d := policies.Dur(g + sim.Seconds(lag/float64(evictions)))
		p.EvictionGracePeriod = &d
	}
	pol, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	pol.replaySessions = replay
	jc, jrows := simtest.ReadCSV(t, filepath.Join(dir, "jobs.csv"))
	type jobRow struct {
		spec    sim.JobSpec
		nominal float64
	}
	var jobs []jobRow
	class := map[string]string{}    // job id -> its jobs.csv row without the id
	arrive := map[float64]float64{} // nominal submit -> latest gang completion of that flood
	for _, r := range jrows {
		id := r[jc["id"]]
		rs := runs[id]
		if len(rs) == 0 {
			t.Fatalf("%s: job %s not in recorded.csv", dir, id)
		}
		class[id] = strings.Join(slices.Delete(slices.Clone(r), jc["id"], jc["id"]+1), ",")
		slices.SortFunc(rs, func(a, b vcRun) int { return a.run - b.run })
		last := rs[len(rs)-1]
		sp := sim.JobSpec{ID: sim.JobID(id), Queue: r[jc["queue"]], Priority: int32(simtest.Atof(t, r[jc["priority"]])),
			Replicas: int32(simtest.Atof(t, r[jc["replicas"]])), GPUsPerReplica: int32(simtest.Atof(t, r[jc["gpus"]])), GPUMilli: sim.WholeGPU,
			CPUMilli: int64(simtest.Atof(t, r[jc["cpu_milli"]])), MemoryMiB: int64(simtest.Atof(t, r[jc["memory_mib"]])),
			Duration: sim.Seconds(last.end - last.start)}
		nominal := simtest.Atof(t, r[jc["submit_s"]])
		arrive[nominal] = max(arrive[nominal], rs[0].created)
		jobs = append(jobs, jobRow{sp, nominal})
	}
	// Volcano's order for jobs created in one second: PodGroup UID.
	slices.SortStableFunc(jobs, func(a, b jobRow) int {
		ra, rb := runs[string(a.spec.ID)][0], runs[string(b.spec.ID)][0]
		return cmp.Or(cmp.Compare(a.nominal, b.nominal), cmp.Compare(ra.pgSecond, rb.pgSecond), strings.Compare(ra.pgUID, rb.pgUID))
	})
	specs := make([]sim.JobSpec, len(jobs))
	for i, j := range jobs {
		j.spec.Submit = sim.Time(sim.Seconds(arrive[j.nominal]))
		specs[i] = j.spec
	}
	// Volcano's job order falls back to the PodGroup's creation second: jobs
	// submitted at different times must fall in different seconds (the
	// fixtures space them by 1 s of real time), or the replay's order is not
	// Volcano's.
	for i := 1; i < len(jobs); i++ {
		a, b := runs[string(jobs[i-1].spec.ID)][0], runs[string(jobs[i].spec.ID)][0]
		if jobs[i-1].nominal != jobs[i].nominal && a.pgSecond >= b.pgSecond {
			t.Errorf("%s: %s and %s were submitted at different times but created in the same second (%d, %d)",
				dir, jobs[i-1].spec.ID, jobs[i].spec.ID, a.pgSecond, b.pgSecond)
		}
	}

	nodes := make([]sim.NodeSpec, fx.Nodes)
	for i := range nodes {
		// kubetest.CreateGPUNode: 64 CPUs, 512 GiB
		nodes[i] = sim.NodeSpec{Name: fmt.Sprintf("n%d", i), Pool: "p", GPUModel: "h100", GPUs: fx.GPUsPerNode,
			CPUMilli: 64000, MemoryMiB: 512 << 10, NVLinkSize: fx.GPUsPerNode, PCIeSize: 2, SocketSize: 4,
			NVLinkDomain: -1, Leaf: int32(i / 4)}
	}
	rec := &queueRecorder{Volcano: pol, starts: map[string][]float64{}, curves: map[string]stepCurve{}}
	res := simtest.RunConfig(t, sim.Config{Cluster: simtest.Cluster(t, nodes), Jobs: specs, Policy: rec, Seed: 1})
	if replayVolcanoDebug {
		t.Log(simtest.Schedule(res))
	}
	return compareVolcano(specs, runs, rec, period, class)
}

var replayVolcanoDebug bool

// time1s is the policy's schedule period in seconds.
func time1s(p Params) float64 {
	if p.SchedulePeriod == nil {
		return 1
	}
	return sim.Duration(*p.SchedulePeriod).Seconds()
}

// compareVolcano computes the agreement (see the comment at the top). Jobs
// with the same jobs.csv row but for the id are interchangeable: Volcano
// places them on tied nodes at random (util.SelectBestNode), so which of them
// a later reclaim or preemption hits is random too. Within such a class the
// jobs are paired in the order of their last start, then their first start,
// in each run, and the pairs are compared.
func compareVolcano(specs []sim.JobSpec, runs map[string][]vcRun, rec *queueRecorder, P float64, class map[string]string) vcResult {
	var r vcResult
	byClass := map[string][]string{}
	for _, sp := range specs {
		byClass[class[string(sp.ID)]] = append(byClass[class[string(sp.ID)]], string(sp.ID))
	}
	byStarts := func(starts func(string) []float64) func(a, b string) int {
		key := func(id string) (last, first float64) {
			st := starts(id)
			if len(st) == 0 {
				return math.Inf(1), math.Inf(1)
			}
			return st[len(st)-1], st[0]
		}
		return func(a, b string) int {
			la, fa := key(a)
			lb, fb := key(b)
			return cmp.Or(cmp.Compare(la, lb), cmp.Compare(fa, fb), strings.Compare(a, b))
		}
	}
	partner := map[string]string{} // Volcano's job -> gpusim's
	for _, ids := range byClass {
		vc, gs := slices.Clone(ids), slices.Clone(ids)
		slices.SortFunc(vc, byStarts(func(id string) []float64 {
			var st []float64
			for _, run := range runs[id] {
				st = append(st, run.start)
			}
			return st
		}))
		slices.SortFunc(gs, byStarts(func(id string) []float64 { return rec.starts[id] }))
		for i := range vc {
			partner[vc[i]] = gs[i]
		}
	}
	type pair struct {
		name    string
		vc, sim float64
	}
	var starts []pair
	vcCurves := map[string]stepCurve{}
	for _, sp := range specs {
		id := string(sp.ID)
		rs, ss := runs[id], rec.starts[partner[id]]
		r.restarts[0] += len(rs) - 1
		r.restarts[1] += max(len(ss)-1, 0)
		g := float64(sp.TotalGPUs())
		for k, run := range rs {
			vcCurves[sp.Queue] = append(vcCurves[sp.Queue], struct{ t, d float64 }{run.start, g}, struct{ t, d float64 }{run.end, -g})
			gs := math.Inf(1)
			if k < len(ss) {
				gs = ss[k]
			}
			name := fmt.Sprintf("%s#%d", id, k)
			if partner[id] != id {
				name = fmt.Sprintf("%s#%d (gpusim %s)", id, k, partner[id])
			}
			starts = append(starts, pair{name, run.start, gs})
			d := math.Abs(gs - run.start)
			r.runs++
			r.maxDiff = max(r.maxDiff, d)
			r.lines = append(r.lines, fmt.Sprintf("%s Volcano %.3f gpusim %.3f", name, run.start, gs))
			if d <= P {
				r.within++
			} else {
				r.notes = append(r.notes, fmt.Sprintf("%s Volcano %.1f gpusim %.1f", name, run.start, gs))
			}
			if k == 0 {
				r.meanWaitVC += run.start - sp.Submit.Seconds()
				r.meanWaitSim += gs - sp.Submit.Seconds()
			}
		}
		if len(ss) > len(rs) {
			r.notes = append(r.notes, fmt.Sprintf("%s: %d starts in gpusim, %d runs in Volcano", id, len(ss), len(rs)))
		}
	}
	for i := range starts {
		for k := range starts {
			if starts[i].vc < starts[k].vc-P && starts[i].sim > starts[k].sim+P {
				r.inversions++
				r.notes = append(r.notes, fmt.Sprintf("inversion: %s before %s in Volcano (%.1f, %.1f), after in gpusim (%.1f, %.1f)",
					starts[i].name, starts[k].name, starts[i].vc, starts[k].vc, starts[i].sim, starts[k].sim))
			}
		}
	}
	r.meanWaitVC /= float64(len(specs))
	r.meanWaitSim /= float64(len(specs))
	queues := map[string]bool{}
	for q := range vcCurves {
		queues[q] = true
	}
	for q := range rec.curves {
		queues[q] = true
	}
	for _, q := range slices.Sorted(func(yield func(string) bool) {
		for q := range queues {
			if !yield(q) {
				return
			}
		}
	}) {
		vc, gs := vcCurves[q].sorted(), rec.curves[q].sorted()
		var samples []float64
		for _, c := range [...]stepCurve{vc, gs} {
			for _, s := range c {
				samples = append(samples, s.t, s.t-1e-6)
			}
		}
		bad := 0
		for _, s := range samples {
			for _, sign := range [...]float64{1, -1} {
				g, lo, hi := gs.cum(s, sign), vc.cum(s-P, sign), vc.cum(s+P, sign)
				if g < lo-1e-9 || g > hi+1e-9 {
					if bad == 0 {
						what := map[float64]string{1: "started", -1: "released"}[sign]
						r.notes = append(r.notes, fmt.Sprintf("queue %s at %.2f s: gpusim has %s %v GPUs, Volcano %v..%v within ±%v s", q, s, what, g, lo, hi, P))
					}
					bad++
				}
			}
		}
		if bad > 0 {
			r.queueViolations++
		}
	}
	return r
}

func TestVolcanoFidelity(t *testing.T) {
	files, err := filepath.Glob("testdata/fidelity/*/recorded.csv")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fidelity fixtures: %v", err)
	}
	t.Logf("| fixture | runs | within 1 period | inversions | queues off | restarts Volcano/gpusim | mean wait Volcano | mean wait gpusim | max diff |")
	t.Logf("(in brackets: the replay on gpusim's fixed session grid instead of vc-scheduler's logged sessions)")
	for _, f := range files {
		dir := filepath.Dir(f)
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			if v := simtest.ReadMeta(t, filepath.Join(dir, "recorded.meta"))["volcano_version"]; v == "" {
				t.Errorf("%s/recorded.meta names no volcano_version", dir)
			}
			r := replayVolcano(t, dir, false)
			g := replayVolcano(t, dir, true)
			var want fidelityWant
			if b, err := os.ReadFile(filepath.Join(dir, "want.yaml")); err == nil {
				if err := yaml.Unmarshal(b, &want); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("| %s | %d | %d (%d) | %d (%d) | %d (%d) | %d/%d | %.1f s | %.1f s (%.1f s) | %.1f s (%.1f s) |", name, r.runs, r.within, g.within,
				r.inversions, g.inversions, r.queueViolations, g.queueViolations,
				r.restarts[0], r.restarts[1], r.meanWaitVC, r.meanWaitSim, g.meanWaitSim, r.maxDiff, g.maxDiff)
			if testing.Verbose() {
				for _, n := range append(r.lines, r.notes...) {
					t.Log(n)
				}
			}
			if r.inversions > want.MaxInversions || r.queueViolations > want.MaxQueueViolations || r.restarts[0] != r.restarts[1] {
				t.Errorf("%d inversions (want <= %d), %d queues off (want <= %d), restarts Volcano %d gpusim %d:\n%s",
					r.inversions, want.MaxInversions, r.queueViolations, want.MaxQueueViolations, r.restarts[0], r.restarts[1], strings.Join(r.notes, "\n"))
			}
		})
	}
}
