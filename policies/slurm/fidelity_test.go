package slurm

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// The fidelity fixtures (testdata/fidelity/<name>/) hold what a real Slurm
// (scripts/fidelity-slurm.sh, `make fidelity-slurm`) did with a set of jobs:
//
//	slurm.conf     the fixture's slurm.conf lines (nodes, partitions, scheduler)
//	setup.sh       optional commands run before the first job (reservations)
//	jobs.csv       the jobs, in gpusim's native trace format (what was submitted)
//	params.yaml    the same configuration as slurm policy parameters
//	recorded.csv   one row per run of each job: real submit, eligible, start and
//	               end times (s from T0) and nodes, from jobcomp/filetxt
//	recorded.meta  Slurm version, where T0 fell in the wall-clock minute, when
//	               slurmctld started
//	want.yaml      the agreement the test requires (see fidelityWant)
//
// TestFidelity replays each fixture in gpusim without any daemon: every job is
// submitted at its recorded submit time, in Slurm's job id order, and runs for its recorded run time
// (the last run's end - start: sleep plus Slurm's launch and completion
// overhead, or the time Slurm let it run past its limit), and the policy gets
// the recording's clock (clockOffset = T0's second of the minute,
// controllerStart = slurmctld's start). It compares the first start of every
// job with Slurm's, with the tolerance of one scheduler interval (1 s:
// bf_interval=1 and Slurm's timestamps are whole seconds).

// bfThreadLag is how long after slurmctld's start its backfill cycles begin
// (the plugin loads, and the first cycle follows one bf_interval later): the
// cycles in the recordings fall about 0.1 s past slurmctld's start in each
// second.
const bfThreadLag = 0.1

// fidelityWant is want.yaml: the agreement a fixture must reach.
type fidelityWant struct {
	// MaxOff is the most jobs whose first start may differ by more than 1 s.
	MaxOff int `yaml:"maxOff"`
	// MaxInversions is the most pairs of jobs started in the other order
	// (both by more than 1 s).
	MaxInversions int `yaml:"maxInversions"`
	// SameNodes requires every job's first run on Slurm's nodes.
	SameNodes bool `yaml:"sameNodes"`
	// GridMaxOff and GridMaxInversions bound the replay on gpusim's own
	// grid of a fixture that has recorded instants (hasInstants).
	GridMaxOff        int `yaml:"gridMaxOff"`
	GridMaxInversions int `yaml:"gridMaxInversions"`
}

// recRun is one run of a job in recorded.csv.
type recRun struct {
	jobID, state             string
	submit, elig, start, end float64 // seconds from T0 (ms from slurmctld's log)
	nodes                    []string
}

// fidelityResult is the agreement of one fixture.
type fidelityResult struct {
	jobs, off, inversions      int
	restarts                   int // requeued jobs, whose last start is compared too
	sameNodes                  int
	meanWaitSlurm, meanWaitSim float64
	maxDiff                    float64
	offJobs                    []string
}

func atoi(t *testing.T, s string) int64 { return int64(simtest.Atof(t, s)) }

// runFidelity replays fixture dir in gpusim and compares with its recording,
// on the recorded instants where the fixture has them (replayInstants).
func runFidelity(t *testing.T, dir string) (fidelityResult, map[string]*sim.Job, map[string][]recRun, *firstNodes) {
	t.Helper()
	return replayFidelity(t, dir, false)
}

// hasInstants reports whether fixture dir holds the recorded instants
// (bfcycles.csv, schedpasses.csv, releases.csv).
func hasInstants(dir string) bool {
	for _, f := range []string{"bfcycles.csv", "schedpasses.csv", "releases.csv"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return false
		}
	}
	return true
}

