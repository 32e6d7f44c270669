package kueue

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/internal/kueuefid"
	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// The Kueue fidelity fixtures (testdata/fidelity/<name>/ recorded with Kueue
// v0.17.0, testdata/fidelity-v0.16.2/<name>/ with v0.16.2; format in package
// internal/kueuefid) hold what the real Kueue controller (recorded by
// `make fidelity-kueue`, KUEUE_VERSION picks the version) did with a set of standalone Workloads. The
// replay below runs gpusim's kueue policy on the same manifests and jobs,
// with no daemon, playing the recording's measured timing (replayFidelity):
// every job is submitted when the recorder created its Workload, runs its
// recorded length once admitted, and keeps its quota for the recorded lag
// after each eviction. The cluster has a node per
// pod, so placement never delays an admission (the recording has no nodes
// either: the driver runs an admitted Workload at once).
//
// It compares, per fixture: the set of jobs admitted, the set of jobs
// evicted and the number of evictions, the order of all admissions that
// both made, and every admission's time (run by run).

// fidelityWant is want.yaml: the agreement a fixture must reach.
type fidelityWant struct {
	// Tolerance (seconds) for each admission time: one scheduling cycle
	// plus the driver's latency (docs/fidelity.md).
	Tolerance float64 `yaml:"tolerance"`
	// MaxOff is the most admissions that may differ by more than Tolerance.
	MaxOff int `yaml:"maxOff"`
	// MaxInversions is the most pairs of admissions that Kueue made more
	// than orderGap apart and gpusim in the opposite order.
	MaxInversions int `yaml:"maxInversions"`
	// EvictionsDiffer allows different evicted sets or counts.
	EvictionsDiffer bool `yaml:"evictionsDiffer"`
	// NominalEvictions, when set, is how many evictions gpusim makes with
	// the nominal timing (duration_s, evictionGracePeriod) instead of the
	// recorded one: on the race fixtures it differs from Kueue's count,
	// which shows that the recording's timing decides the race.
	NominalEvictions *int `yaml:"nominalEvictions"`
}

// orderGap is how far apart (s) two of Kueue's admissions must be for their
// order to count: closer ones are one requeue batch's consecutive cycles,
// whose order a re-recording changed (hierarchical: l9 9 ms before l8),
// and the driver's latency was at most 0.38 s.
const orderGap = 0.5

// replayRun is one admission in gpusim.
type replayRun struct {
	admitted float64
	evicted  float64 // when Kueue's eviction was decided (NaN: not evicted)
}

// kueueFidelity is a fixture's agreement.
type kueueFidelity struct {
	jobs                      int
	admittedSame, evictedSame bool
	evictionsKueue            int
	evictionsSim              int
	orderSame                 bool // the same sequence, gpusim's ties in Kueue's order
	inversions                int  // pairs more than orderGap apart in Kueue, reversed in gpusim
	admissions                int
	maxDiff                   float64
	runs                      []admissionDiff
	orderKueue, orderSim      []string
}

// admissionDiff is one admission (run) of a job in Kueue and in gpusim; a
// run only one of them made has NaN for the other.
type admissionDiff struct {
	id         string
	run        int
	kueue, sim float64
}

func (a admissionDiff) String() string {
	return fmt.Sprintf("%s run %d: Kueue %.3f gpusim %.3f", a.id, a.run, a.kueue, a.sim)
}

// runRecorder records gpusim's admissions and evictions per job. In the
// measured-timing replay it is also the kueue policy's replayGrace: each
// eviction of a job gets the grace that Kueue's eviction of the same number
// measured (released_s - evicted_s), or the policy's own grace once those
// run out.
type runRecorder struct {
	*Kueue
	runs    map[sim.JobRef][]replayRun
	graces  map[sim.JobID][]sim.Duration // recorded graces not yet used, in eviction order
	decided map[sim.JobRef][]sim.Time    // gpusim's evictions not yet carried out
	errs    []string
}

