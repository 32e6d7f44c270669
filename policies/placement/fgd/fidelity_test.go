package fgd

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

// authorPolicy maps the authors' sc_policy column to our policy names.
var authorPolicy = map[string]string{
	"01-Random": Random, "02-DotProd": DotProduct, "03-GpuClustering": GPUClustering,
	"04-GpuPacking": GPUPacking, "05-BestFit": BestFit, "06-FGD": FGD,
}

var fidelityWorkloads = []string{"default", "gpuspec10", "multigpu20"}

// authorMeans reads testdata/fgd_expected_results/<file> and returns the mean over
// seeds of column col per (workload variant, policy).
func authorMeans(t testing.TB, file string, col int) map[[2]string]float64 {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "fgd_expected_results", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	idx := map[string]int{}
	for i, h := range recs[0] {
		idx[h] = i
	}
	ci, ok := idx[strconv.Itoa(col)]
	if !ok {
		t.Fatalf("%s: no column %d", file, col)
	}
	sum, n := map[[2]string]float64{}, map[[2]string]int{}
	for _, r := range recs[1:] {
		pol, ok := authorPolicy[r[idx["sc_policy"]]]
		if !ok {
			continue
		}
		k := [2]string{strings.TrimPrefix(r[idx["workload"]], "openb_pod_list_"), pol}
		v, err := strconv.ParseFloat(r[ci], 64)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		sum[k] += v
		n[k]++
	}
	out := map[[2]string]float64{}
	for k, s := range sum {
		out[k] = s / float64(n[k])
	}
	return out
}

type fidelityRow struct {
	workload, policy              string
	alloc, frag, ratio            float64 // ours, mean over seeds
	theirAlloc, theirFrag, theirR float64
}

// runFidelity runs every (workload, policy, seed) fill at load 1.3 in parallel and
// returns the table, workloads and policies in order.
func runFidelity(t testing.TB, seeds []uint64) []fidelityRow {
	t.Helper()
	nodes := openbNodes(t)
	pods := map[string][]sim.JobSpec{}
	for _, w := range fidelityWorkloads {
		pods[w] = openbPods(t, w)
	}
	type job struct {
		w, p string
		s    uint64
	}
	var jobs []job
	for _, w := range fidelityWorkloads {
		for _, p := range Policies() {
			for _, s := range seeds {
				jobs = append(jobs, job{w, p, s})
			}
		}
	}
	type acc struct{ alloc, frag, ratio float64 }
	res := make([]acc, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	next := make(chan int)
	for g := 0; g < runtime.GOMAXPROCS(0); g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				j := jobs[i]
				r, err := RunFill(nodes, pods[j.w], FillConfig{Load: 1.3, Seed: j.s, Policy: j.p})
				if err != nil {
					errs[i] = err
					continue
				}
				last := r.Curve[len(r.Curve)-1]
				res[i] = acc{r.GPUAllocationRatio, r.FragmentedGPURatio, last.FragRatio}
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%v: %v", jobs[i], err)
		}
	}
	alloc := authorMeans(t, "analysis_allo_discrete.csv", 130)
	frag := authorMeans(t, "analysis_frag_discrete.csv", 130)
	ratio := authorMeans(t, "analysis_frag_ratio_discrete.csv", 130)
	var rows []fidelityRow
	for _, w := range fidelityWorkloads {
		for _, p := range Policies() {
			row := fidelityRow{workload: w, policy: p}
			n := 0.0
			for i, j := range jobs {
				if j.w == w && j.p == p {
					row.alloc += res[i].alloc
					row.frag += res[i].frag
					row.ratio += res[i].ratio
					n++
				}
			}
			row.alloc /= n
			row.frag /= n
			row.ratio /= n
			k := [2]string{w, p}
			row.theirAlloc, row.theirFrag, row.theirR = alloc[k], frag[k], ratio[k]
			rows = append(rows, row)
		}
	}
	return rows
}

// TestFidelityOpenB compares our mean GPU allocation ratio at 130 % arrived demand
// with the authors' published means (their expected_results CSVs) on the openb pod
// lists default, gpuspec10 and multigpu20 over the gpu node list: every
// (workload, policy) pair must be within 1.0 percentage point, and FGD > BestFit >
// Random on every workload. Full mode runs seeds 42..51 (180 fills); -short runs
// seeds 42..43.
func TestFidelityOpenB(t *testing.T) {
	seeds := []uint64{42, 43, 44, 45, 46, 47, 48, 49, 50, 51}
	if testing.Short() {
		seeds = seeds[:2]
	}
	rows := runFidelity(t, seeds)
	byKey := map[[2]string]fidelityRow{}
	for _, r := range rows {
		byKey[[2]string{r.workload, r.policy}] = r
		d := r.alloc - r.theirAlloc
		t.Logf("%-10s %-15s alloc %6.2f (theirs %6.2f, %+5.2f)  frag %5.2f (theirs %5.2f)  frag ratio %6.2f (theirs %6.2f)",
			r.workload, r.policy, r.alloc, r.theirAlloc, d, r.frag, r.theirFrag, r.ratio, r.theirR)
		if math.IsNaN(d) || math.Abs(d) > 1.0 {
			t.Errorf("%s/%s: allocation ratio %.2f, authors %.2f: off by %.2f pp (> 1.0)", r.workload, r.policy, r.alloc, r.theirAlloc, d)
		}
	}
	for _, w := range fidelityWorkloads {
		f, b, r := byKey[[2]string{w, FGD}].alloc, byKey[[2]string{w, BestFit}].alloc, byKey[[2]string{w, Random}].alloc
		if !(f > b && b > r) {
			t.Errorf("%s: want FGD (%.2f) > BestFit (%.2f) > Random (%.2f)", w, f, b, r)
		}
	}
	if os.Getenv("FGD_FIDELITY_TABLE") != "" {
		fmt.Println("| workload | policy | alloc % (ours) | alloc % (authors) | diff | frag GPU % (ours) | frag GPU % (authors) | frag ratio % (ours) | frag ratio % (authors) |")
		fmt.Println("|---|---|---|---|---|---|---|---|---|")
		for _, r := range rows {
			fmt.Printf("| %s | %s | %.2f | %.2f | %+.2f | %.2f | %.2f | %.2f | %.2f |\n",
				r.workload, r.policy, r.alloc, r.theirAlloc, r.alloc-r.theirAlloc, r.frag, r.theirFrag, r.ratio, r.theirR)
		}
	}
}