// replayFidelity is runFidelity; with grid it ignores the recorded instants
// and replays on gpusim's own grid (bf_interval and batch_sched_delay from
// slurmctld's start, nodes free at a job's end).
func replayFidelity(t *testing.T, dir string, grid bool) (fidelityResult, map[string]*sim.Job, map[string][]recRun, *firstNodes) {
	t.Helper()
	// recorded runs
	rc, rrows := simtest.ReadCSV(t, filepath.Join(dir, "recorded.csv"))
	runs := map[string][]recRun{}
	for _, r := range rrows {
		rr := recRun{jobID: r[rc["jobid"]], state: r[rc["state"]], submit: simtest.Atof(t, r[rc["submit_s"]]), elig: simtest.Atof(t, r[rc["eligible_s"]]),
			start: simtest.Atof(t, r[rc["start_s"]]), end: simtest.Atof(t, r[rc["end_s"]])}
		if n := r[rc["nodes"]]; n != "" {
			rr.nodes = strings.Split(n, "|")
		}
		runs[r[rc["id"]]] = append(runs[r[rc["id"]]], rr)
	}
	for _, rs := range runs {
		slices.SortFunc(rs, func(a, b recRun) int { return cmp.Compare(a.start, b.start) })
	}
	// jobs: recorded submit, the last run's length
	jc, jrows := simtest.ReadCSV(t, filepath.Join(dir, "jobs.csv"))
	var specs []sim.JobSpec
	for _, r := range jrows {
		id := r[jc["id"]]
		rs := runs[id]
		if len(rs) == 0 {
			t.Fatalf("%s: job %s not in recorded.csv", dir, id)
		}
		last := rs[len(rs)-1]
		sp := sim.JobSpec{ID: sim.JobID(id), Submit: sim.Time(sim.Seconds(rs[0].submit)),
			GPUsPerReplica: int32(atoi(t, r[jc["gpus"]])), Replicas: 1, GPUMilli: sim.WholeGPU,
			Duration: sim.Seconds(last.end - last.start)}
		if k, ok := jc["replicas"]; ok && r[k] != "" {
			sp.Replicas = int32(atoi(t, r[k]))
		}
		if k, ok := jc["walltime_s"]; ok {
			sp.Walltime = sim.Seconds(float64(atoi(t, r[k])))
		}
		if k, ok := jc["cpu_milli"]; ok {
			sp.CPUMilli = atoi(t, r[k])
		}
		if k, ok := jc["queue"]; ok {
			sp.Queue = r[k]
		}
		if k, ok := jc["user"]; ok {
			sp.User = r[k]
		}
		if k, ok := jc["team"]; ok {
			sp.Team = r[k] // the Slurm account (sbatch -A)
		}
		specs = append(specs, sp)
	}
	// Slurm's job id order (jobs of one second are submitted concurrently)
	jobID := func(sp sim.JobSpec) int { n, _ := strconv.Atoi(runs[string(sp.ID)][0].jobID); return n }
	slices.SortStableFunc(specs, func(a, b sim.JobSpec) int { return jobID(a) - jobID(b) })
	// nodes: the fixture's slurm.conf NodeName line (n[0-N-1], 8 GPUs, 224 CPUs)
	b, err := os.ReadFile(filepath.Join(dir, "slurm.conf"))
	if err != nil {
		t.Fatal(err)
	}
	var nn int
	if _, err := fmt.Sscanf(string(b), "NodeName=n[0-%d]", &nn); err != nil {
		t.Fatalf("%s/slurm.conf: first line must be NodeName=n[0-N] ...: %v", dir, err)
	}
	nodes := make([]sim.NodeSpec, nn+1)
	for i := range nodes {
		nodes[i] = sim.NodeSpec{Name: fmt.Sprintf("n%d", i), Pool: "n", GPUModel: "h100", GPUs: 8,
			CPUMilli: 224000, MemoryMiB: 2000, NVLinkSize: 8, PCIeSize: 2, SocketSize: 4, NVLinkDomain: -1, Leaf: int32(i / 4)}
	}
	// params + the recording's clock
	pb, err := os.ReadFile(filepath.Join(dir, "params.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	meta := simtest.ReadMeta(t, filepath.Join(dir, "recorded.meta"))
	sec, _ := strconv.Atoi(meta["t0_second_of_minute"])
	ctld, _ := strconv.ParseFloat(meta["slurmctld_start_s"], 64)
	clock := fmt.Sprintf("\nclockOffset: %ds\ncontrollerUptime: %.1fs\nversion: %q\n", sec, max(-ctld-bfThreadLag, 0), meta["slurm_version"])
	if d, ok := meta["decay_start_s"]; ok {
		// priority/multifactor's decay thread (fixtures with slurmdbd)
		ds, _ := strconv.ParseFloat(d, 64)
		clock += fmt.Sprintf("calcUptime: %.3fs\n", max(-ds, 0))
	}
	var n yaml.Node
	if err := yaml.Unmarshal(append(pb, clock...), &n); err != nil {
		t.Fatal(err)
	}
	pol, err := policies.New("slurm", n.Content[0])
	if err != nil {
		t.Fatalf("%s/params.yaml: %v", dir, err)
	}
	c, err := sim.NewCluster(nodes)
	if err != nil {
		t.Fatal(err)
	}
	rec := &firstNodes{Slurm: pol.(*Slurm), nodes: map[sim.JobRef][]sim.NodeID{}, plans: map[int64]map[string]bfPlan{}}
	if !grid {
		replayInstants(t, dir, rec.Slurm, runs)
	}
	rec.Slurm.onReserve = func(now sim.Time, j *sim.Job, start, end sim.Time, nodes []sim.NodeID) {
		sec := int64(math.Floor(now.Seconds()))
		if rec.plans[sec] == nil {
			rec.plans[sec] = map[string]bfPlan{}
		}
		rec.plans[sec][string(j.Spec.ID)] = bfPlan{int64(math.Floor(start.Seconds())), int64(math.Floor(end.Seconds())), strings.Join(nodeNames(nodes), "|")}
	}
	res := simtest.RunConfig(t, sim.Config{Cluster: c, Jobs: specs, Policy: rec, Seed: 1})
	got := map[string]*sim.Job{}
	for i := range res.Jobs {
		got[string(res.Jobs[i].Spec.ID)] = &res.Jobs[i]
	}
	return compareFidelity(specs, got, rec.nodes, runs), got, runs, rec
}

// replayInstants sets the test hooks that replay a recording on its own
// instants (replay.go), from whichever of these files fixture dir has:
// bfcycles.csv (backfill cycles), schedpasses.csv (main-scheduler passes),
// releases.csv (when each node of each run was released). A node is released
// as long after the replay's end of the run as it was after Slurm's.
func replayInstants(t *testing.T, dir string, s *Slurm, runs map[string][]recRun) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "bfcycles.csv")); err == nil {
		cc, crows := simtest.ReadCSV(t, filepath.Join(dir, "bfcycles.csv"))
		for _, r := range crows {
			if x := simtest.Atof(t, r[cc["cycle_s"]]); x >= 0 {
				s.bfCycles = append(s.bfCycles, sim.Time(sim.Seconds(x)))
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "schedpasses.csv")); err == nil {
		pc, prows := simtest.ReadCSV(t, filepath.Join(dir, "schedpasses.csv"))
		s.schedPasses = []schedPass{}
		for _, r := range prows {
			if x := simtest.Atof(t, r[pc["pass_s"]]); x >= 0 {
				s.schedPasses = append(s.schedPasses, schedPass{sim.Time(sim.Seconds(x)), r[pc["kind"]] == "full"})
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "releases.csv")); err == nil {
		rc, rrows := simtest.ReadCSV(t, filepath.Join(dir, "releases.csv"))
		lags := map[string][]float64{} // Slurm job id|node -> lag of each run
		for _, r := range rrows {
			k := r[rc["jobid"]] + "|" + r[rc["node"]]
			run := int(atoi(t, r[rc["run"]]))
			for len(lags[k]) < run {
				lags[k] = append(lags[k], 0)
			}
			lags[k][run-1] = simtest.Atof(t, r[rc["release_s"]]) - simtest.Atof(t, r[rc["end_s"]])
		}
		used := map[string]int{}
		s.releaseAt = func(j *sim.Job, n sim.NodeID, end sim.Time) sim.Time {
			rs := runs[string(j.Spec.ID)]
			if len(rs) == 0 {
				return end
			}
			k := rs[0].jobID + "|" + fmt.Sprintf("n%d", n)
			i := used[k]
			used[k]++
			if i >= len(lags[k]) {
				return end
			}
			return end.Add(sim.Seconds(lags[k][i]))
		}
	}
}

// firstNodes records the nodes of each job's first run, and the association
// tree after each PriorityCalcPeriod step.
type firstNodes struct {
	*Slurm
	nodes map[sim.JobRef][]sim.NodeID
	calcs []calcSnap
	plans map[int64]map[string]bfPlan // backfill reservations by the tick's whole second, by job
}

// bfPlan is one backfill reservation: the will-run start and the slot's end
// in whole seconds, and the nodes (Slurm's names).
type bfPlan struct {
	start, end int64
	nodes      string
}

// calcSnap is the association tree after the calc step at time at.
type calcSnap struct {
	at    sim.Time
	assoc []assoc
}

func (f *firstNodes) Schedule(v *sim.View, pl *sim.Plan) error {
	err := f.Slurm.Schedule(v, pl)
	if f.Slurm.tree != nil && (len(f.calcs) == 0 || f.calcs[len(f.calcs)-1].at != f.Slurm.lastCalc) {
		f.calcs = append(f.calcs, calcSnap{f.Slurm.lastCalc, slices.Clone(f.Slurm.tree.a)})
	}
	return err
}

func (f *firstNodes) Observe(v *sim.View, e sim.Event) {
	if e.Kind == sim.EvStart {
		if _, ok := f.nodes[e.Job]; !ok {
			f.nodes[e.Job] = slices.Clone(v.Job(e.Job).Nodes)
		}
	}
	f.Slurm.Observe(v, e)
}

// compareFidelity counts the jobs whose first start differs by more than 1 s,
// the start-order inversions beyond 1 s, the jobs on the same nodes and the
// mean waits.
func compareFidelity(specs []sim.JobSpec, got map[string]*sim.Job, first map[sim.JobRef][]sim.NodeID, runs map[string][]recRun) fidelityResult {
	var r fidelityResult
	type pair struct{ slurm, sim float64 }
	starts := make([]pair, 0, len(specs))
	for _, sp := range specs {
		id := string(sp.ID)
		j, rs := got[id], runs[id]
		r.jobs++
		ss := rs[0].start
		gs := math.Inf(1)
		if j.FirstStart != sim.Never {
			gs = j.FirstStart.Seconds()
		}
		starts = append(starts, pair{ss, gs})
		d := math.Abs(gs - ss)
		r.maxDiff = max(r.maxDiff, d)
		if d > 1 {
			r.off++
			r.offJobs = append(r.offJobs, fmt.Sprintf("%s slurm %.1f gpusim %.1f", id, ss, gs))
		}
		if len(rs) > 1 {
			// a requeued job: its last run's start too (the requeue delay)
			ls, gl := rs[len(rs)-1].start, j.LastStart.Seconds()
			r.restarts++
			if math.Abs(gl-ls) > 1 {
				r.off++
				r.offJobs = append(r.offJobs, fmt.Sprintf("%s restart slurm %.1f gpusim %.1f", id, ls, gl))
			}
		}
		r.meanWaitSlurm += ss - sp.Submit.Seconds()
		r.meanWaitSim += gs - sp.Submit.Seconds()
		if slices.Equal(nodeNames(first[j.Ref]), rs[0].nodes) {
			r.sameNodes++
		}
	}
	for i := range starts {
		for k := range starts {
			if starts[i].slurm < starts[k].slurm-1 && starts[i].sim > starts[k].sim+1 {
				r.inversions++
			}
		}
	}
	r.meanWaitSlurm /= float64(r.jobs)
	r.meanWaitSim /= float64(r.jobs)
	return r
}

// nodeNames lists nodes as Slurm names them (n<k>),
// sorted and without repeats.
func nodeNames(nodes []sim.NodeID) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, fmt.Sprintf("n%d", n))
	}
	slices.SortFunc(out, func(a, b string) int {
		ia, _ := strconv.Atoi(a[1:])
		ib, _ := strconv.Atoi(b[1:])
		return ia - ib
	})
	return slices.Compact(out)
}