// grace is the kueue policy's replayGrace hook.
func (r *runRecorder) grace(j *sim.Job, now sim.Time) sim.Duration {
	r.decided[j.Ref] = append(r.decided[j.Ref], now)
	if gs := r.graces[j.Spec.ID]; len(gs) > 0 {
		r.graces[j.Spec.ID] = gs[1:]
		return gs[0]
	}
	return r.Kueue.grace
}

// popDecided returns when the eviction of j now carried out was decided.
func (r *runRecorder) popDecided(j sim.JobRef) float64 {
	ds := r.decided[j]
	if len(ds) == 0 {
		r.errs = append(r.errs, fmt.Sprintf("job %d evicted without a decision (replayGrace not called)", j))
		return math.NaN()
	}
	r.decided[j] = ds[1:]
	return ds[0].Seconds()
}

func (r *runRecorder) Observe(v *sim.View, e sim.Event) {
	t := e.Time.Seconds()
	switch e.Kind {
	case sim.EvStart:
		r.runs[e.Job] = append(r.runs[e.Job], replayRun{admitted: t, evicted: math.NaN()})
	case sim.EvEvict: // admitted and evicted before it started, in the instant it was admitted
		d := r.popDecided(e.Job)
		r.runs[e.Job] = append(r.runs[e.Job], replayRun{admitted: d, evicted: d})
	case sim.EvPreempt: // after the grace period that followed the eviction
		if rs := r.runs[e.Job]; len(rs) > 0 {
			rs[len(rs)-1].evicted = r.popDecided(e.Job)
		}
	}
	r.Kueue.Observe(v, e)
}

// replayFidelity replays fixture dir in gpusim and compares it with the
// recording. With measured, the replay plays the recording's measured
// timing, so that what is compared is Kueue's decisions: each job runs for
// its recorded length (finished_s - admitted_s of its run that finished)
// and each eviction's victim releases its quota after the lag recorded for
// that eviction (released_s - evicted_s). Without, each job runs its
// duration_s and every victim releases evictionGracePeriod after its
// eviction (the replay before issue 17's race fixtures; docs/fidelity.md
// gives both).
//
// reservation, when not empty, sets the policy's preemptorReservation
// ("true" or "false") whatever the fixture's params.yaml says.
func replayFidelity(t *testing.T, dir string, measured bool, reservation string) kueueFidelity {
	t.Helper()
	jobs, rec := readFixture(t, dir)
	return replayRecording(t, dir, jobs, rec, measured, reservation)
}

