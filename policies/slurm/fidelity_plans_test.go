package slurm

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/sim/simtest"
)

// TestFidelityBackfillPlans compares the replay's backfill reservations with
// the plans slurmctld logged (bfplans.csv: its _dump_job_sched lines, written
// by scripts/slurm-bfplans.sh). For every reservation Slurm made in a cycle,
// the replay's reservation for the same job in its backfill cycle of the same
// wall-clock second (the second the cycle began, from bfcycles.csv) must have
// the same will-run start and slot end (whole
// seconds) and the same nodes. Cycles drift through the second in Slurm and
// tick at a fixed phase in the replay (docs/fidelity.md), so a job that ended
// or started between the two differs; want.yaml's planSame is the number of
// reservations that must agree.
func TestFidelityBackfillPlans(t *testing.T) {
	files, err := filepath.Glob("testdata/fidelity/*/bfplans.csv")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bfplans.csv fixtures: %v", err)
	}
	for _, f := range files {
		dir := filepath.Dir(f)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var want struct {
				PlanSame int `yaml:"planSame"`
			}
			b, err := os.ReadFile(filepath.Join(dir, "want.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			_, _, runs, rec := runFidelity(t, dir)
			name := map[string]string{} // Slurm job id -> fixture id
			for id, rs := range runs {
				name[rs[0].jobID] = id
			}
			pc, rows := simtest.ReadCSV(t, f)
			// A plan line is logged during its cycle, which may have begun
			// in the second before: key it by its cycle's start (the last
			// one in bfcycles.csv at or before the line).
			var starts []float64
			if _, err := os.Stat(filepath.Join(dir, "bfcycles.csv")); err == nil {
				cc, crows := simtest.ReadCSV(t, filepath.Join(dir, "bfcycles.csv"))
				for _, r := range crows {
					starts = append(starts, simtest.Atof(t, r[cc["cycle_s"]]))
				}
				slices.Sort(starts)
			}
			same, cycles := 0, map[int64]bool{}
			var first string
			for _, r := range rows {
				at := simtest.Atof(t, r[pc["cycle_s"]])
				if i, _ := slices.BinarySearch(starts, at+1e-9); i > 0 {
					at = starts[i-1]
				}
				sec := int64(math.Floor(at))
				cycles[sec] = true
				id := name[r[pc["jobid"]]]
				w := bfPlan{atoi(t, r[pc["start_s"]]), atoi(t, r[pc["end_s"]]), r[pc["nodes"]]}
				if g, ok := rec.plans[sec][id]; ok && g == w {
					same++
				} else if first == "" {
					first = "cycle " + strconv.FormatInt(sec, 10) + " s: " + id
				}
			}
			t.Logf("%d of %d reservations in %d cycles as Slurm's; first difference: %s", same, len(rows), len(cycles), first)
			if same < want.PlanSame {
				t.Errorf("%d reservations as Slurm's, want at least %d", same, want.PlanSame)
			}
		})
	}
}