func TestFidelity(t *testing.T) {
	// GPUSIM_SLURMFID_DIR replays fixtures recorded elsewhere (a fresh
	// recording of copies, without touching the committed ones).
	root := "testdata/fidelity"
	if d := os.Getenv("GPUSIM_SLURMFID_DIR"); d != "" {
		root = d
	}
	dirs, err := filepath.Glob(filepath.Join(root, "*", "recorded.csv"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no fidelity fixtures: %v", err)
	}
	t.Logf("| fixture | jobs | within 1 s | inversions | same nodes | mean wait Slurm | mean wait gpusim | max diff |")
	for _, f := range dirs {
		dir := filepath.Dir(f)
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			r, _, _, _ := runFidelity(t, dir)
			var want fidelityWant
			if b, err := os.ReadFile(filepath.Join(dir, "want.yaml")); err == nil {
				if err := yaml.Unmarshal(b, &want); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("| %s | %d | %d | %d | %d | %.1f s | %.1f s | %.2f s |", name, r.jobs, r.jobs-r.off, r.inversions, r.sameNodes, r.meanWaitSlurm, r.meanWaitSim, r.maxDiff)
			if r.off > want.MaxOff {
				t.Errorf("%d jobs off by more than 1 s (want at most %d): %s", r.off, want.MaxOff, strings.Join(r.offJobs, "; "))
			}
			if r.inversions > want.MaxInversions {
				t.Errorf("%d start-order inversions (want at most %d)", r.inversions, want.MaxInversions)
			}
			if want.SameNodes && r.sameNodes != r.jobs {
				t.Errorf("%d of %d jobs on Slurm's nodes (want all)", r.sameNodes, r.jobs)
			}
			if !hasInstants(dir) {
				return
			}
			g, _, _, _ := replayFidelity(t, dir, true)
			t.Logf("| %s (grid) | %d | %d | %d | %d | %.1f s | %.1f s | %.2f s |", name, g.jobs, g.jobs-g.off, g.inversions, g.sameNodes, g.meanWaitSlurm, g.meanWaitSim, g.maxDiff)
			if g.off > want.GridMaxOff {
				t.Errorf("grid: %d jobs off by more than 1 s (want at most %d): %s", g.off, want.GridMaxOff, strings.Join(g.offJobs, "; "))
			}
			if g.inversions > want.GridMaxInversions {
				t.Errorf("grid: %d start-order inversions (want at most %d)", g.inversions, want.GridMaxInversions)
			}
		})
	}
}
