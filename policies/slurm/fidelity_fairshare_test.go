package slurm

import (
	"bufio"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// shareRow is one user association's row of `sshare -a -l`.
type shareRow struct{ raw, fs float64 }

// readSshare reads the snapshots of sshare.txt (written by a fixture's
// setup.sh): "== t=N" headers, then sshare -a -l and sprio -l output. It
// returns, per snapshot time, the user associations' RawUsage and FairShare
// by account.
func readSshare(t *testing.T, path string) map[float64]map[string]shareRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[float64]map[string]shareRow{}
	var cur map[string]shareRow
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if v, ok := strings.CutPrefix(l, "== t="); ok {
			at, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", path, l, err)
			}
			cur = map[string]shareRow{}
			out[at] = cur
			continue
		}
		// a user association: "  acct  user  RawShares NormShares RawUsage NormUsage EffectvUsage FairShare LevelFS ..."
		f := strings.Fields(l)
		if cur == nil || !strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "   ") || len(f) < 9 {
			continue
		}
		raw, err1 := strconv.ParseFloat(f[4], 64)
		fs, err2 := strconv.ParseFloat(f[7], 64)
		if err1 != nil || err2 != nil {
			continue // sprio's lines
		}
		cur[f[0]+"/"+f[1]] = shareRow{raw, fs}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFidelityFairShare checks gpusim's fair share against the association
// usage and fair-share factors Slurm reported (sshare.txt) in the fixtures
// recorded with slurmdbd:
//
//   - the usage model (priority.usageModel: slurm, accountingStorageEnforce):
//     Slurm's own recorded runs, charged at the decay thread's passes (every
//     PriorityCalcPeriod from decay_start_s) and, with limits, at their ends,
//     with decayFactor and newUsage, give sshare's RawUsage of every
//     association to within 1 (sshare prints whole units);
//   - with Fair Tree, the ranks of the tree with that usage, and the replay's
//     factors after each pass, equal sshare's FairShare; with classic fair
//     share (factors from the usage before the pass, classicLag) the replay's
//     factors are within 0.01 of it.
func TestFidelityFairShare(t *testing.T) {
	files, err := filepath.Glob("testdata/fidelity/*/sshare.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no sshare.txt fixtures: %v", err)
	}
	for _, f := range files {
		dir := filepath.Dir(f)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			snaps := readSshare(t, f)
			_, _, runs, rec := runFidelity(t, dir)
			s := rec.Slurm
			meta := simtest.ReadMeta(t, filepath.Join(dir, "recorded.meta"))
			ds, err := strconv.ParseFloat(meta["decay_start_s"], 64)
			if err != nil {
				t.Fatalf("recorded.meta: decay_start_s: %v", err)
			}
			// usage from Slurm's recorded runs
			jc, jrows := simtest.ReadCSV(t, filepath.Join(dir, "jobs.csv"))
			type run struct {
				acct       string
				gpus       float64
				start, end sim.Time
			}
			var rs []run
			for _, r := range jrows {
				g := float64(atoi(t, r[jc["gpus"]]))
				if k, ok := jc["replicas"]; ok && r[k] != "" {
					g *= float64(atoi(t, r[k]))
				}
				for _, x := range runs[r[jc["id"]]] {
					rs = append(rs, run{r[jc["team"]], g, sim.Time(sim.Seconds(x.start)), sim.Time(sim.Seconds(x.end))})
				}
			}
			usage := map[string]float64{}
			period := s.calcPeriod
			prev := sim.Time(sim.Seconds(ds))
			passes := map[float64]map[string]float64{} // snapshot time -> usage after the last pass before it
			for p := prev.Add(period); p.Seconds() < 400; p = p.Add(period) {
				if s.endCharge {
					// AccountingStorageEnforce=limits: a run that ended since
					// the last pass was charged at its end
					for _, r := range rs {
						if r.end > prev && r.end <= p {
							usage[r.acct] += s.newUsage(r.gpus, max(prev, r.start), r.end)
						}
					}
				}
				f := s.decayFactor(prev, p)
				for a := range usage {
					usage[a] *= f
				}
				for _, r := range rs {
					if r.start < p && r.end > p { // running at the pass
						usage[r.acct] += s.newUsage(r.gpus, max(prev, r.start), p)
					}
				}
				for at := range snaps {
					if at >= p.Seconds() && at < p.Add(period).Seconds() {
						u := maps.Clone(usage)
						if s.endCharge {
							// sshare shows end charges at once
							for _, r := range rs {
								if r.end > p && r.end.Seconds() <= at {
									u[r.acct] += s.newUsage(r.gpus, max(p, r.start), r.end)
								}
							}
						}
						passes[at] = u
					}
				}
				prev = p
			}
			for at, rows := range snaps {
				if len(rows) == 0 {
					t.Fatalf("%s: t=%v: no user association rows", f, at)
				}
				// the factors of the tree with the model's usage
				tr := *s.tree
				tr.a = slices.Clone(s.tree.a)
				for i := range tr.a {
					tr.a[i].usage = 0
				}
				for key, row := range rows {
					acct, user, _ := strings.Cut(key, "/")
					got := passes[at][acct]
					if math.Abs(got-row.raw) > 1 {
						t.Errorf("t=%v %s: usage model %.1f, sshare RawUsage %.0f", at, key, got, row.raw)
					}
					tr.charge(tr.userAssoc(user, tr.accounts[acct]), got)
				}
				tr.recompute()
				for key, row := range rows {
					if !tr.fairTree {
						break // classic factors lag a pass (classicLag): compared with the replay below
					}
					acct, user, _ := strings.Cut(key, "/")
					if got := tr.a[tr.userAssoc(user, tr.accounts[acct])].fs; math.Abs(got-row.fs) > 1e-3 {
						t.Errorf("t=%v %s: fair share from the usage model %.6f, sshare FairShare %.6f", at, key, got, row.fs)
					}
				}
				// the replay's factors after the last calc step before at
				var snap *calcSnap
				for i := range rec.calcs {
					if rec.calcs[i].at.Seconds() <= at {
						snap = &rec.calcs[i]
					}
				}
				if snap == nil {
					t.Fatalf("t=%v: no calc step", at)
				}
				// Fair Tree's ranks match exactly; classic factors are
				// continuous in the usage, which moves with the replay's
				// run times (sub-second launch differences)
				tol := 1e-6
				if !s.tree.fairTree {
					tol = 0.01
				}
				for key, row := range rows {
					acct, user, _ := strings.Cut(key, "/")
					k, ok := s.tree.accounts[acct]
					if !ok {
						t.Fatalf("sshare account %q not in params.yaml", acct)
					}
					u := s.tree.userAssoc(user, k)
					if got := snap.assoc[u].fs; math.Abs(got-row.fs) > tol {
						t.Errorf("t=%v %s: gpusim fair share %.6f (step %.2f), sshare FairShare %.6f", at, key, got, snap.at.Seconds(), row.fs)
					}
				}
			}
		})
	}
}
