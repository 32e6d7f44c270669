package tiresias

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
	"github.com/gpusim/gpusim/traces"
)

// readCSV reads the named numeric columns of a CSV file (a fixture of the
// simulator's outputs) into one map per row.
func readCSV(t *testing.T, path string, cols ...string) []map[string]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	idx := map[string]int{}
	for i, h := range recs[0] {
		idx[h] = i
	}
	var out []map[string]float64
	for r, rec := range recs[1:] {
		m := map[string]float64{}
		for _, c := range cols {
			i, ok := idx[c]
			if !ok {
				t.Fatalf("%s: no column %q", path, c)
			}
			v, err := strconv.ParseFloat(rec[i], 64)
			if err != nil {
				t.Fatalf("%s:%d: %s: %v", path, r+2, c, err)
			}
			m[c] = v
		}
		out = append(out, m)
	}
	return out
}

// simParams are the tiresias parameters that reproduce each simulator
// --schedule (docs/tiresias.md "Against the Tiresias simulator"). The trace
// reader makes every GPU of a job its own one-GPU replica, so that a job is
// placeable exactly when its GPU count fits the free GPUs, as the simulator's
// resource counting (--scheme=count) has it.
var simParams = map[string]string{
	"sjf":        "mode: sjf\nplacement: first-fit",
	"dlas-gpu":   "accounting: simulator\nqueueOrder: running-first\nplacement: first-fit",
	"dlas-gpu-2": "accounting: simulator\nqueueOrder: running-first\npromoteKnob: 2\nplacement: first-fit",
}

// agreement compares gpusim with one fixture: the jobs whose first start and
// end equal the simulator's, and the largest difference in seconds.
type agreement struct {
	jobs, sameStart, sameEnd, samePreempt int
	maxErr                                float64
}

func compareWithSimulator(t *testing.T, trace, fixture string, nodes int, schedule string) agreement {
	t.Helper()
	specs, _, err := traces.ReadJobsWith(traces.FormatTiresias, trace, traces.ReadOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	want := readCSV(t, fixture, "job_id", "start_time", "end_time", "preempt")
	res := Run(t, Nodes(nodes, 4), newT(t, simParams[schedule]), specs...)
	got := map[string]*sim.Job{}
	for i := range res.Jobs {
		got[string(res.Jobs[i].Spec.ID)] = &res.Jobs[i]
	}
	a := agreement{jobs: len(want)}
	for _, w := range want {
		id := fmt.Sprint(w["job_id"])
		g := got[id]
		if g == nil {
			t.Fatalf("%s: job %s not in gpusim's result", fixture, id)
		}
		ds := math.Abs(g.FirstStart.Seconds() - w["start_time"])
		de := math.Abs(g.End.Seconds() - w["end_time"])
		if ds == 0 {
			a.sameStart++
		}
		if de == 0 {
			a.sameEnd++
		}
		if float64(g.Preempted) == w["preempt"] {
			a.samePreempt++
		}
		a.maxErr = max(a.maxErr, ds, de)
		if ds != 0 || de != 0 {
			t.Logf("%s job %s: gpusim start %g end %g, simulator %g %g", filepath.Base(fixture), id,
				g.FirstStart.Seconds(), g.End.Seconds(), w["start_time"], w["end_time"])
		}
	}
	return a
}

// TestAgainstTiresiasSimulator compares gpusim's tiresias with Tiresias's own
// simulator start for start and end for end: on the synthetic trace (always)
// and on the simulator's 60_job.csv when $TIRESIAS_60_JOB names it (the trace
// is not in this repository: the Tiresias repository has no licence).
func TestAgainstTiresiasSimulator(t *testing.T) {
	type run struct {
		trace, cluster, schedule string
		nodes                    int
	}
	runs := []run{
		{"synthetic", "n4g4", "sjf", 4},
		{"synthetic", "n4g4", "dlas-gpu", 4},
		{"synthetic", "n4g4", "dlas-gpu-2", 4},
	}
	sixty := os.Getenv("TIRESIAS_60_JOB")
	if sixty != "" {
		for _, c := range []struct {
			name  string
			nodes int
		}{{"n32g4", 32}, {"n4g4", 4}} {
			for _, s := range []string{"sjf", "dlas-gpu"} {
				runs = append(runs, run{"60", c.name, s, c.nodes})
			}
		}
	}
	for _, r := range runs {
		trace := filepath.Join("testdata", "simulator", "synthetic_job.csv")
		if r.trace == "60" {
			trace = sixty
		}
		fixture := filepath.Join("testdata", "simulator", r.trace+"-"+r.cluster+"-"+r.schedule+".csv")
		a := compareWithSimulator(t, trace, fixture, r.nodes, r.schedule)
		t.Logf("| %s | %s | %s | %d | %d | %d | %d | %g |", r.trace, r.cluster, r.schedule, a.jobs, a.sameStart, a.sameEnd, a.samePreempt, a.maxErr)
		if a.sameStart != a.jobs || a.sameEnd != a.jobs || a.samePreempt != a.jobs {
			t.Errorf("%s %s %s: %d/%d starts, %d/%d ends and %d/%d preemption counts equal the simulator's (max error %g s)",
				r.trace, r.cluster, r.schedule, a.sameStart, a.jobs, a.sameEnd, a.jobs, a.samePreempt, a.jobs, a.maxErr)
		}
	}
	if sixty == "" {
		t.Log("TIRESIAS_60_JOB not set: 60_job.csv comparisons skipped")
	}
}
