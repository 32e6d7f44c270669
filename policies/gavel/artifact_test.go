package gavel_test

import (
	"context"
	"encoding/csv"
	"os"
	"strconv"
	"testing"

	"github.com/gpusim/gpusim/reports"
	"github.com/gpusim/gpusim/scenarios"
	"github.com/gpusim/gpusim/sim"
)

// The PR #208 artifact run (docs/gavel.md) against the published Gavel
// simulation, job by job: every one of the 15 JCTs within 0.5 s of Gavel's
// (measured: 0.014 to 0.074 s later), so the mean JCT (5889.2 s vs 5889.131 s)
// and the makespan (6350.6 s vs 6350.5 s) agree to 0.01 %, and so does the
// utilisation (0.9446 vs 0.945). The issue asks for
// 5 %; the per-job bound pins the mechanism, not just the averages.
func TestGavelArtifact(t *testing.T) {
	sc, err := scenarios.Load("../../scenarios/examples/gavel-artifact.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := scenarios.Run(context.Background(), sc, scenarios.RunOptions{NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	res := runs[0].Result
	byID := map[sim.JobID]*sim.Job{}
	for i := range res.Jobs {
		byID[res.Jobs[i].Spec.ID] = &res.Jobs[i]
	}
	f, err := os.Open("../../traces/testdata/gavel-artifact/expected_pr208.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 16 || len(res.Jobs) != 15 {
		t.Fatalf("%d published rows, %d jobs; want 15 and 15", len(rows)-1, len(res.Jobs))
	}
	var sumOurs, sumTheirs, makespan, published float64
	for _, r := range rows[1:] {
		want, err := strconv.ParseFloat(r[4], 64)
		if err != nil {
			t.Fatal(err)
		}
		j := byID[sim.JobID("artifact_evaluation_pr208-"+r[0])]
		if j == nil || j.State != sim.StateCompleted {
			t.Fatalf("job %s missing or not completed", r[0])
		}
		got := j.End.Sub(j.Spec.Submit).Seconds()
		sumOurs += got
		sumTheirs += want
		makespan = max(makespan, j.End.Seconds())
		published = max(published, want)
		t.Logf("job %2s %-34s sf %s: JCT %9.3f s, Gavel %9.3f s (%+.3f s), leases out %d", r[0], r[1], r[2], got, want, got-want, j.Preempted)
		if d := got - want; d > 0.5 || d < -0.5 {
			t.Errorf("job %s: JCT %.3f s, Gavel's %.3f s (%+.3f s; want within 0.5 s)", r[0], got, want, d)
		}
	}
	n := float64(len(rows) - 1)
	t.Logf("mean JCT %.3f s (Gavel 5889.131), makespan %.3f s (Gavel 6350.5)", sumOurs/n, makespan)
	if d := sumOurs/n/5889.131 - 1; d > 1e-4 || d < -1e-4 {
		t.Errorf("mean JCT %.3f s is %+.4f %% off Gavel's 5889.131 s", sumOurs/n, 100*d)
	}
	if d := makespan/6350.5 - 1; d > 1e-4 || d < -1e-4 {
		t.Errorf("makespan %.3f s is %+.4f %% off Gavel's 6350.5 s", makespan, 100*d)
	}
	// Gavel prints utilisation 0.945 (busy worker time / time since the
	// workers registered, get_cluster_utilization); ours is allocated GPU-time
	// over the makespan (0.9446 measured).
	if u := reports.Summarize(res, reports.Provenance{}, 0).GPUUtilization; u < 0.9445 || u >= 0.9455 {
		t.Errorf("GPU utilisation %.4f, Gavel's 0.945", u)
	}
}

// The allocation policies on the artifact trace: every job completes, and
// min_total_duration has the shortest makespan (within 2 %). Measured:
// min_total_duration 5,889.2 s mean JCT / 6,350.6 s makespan,
// max_min_fairness 5,406.5 / 7,293.0 s, finish_time_fairness 5,024.4 /
// 7,319.3 s, max_sum_throughput 5,174.2 / 8,238.7 s, normalised by cost
// (v100 3.06, k80 0.9) 5,120.6 / 8,146.7 s. (finish_time_fairness minimises
// the worst projected ρ at each reset, not a JCT statistic, so no ordering of
// mean JCTs is asserted.)
func TestGavelPoliciesOnArtifact(t *testing.T) {
	mean := map[string]float64{}
	makespan := map[string]float64{}
	for _, pol := range []string{"min_total_duration", "max_min_fairness", "finish_time_fairness", "max_sum_throughput", "max_sum_throughput_normalized_by_cost"} {
		sets := []string{"policies[0].params.policy=" + pol}
		if pol == "max_sum_throughput_normalized_by_cost" {
			sets = append(sets, "policies[0].params.costs.v100=3.06", "policies[0].params.costs.k80=0.9")
		}
		sc, err := scenarios.Load("../../scenarios/examples/gavel-artifact.yaml", sets)
		if err != nil {
			t.Fatal(err)
		}
		runs, err := scenarios.Run(context.Background(), sc, scenarios.RunOptions{NoLog: true})
		if err != nil {
			t.Fatal(err)
		}
		res := runs[0].Result
		var sum float64
		for i := range res.Jobs {
			j := &res.Jobs[i]
			if j.State != sim.StateCompleted {
				t.Fatalf("%s: job %s did not complete", pol, j.Spec.ID)
			}
			sum += j.End.Sub(j.Spec.Submit).Seconds()
			makespan[pol] = max(makespan[pol], j.End.Seconds())
		}
		mean[pol] = sum / float64(len(res.Jobs))
		t.Logf("%-22s mean JCT %8.1f s, makespan %8.1f s", pol, mean[pol], makespan[pol])
	}
	if makespan["min_total_duration"] > min(makespan["max_min_fairness"], makespan["finish_time_fairness"], makespan["max_sum_throughput"])*1.02 {
		t.Errorf("min_total_duration's makespan %.1f s is not the shortest: %v", makespan["min_total_duration"], makespan)
	}
}