// readFixture reads a fixture's jobs and its recorded runs by job, in run order.
func readFixture(t *testing.T, dir string) ([]kueuefid.Job, map[string][]kueuefid.Run) {
	t.Helper()
	jobs, err := kueuefid.ReadJobs(filepath.Join(dir, "jobs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	recRuns, err := kueuefid.ReadRuns(filepath.Join(dir, "recorded.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rec := map[string][]kueuefid.Run{}
	for _, r := range recRuns {
		rec[r.ID] = append(rec[r.ID], r)
	}
	for _, rs := range rec {
		slices.SortFunc(rs, func(a, b kueuefid.Run) int { return a.Run - b.Run })
	}
	return jobs, rec
}

// replayRecording is replayFidelity on jobs and recording rec (fixture dir's
// params.yaml and manifests).
func replayRecording(t *testing.T, dir string, jobs []kueuefid.Job, rec map[string][]kueuefid.Run, measured bool, reservation string) kueueFidelity {
	t.Helper()
	return replayRecordingInstants(t, dir, jobs, rec, measured, reservation, measured && hasInstants(dir))
}

// replayRecordingInstants is replayRecording, playing the manager's instants
// (cycles.csv, seen.csv) only when instants is set.
func replayRecordingInstants(t *testing.T, dir string, jobs []kueuefid.Job, rec map[string][]kueuefid.Run, measured bool, reservation string, instants bool) kueueFidelity {
	t.Helper()
	// the jobs, submitted when the recorder created them
	var specs []sim.JobSpec
	pods := 0
	for _, j := range jobs {
		submit, dur := j.Submit, j.Duration
		if rs := rec[j.ID]; len(rs) > 0 {
			submit = rs[0].Created
		}
		for _, r := range rec[j.ID] {
			if measured && !math.IsNaN(r.Finished) {
				dur = r.Finished - r.Admitted
			}
		}
		specs = append(specs, sim.JobSpec{ID: sim.JobID(j.ID), Submit: sim.Time(sim.Seconds(submit)), Queue: j.Queue,
			GPUsPerReplica: j.GPUs, Replicas: j.Replicas, GPUMilli: sim.WholeGPU, Duration: sim.Seconds(dur), Priority: j.Priority})
		pods += int(j.Replicas)
	}
	slices.SortStableFunc(specs, func(a, b sim.JobSpec) int { return cmp.Compare(a.Submit, b.Submit) })
	pb, err := os.ReadFile(filepath.Join(dir, "params.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var n yaml.Node
	if err := yaml.Unmarshal(pb, &n); err != nil {
		t.Fatal(err)
	}
	if reservation != "" {
		setParam(n.Content[0], "preemptorReservation", reservation)
	}
	pol, err := policies.NewWithEnv("kueue", n.Content[0], policies.Env{BaseDir: dir})
	if err != nil {
		t.Fatalf("%s/params.yaml: %v", dir, err)
	}
	k := pol.(*Kueue)
	r := &runRecorder{Kueue: k, runs: map[sim.JobRef][]replayRun{}, graces: map[sim.JobID][]sim.Duration{}, decided: map[sim.JobRef][]sim.Time{}}
	k.replayGrace = r.grace
	for id, rs := range rec {
		for _, rr := range rs {
			if measured && !math.IsNaN(rr.Evicted) && !math.IsNaN(rr.Released) {
				r.graces[sim.JobID(id)] = append(r.graces[sim.JobID(id)], sim.Seconds(rr.Released-rr.Evicted))
			}
		}
	}
	if instants {
		cycles, seen := readInstants(t, dir)
		k.setReplayInstants(cycles, seen)
	}
	res := simtest.RunConfig(t, sim.Config{Cluster: simtest.Cluster(t, simtest.Nodes(pods, 8)), Jobs: specs, Policy: r, Seed: 1})
	if len(r.errs) > 0 {
		t.Fatal(strings.Join(r.errs, "\n"))
	}
	got := map[string][]replayRun{}
	for i := range res.Jobs {
		got[string(res.Jobs[i].Spec.ID)] = r.runs[res.Jobs[i].Ref]
	}
	return compareKueue(jobs, rec, got)
}

// hasInstants reports whether fixture dir's recording has the manager's
// instants (cycles.csv, seen.csv; internal/kueuefid): the measured replay
// then plays them (replayInstants), and a recording without them replays as
// before.
func hasInstants(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "cycles.csv"))
	return err == nil
}

// readInstants reads dir's cycles.csv and seen.csv: the recorded cycle
// starts, and when the manager saw each job finish (the recording's clock,
// which the replay's is).
func readInstants(t *testing.T, dir string) ([]sim.Time, func(j *sim.Job, now sim.Time) sim.Time) {
	t.Helper()
	cs, err := kueuefid.ReadCycles(filepath.Join(dir, "cycles.csv"))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := kueuefid.ReadSeen(filepath.Join(dir, "seen.csv"))
	if err != nil {
		t.Fatal(err)
	}
	cycles := make([]sim.Time, len(cs))
	for i, c := range cs {
		cycles[i] = sim.Time(sim.Seconds(c.Start))
	}
	finished := map[sim.JobID]sim.Time{}
	for _, s := range ss {
		if s.Event == "finished" {
			finished[sim.JobID(s.ID)] = sim.Time(sim.Seconds(s.At))
		}
	}
	return cycles, func(j *sim.Job, now sim.Time) sim.Time {
		if at, ok := finished[j.Spec.ID]; ok {
			return at
		}
		return now
	}
}

// setParam sets key to the scalar value in the params mapping m, replacing
// its value if the key is there.
func setParam(m *yaml.Node, key, value string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = &yaml.Node{Kind: yaml.ScalarNode, Value: value}
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &yaml.Node{Kind: yaml.ScalarNode, Value: value})
}

// compareKueue computes the agreement of a recording and a replay.
func compareKueue(jobs []kueuefid.Job, rec map[string][]kueuefid.Run, got map[string][]replayRun) kueueFidelity {
	f := kueueFidelity{jobs: len(jobs), admittedSame: true, evictedSame: true}
	type adm struct {
		id         string
		kueue, sim float64
	}
	var adms []adm
	for _, j := range jobs {
		rs, gs := rec[j.ID], got[j.ID]
		if (len(rs) > 0) != (len(gs) > 0) {
			f.admittedSame = false
		}
		ek, es := 0, 0
		for _, r := range rs {
			if !math.IsNaN(r.Evicted) {
				ek++
			}
		}
		for _, g := range gs {
			if !math.IsNaN(g.evicted) {
				es++
			}
		}
		f.evictionsKueue += ek
		f.evictionsSim += es
		if (ek > 0) != (es > 0) {
			f.evictedSame = false
		}
		for i := 0; i < max(len(rs), len(gs)); i++ {
			f.admissions++
			a := admissionDiff{id: j.ID, run: i + 1, kueue: math.NaN(), sim: math.NaN()}
			if i < len(rs) {
				a.kueue = rs[i].Admitted
			}
			if i < len(gs) {
				a.sim = gs[i].admitted
			}
			if d := math.Abs(a.kueue - a.sim); !math.IsNaN(d) {
				f.maxDiff = max(f.maxDiff, d)
			}
			f.runs = append(f.runs, a)
		}
		for i := 0; i < min(len(rs), len(gs)); i++ {
			id := j.ID
			if i > 0 {
				id = fmt.Sprintf("%s#%d", j.ID, i+1)
			}
			adms = append(adms, adm{id, rs[i].Admitted, gs[i].admitted})
		}
	}
	slices.SortStableFunc(adms, func(a, b adm) int { return cmp.Compare(a.kueue, b.kueue) })
	for _, x := range adms {
		f.orderKueue = append(f.orderKueue, x.id)
	}
	// gpusim's order; admissions at one virtual time keep Kueue's order.
	// Every admission that both made counts (a job's n-th run is "id#n").
	slices.SortStableFunc(adms, func(a, b adm) int { return cmp.Compare(a.sim, b.sim) })
	for _, x := range adms {
		f.orderSim = append(f.orderSim, x.id)
	}
	f.orderSame = slices.Equal(f.orderKueue, f.orderSim)
	for _, x := range adms {
		for _, y := range adms {
			if x.kueue+orderGap < y.kueue && x.sim > y.sim {
				f.inversions++
			}
		}
	}
	return f
}

// offCount counts the admissions whose times differ by more than tol or
// that only one of Kueue and gpusim made.
func (f *kueueFidelity) offCount(tol float64) (int, []string) {
	var off []string
	for _, a := range f.runs {
		if d := math.Abs(a.kueue - a.sim); math.IsNaN(d) || d > tol {
			off = append(off, a.String())
		}
	}
	return len(off), off
}

// TestKueueFidelity replays every recorded set: testdata/fidelity (Kueue
// v0.17.0) and testdata/fidelity-<version> (v0.16.2), one subtest per set
// named by the Kueue version its recorded.meta files give.
func TestKueueFidelity(t *testing.T) {
	// GPUSIM_KUEUEFID_DIR replays fixtures recorded elsewhere (a fresh
	// recording of copies, without touching the committed ones);
	// GPUSIM_KUEUEFID_PREEMPTOR_RESERVATION (true or false) replays every
	// fixture with that preemptorReservation, whatever its params.yaml says.
	if d := os.Getenv("GPUSIM_KUEUEFID_DIR"); d != "" {
		checkKueueFidelity(t, d, os.Getenv("GPUSIM_KUEUEFID_PREEMPTOR_RESERVATION"))
		return
	}
	for _, root := range fidelitySets(t) {
		t.Run(setVersion(t, root), func(t *testing.T) {
			checkKueueFidelity(t, root, os.Getenv("GPUSIM_KUEUEFID_PREEMPTOR_RESERVATION"))
		})
	}
}

// The committed fixtures set preemptorReservation: false (Kueue's
// re-targeting preemptor); gpusim's reservation model agrees with every one
// of them too, to the same want.yaml.
func TestKueueFidelityWithReservation(t *testing.T) {
	for _, root := range fidelitySets(t) {
		t.Run(setVersion(t, root), func(t *testing.T) {
			checkKueueFidelity(t, root, "true")
		})
	}
}

// fidelitySets are the committed fixture sets: testdata/fidelity and every
// testdata/fidelity-<version>.
func fidelitySets(t *testing.T) []string {
	t.Helper()
	more, err := filepath.Glob("testdata/fidelity-*")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"testdata/fidelity"}, more...)
}

// setVersion is the Kueue version (recorded.meta kueue_version) that
// recorded every fixture under root; a set named fidelity-<version> must
// have been recorded with that version.
func setVersion(t *testing.T, root string) string {
	t.Helper()
	metas, err := filepath.Glob(filepath.Join(root, "*", "recorded.meta"))
	if err != nil || len(metas) == 0 {
		t.Fatalf("%s: no recorded.meta: %v", root, err)
	}
	version := ""
	for _, f := range metas {
		m, err := kueuefid.ReadMeta(f)
		if err != nil {
			t.Fatal(err)
		}
		v := m["kueue_version"]
		if v == "" || (version != "" && v != version) {
			t.Fatalf("%s: kueue_version %q (the set's others: %q)", f, v, version)
		}
		version = v
	}
	if want, ok := strings.CutPrefix(filepath.Base(root), "fidelity-"); ok && want != version {
		t.Fatalf("%s: recorded with Kueue %s", root, version)
	}
	return version
}

// checkKueueFidelity replays every fixture under root (reservation: see
// replayFidelity) and checks its want.yaml.
func checkKueueFidelity(t *testing.T, root, reservation string) {
	files, err := filepath.Glob(filepath.Join(root, "*", "recorded.csv"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Kueue fidelity fixtures: %v", err)
	}
	t.Logf("%s:", root)
	t.Logf("| fixture | jobs | admitted same | evicted same (Kueue/gpusim evictions) | order same (inversions) | admissions | within tol | max |Δ| |")
	for _, file := range files {
		dir := filepath.Dir(file)
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			var want fidelityWant
			b, err := os.ReadFile(filepath.Join(dir, "want.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(b, &want); err != nil {
				t.Fatalf("%s/want.yaml: %v", dir, err)
			}
			if want.Tolerance <= 0 {
				t.Fatalf("%s/want.yaml: tolerance: must be > 0", dir)
			}
			f := replayFidelity(t, dir, true, reservation)
			off, offRuns := f.offCount(want.Tolerance)
			t.Logf("| %s | %d | %v | %v (%d/%d) | %v (%d) | %d | %d | %.2f s |", name, f.jobs, f.admittedSame, f.evictedSame,
				f.evictionsKueue, f.evictionsSim, f.orderSame, f.inversions, f.admissions, f.admissions-off, f.maxDiff)
			if !f.admittedSame {
				t.Errorf("admitted sets differ")
			}
			if !want.EvictionsDiffer && (!f.evictedSame || f.evictionsKueue != f.evictionsSim) {
				t.Errorf("evictions differ: Kueue %d, gpusim %d (same jobs: %v)", f.evictionsKueue, f.evictionsSim, f.evictedSame)
			}
			if f.inversions > want.MaxInversions {
				t.Errorf("%d admission-order inversions (want at most %d):\nKueue  %s\ngpusim %s", f.inversions, want.MaxInversions,
					strings.Join(f.orderKueue, " "), strings.Join(f.orderSim, " "))
			}
			if off > want.MaxOff {
				t.Errorf("%d admissions off by more than %.1f s (want at most %d):\n%s", off, want.Tolerance, want.MaxOff, strings.Join(offRuns, "\n"))
			}
			nom := replayFidelity(t, dir, false, reservation)
			nomOff, _ := nom.offCount(want.Tolerance)
			t.Logf("  nominal timing: admitted same %v, evicted same %v (%d/%d), order same %v (%d), within tol %d/%d, max |Δ| %.2f s",
				nom.admittedSame, nom.evictedSame, nom.evictionsKueue, nom.evictionsSim, nom.orderSame, nom.inversions,
				nom.admissions-nomOff, nom.admissions, nom.maxDiff)
			if want.NominalEvictions != nil && nom.evictionsSim != *want.NominalEvictions {
				t.Errorf("with nominal timing gpusim made %d evictions, want %d", nom.evictionsSim, *want.NominalEvictions)
			}
			if testing.Verbose() {
				for _, a := range f.runs {
					t.Log(a)
				}
			}
		})
	}
}

// compareKueue on a hand-worked recording: a is admitted, evicted at 5 s and
// admitted again; b and c are admitted once.
func TestCompareKueue(t *testing.T) {
	nan := math.NaN()
	jobs := []kueuefid.Job{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	rec := map[string][]kueuefid.Run{
		"a": {{ID: "a", Run: 1, Admitted: 0.1, Evicted: 5}, {ID: "a", Run: 2, Admitted: 30.2, Evicted: nan}},
		"b": {{ID: "b", Run: 1, Admitted: 5.05, Evicted: nan}},
		"c": {{ID: "c", Run: 1, Admitted: 6.0, Evicted: nan}},
	}
	got := map[string][]replayRun{
		"a": {{admitted: 0, evicted: 5}, {admitted: 31.5, evicted: nan}},
		"b": {{admitted: 5, evicted: nan}},
		"c": {{admitted: 5, evicted: nan}}, // at b's virtual time: Kueue's order kept
	}
	f := compareKueue(jobs, rec, got)
	if !f.admittedSame || !f.evictedSame || f.evictionsKueue != 1 || f.evictionsSim != 1 || !f.orderSame || f.inversions != 0 || f.admissions != 4 {
		t.Fatalf("got %+v", f)
	}
	if math.Abs(f.maxDiff-1.3) > 1e-9 {
		t.Fatalf("max diff %v, want 1.3", f.maxDiff)
	}
	if off, runs := f.offCount(1.0); off != 1 || !strings.HasPrefix(runs[0], "a run 2:") {
		t.Fatalf("off %d %v, want a's second run only (c is exactly 1.0 s early)", off, runs)
	}
	// c before b in gpusim; a not evicted and admitted once
	got["c"] = []replayRun{{admitted: 4, evicted: nan}}
	got["a"] = []replayRun{{admitted: 0, evicted: nan}}
	f = compareKueue(jobs, rec, got)
	if !f.admittedSame || f.evictedSame || f.evictionsSim != 0 || f.orderSame || f.inversions != 1 {
		t.Fatalf("got %+v", f) // b (5.05) and c (6.0) are 0.95 s apart in Kueue: an inversion
	}
	if off, _ := f.offCount(1.0); off != 2 { // a's run 2 missing, c 2 s early
		t.Fatalf("off %d, want 2", off)
	}
	// b never admitted
	got["b"] = nil
	if f = compareKueue(jobs, rec, got); f.admittedSame {
		t.Fatalf("got %+v", f)
	}
}

// The replay follows the recorded timing, not the nominal one: the race of
// priority-race, hand-worked. In the recording, l2 was released 5.049 s
// after its eviction at 10.096 s, so h2 (10 s) ran from 15.155 to 25.156,
// past m1's creation at 25.002, and Kueue evicted l3 and l1 for m1 (4
// evictions). Had the driver released l2 0.2 s sooner (at 14.945 s), h2
// would have ended at about 24.95 s, before m1 arrived, and m1 would have
// needed l1's 4 GPUs only: 3 evictions. The replay of that edited recording
// makes 3, and of the recording as it is, 4.
func TestKueueReplayFollowsRecordedRace(t *testing.T) {
	dir := "testdata/fidelity/priority-race"
	for _, reservation := range []string{"true", "false"} { // both models of the preemptor agree
		jobs, rec := readFixture(t, dir)
		if f := replayRecording(t, dir, jobs, rec, true, reservation); f.evictionsSim != 4 {
			t.Fatalf("preemptorReservation %s, as recorded: gpusim made %d evictions, want 4", reservation, f.evictionsSim)
		}
		l2 := rec["l2"]
		if len(l2) < 1 || math.Abs(l2[0].Released-15.145) > 1e-9 || math.Abs(l2[0].Evicted-10.096) > 1e-9 {
			t.Fatalf("priority-race's recording changed (l2 run 1 %+v): rework this test", l2)
		}
		l2[0].Released = 14.945
		f := replayRecording(t, dir, jobs, rec, true, reservation)
		if f.evictionsSim != 3 {
			t.Fatalf("preemptorReservation %s, l2 released 0.2 s sooner: gpusim made %d evictions, want 3", reservation, f.evictionsSim)
		}
		for _, a := range f.runs {
			if a.id == "l3" && a.run == 2 && !math.IsNaN(a.sim) {
				t.Fatalf("preemptorReservation %s: l3 evicted and admitted again: %v", reservation, a)
			}
		}
	}
}

// fairshare-race's Kueue v0.16.2 recording (2026-11-27, with the manager's
// instants) turned on the manager's cycle timing at 37 s: Kueue's requeue
// batch of 37.069 s ran three cycles (37.069 to 37.087 s) that popped b5, b6
// and b7 and parked each (no room), a3's end reached the cache at 37.093 s,
// and the next cycle (37.119 s) had b8 alone as b's head and admitted it
// with a3's GPUs; b5 waited to 51.045 s. Played on those instants (one gpusim
// cycle per recorded cycle, a3's quota back when the manager saw its end,
// one head parked per cycle) the replay follows it: b8 run 2 within 0.03 s,
// no inversion, 5 evictions as Kueue. Without them gpusim runs the batch's
// cycles at once, parks b5..b8 together, and readmits b5 first at the next
// batch (about 38.04 s) and b8 last (52.02 s): 6 inversions.
func TestKueueReplayFairshareRaceV0162(t *testing.T) {
	dir := "testdata/fidelity-v0.16.2/fairshare-race"
	if !hasInstants(dir) {
		t.Fatalf("%s has no cycles.csv: rework this test", dir)
	}
	for _, reservation := range []string{"true", "false"} {
		jobs, rec := readFixture(t, dir)
		b8 := rec["b8"]
		if len(b8) != 2 || math.Abs(b8[1].Admitted-37.142) > 1e-9 {
			t.Fatalf("fairshare-race's v0.16.2 recording changed (b8 %+v): rework this test", b8)
		}
		f := replayRecordingInstants(t, dir, jobs, rec, true, reservation, true)
		if f.evictionsKueue != 5 || f.evictionsSim != 5 || f.inversions != 0 || math.Abs(simAdmission(f, "b8", 2)-37.142) > 0.05 {
			t.Fatalf("preemptorReservation %s, on the instants: evictions Kueue %d gpusim %d, %d inversions, b8 run 2 at %.3f; want 5, 5, 0, about 37.142",
				reservation, f.evictionsKueue, f.evictionsSim, f.inversions, simAdmission(f, "b8", 2))
		}
		f = replayRecordingInstants(t, dir, jobs, rec, true, reservation, false)
		if f.inversions != 6 || simAdmission(f, "b5", 2) >= simAdmission(f, "b8", 2) || simAdmission(f, "b8", 2) < 52 {
			t.Fatalf("preemptorReservation %s, without the instants: %d inversions, b5 run 2 at %.3f, b8 run 2 at %.3f; want 6, b5 first, b8 after 52 s",
				reservation, f.inversions, simAdmission(f, "b5", 2), simAdmission(f, "b8", 2))
		}
	}
}

// simAdmission is gpusim's admission time (s, to the ms) of run n of job
// id in f, NaN if gpusim did not make it.
func simAdmission(f kueueFidelity, id string, n int) float64 {
	for _, a := range f.runs {
		if a.id == id && a.run == n {
			return math.Round(a.sim*1000) / 1000
		}
	}
	return math.NaN()
}

// The replay's instants (replayInstants), hand-worked on reclaim-never's
// manifests (two ClusterQueues of 8 GPUs in one cohort, requeue batch 1 s):
// x borrows all 16 GPUs from 0 to 10 s; y (8 GPUs, 1 s) finds no room and
// is parked until x's end requeues it, one batch later. Without instants y
// is admitted at 11.000 s. With the manager's instants x is admitted at the
// first recorded cycle (0.010 s) and ends at 10.010 s; the batch starts
// when the manager saw x's end, and y waits for the first recorded cycle
// after the batch: x seen at 10.020 s, batch 11.020 s, the cycle at 11.015
// s finds y still parked, the one at 11.030 s admits it; x seen at 10.012
// s, the 11.015 s cycle admits it. After the last recorded cycle the policy
// runs its cycles as usual (y at the batch, 11.020 s).
func TestKueueReplayInstants(t *testing.T) {
	dir := "testdata/fidelity/reclaim-never"
	admitY := func(cycles []float64, seenX float64) float64 {
		t.Helper()
		pb, err := os.ReadFile(filepath.Join(dir, "params.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var n yaml.Node
		if err := yaml.Unmarshal(pb, &n); err != nil {
			t.Fatal(err)
		}
		pol, err := policies.NewWithEnv("kueue", n.Content[0], policies.Env{BaseDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		k := pol.(*Kueue)
		if cycles != nil {
			cs := make([]sim.Time, len(cycles))
			for i, c := range cycles {
				cs[i] = sim.Time(sim.Seconds(c))
			}
			k.setReplayInstants(cs, func(j *sim.Job, now sim.Time) sim.Time {
				if j.Spec.ID == "x" {
					return sim.Time(sim.Seconds(seenX))
				}
				return now
			})
		}
		specs := []sim.JobSpec{
			{ID: "x", Submit: 0, Queue: "team-a", GPUsPerReplica: 16, Replicas: 1, GPUMilli: sim.WholeGPU, Duration: sim.Seconds(10)},
			{ID: "y", Submit: sim.Time(sim.Seconds(1)), Queue: "team-a", GPUsPerReplica: 8, Replicas: 1, GPUMilli: sim.WholeGPU, Duration: sim.Seconds(5)},
		}
		res := simtest.RunConfig(t, sim.Config{Cluster: simtest.Cluster(t, simtest.Nodes(2, 16)), Jobs: specs, Policy: k, Seed: 1})
		if x := res.Jobs[0].FirstStart.Seconds(); cycles != nil && x != cycles[0] {
			t.Fatalf("x admitted at %.3f, want the first cycle %.3f", x, cycles[0])
		}
		return math.Round(res.Jobs[1].FirstStart.Seconds()*1000) / 1000
	}
	cycles := []float64{0.010, 1.010, 11.015, 11.030, 11.050}
	for _, c := range []struct {
		name   string
		cycles []float64
		seenX  float64
		want   float64
	}{
		{"no instants", nil, 0, 11.000},
		{"x seen at 10.020", cycles, 10.020, 11.030},
		{"x seen at 10.012", cycles, 10.012, 11.015},
		{"cycles spent before x ends", cycles[:2], 10.020, 11.020},
	} {
		if got := admitY(c.cycles, c.seenX); got != c.want {
			t.Errorf("%s: y admitted at %.3f, want %.3f", c.name, got, c.want)
		}
	}
}
