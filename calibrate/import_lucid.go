package calibrate

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// lucidJob is one side of a Lucid colocate_info.csv row.
type lucidJob struct{ model, dataset, gpus, batch, amp string }

// LucidWorkloadName maps a Lucid job (model, dataset, batch size, amp) to a
// gpusim workload name: "<model>_<dataset>_bs<batch>", "_amp" appended for mixed
// precision and "_g<n>" for jobs on n > 1 GPUs, characters outside
// [A-Za-z0-9._-] replaced by '_' ("ResNet18", "CIFAR-10", 32, amp 1 →
// "ResNet18_CIFAR-10_bs32_amp").
func LucidWorkloadName(model, dataset, batch string, amp bool, gpus int) string {
	s := model + "_" + dataset + "_bs" + batch
	if amp {
		s += "_amp"
	}
	if gpus > 1 {
		s += "_g" + strconv.Itoa(gpus)
	}
	return sanitizeName(s)
}

// lucidColumns are the columns ImportLucid needs (any order; others ignored).
var lucidColumns = []string{"model1", "dataset1", "gpu_num1", "batchsize1", "amp1", "speed1",
	"model2", "dataset2", "gpu_num2", "batchsize2", "amp2", "speed2"}

// ImportLucid reads Lucid's colocate_info.csv (Hu et al., ASPLOS'23,
// simulation/data/colocate_info.csv; S-Lab licence, non-commercial: read it from
// where the user keeps it, never copy it into this repository). Each row is two
// jobs measured co-located on one GPU: per job model, dataset, gpu_num,
// batchsize, amp and speed (co-located throughput / alone, used as the speed
// factor as is, including the few measured values above 1), then the pair's
// gpu_util, gmem_util, gmem (not imported: they describe the pair, not a job).
// Every distinct job becomes a workload (LucidWorkloadName) and every row a pair
// group in one mode entry (o.Mode, default timeslice; gpuModel from
// o.GPUModel, empty when not given: the matrix then applies to every GPU model,
// see Table). Lucid gives no alone throughputs, so alone is empty. A row
// repeating an earlier pair (either order) is skipped and counted; a speed of 0
// is skipped as infeasible. Errors name file:line:column.
func ImportLucid(name string, r io.Reader, o ImportOptions) (*InterferenceMatrix, ImportReport, error) {
	var rep ImportReport
	mode, err := o.mode()
	if err != nil {
		return nil, rep, err
	}
	cr := csv.NewReader(r)
	cr.ReuseRecord = false
	head, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, rep, fmt.Errorf("%s: empty file (want a colocate_info.csv header)", name)
		}
		return nil, rep, fmt.Errorf("%s: %w", name, err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimSpace(h)] = i
	}
	for _, c := range lucidColumns {
		if _, ok := col[c]; !ok {
			return nil, rep, fmt.Errorf("%s:1: header: missing column %q (want %s)", name, c, strings.Join(lucidColumns, ","))
		}
	}
	m := &InterferenceMatrix{APIVersion: APIVersion, Kind: InterferenceKind,
		Metadata: MatrixMetadata{Name: o.Name, GPUModel: o.GPUModel, Repetitions: 1}}
	if m.Metadata.Name == "" {
		m.Metadata.Name = "lucid:" + filepath.Base(name)
	}
	mr := ModeResult{Mode: mode, Alone: []AloneResult{}, Groups: []GroupResult{}}
	classes := map[string]string{}
	origin := map[string]lucidJob{} // workload name → the job it was made from
	seen := map[[2]string]bool{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, rep, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		field := func(c string) string { return strings.TrimSpace(rec[col[c]]) }
		bad := func(c, format string, args ...any) error {
			return fmt.Errorf("%s:%d: column %s: %s", name, line, c, fmt.Sprintf(format, args...))
		}
		var mem [2]MemberResult
		zero := false
		for k, sfx := range []string{"1", "2"} {
			j := lucidJob{field("model" + sfx), field("dataset" + sfx), field("gpu_num" + sfx), field("batchsize" + sfx), field("amp" + sfx)}
			if j.model == "" || j.dataset == "" {
				return nil, rep, bad("model"+sfx, "model and dataset must not be empty")
			}
			g, err := strconv.Atoi(j.gpus)
			if err != nil || g < 1 {
				return nil, rep, bad("gpu_num"+sfx, "want an integer >= 1, got %q", j.gpus)
			}
			if bs, err := strconv.Atoi(j.batch); err != nil || bs < 1 {
				return nil, rep, bad("batchsize"+sfx, "want an integer >= 1, got %q", j.batch)
			}
			if j.amp != "0" && j.amp != "1" {
				return nil, rep, bad("amp"+sfx, "want 0 or 1, got %q", j.amp)
			}
			sp, err := strconv.ParseFloat(field("speed"+sfx), 64)
			if err != nil || math.IsNaN(sp) || math.IsInf(sp, 0) || sp < 0 {
				return nil, rep, bad("speed"+sfx, "want a finite number >= 0, got %q", field("speed"+sfx))
			}
			if sp == 0 {
				zero = true
			}
			w := LucidWorkloadName(j.model, j.dataset, j.batch, j.amp == "1", g)
			j.gpus = strconv.Itoa(g) // "01" and "1" are the same job
			if prev, ok := origin[w]; ok && prev != j {
				return nil, rep, bad("model"+sfx, "jobs %v and %v both map to workload name %q", prev, j, w)
			}
			origin[w] = j
			classes[w] = "lucid: " + j.model + " " + j.dataset
			mem[k] = MemberResult{Workload: w, Stat: Stat{Mean: sp, Repetitions: 1}}
		}
		if zero {
			rep.SkippedZero++
			continue
		}
		key := [2]string{mem[0].Workload, mem[1].Workload}
		if key[0] > key[1] {
			key[0], key[1] = key[1], key[0]
		}
		if seen[key] {
			rep.SkippedDupPair++
			continue
		}
		seen[key] = true
		mr.Groups = append(mr.Groups, GroupResult{Members: mem[:]})
		rep.Pairs++
	}
	ws := make([]string, 0, len(classes))
	for w := range classes {
		ws = append(ws, w)
	}
	sort.Strings(ws)
	for _, w := range ws {
		m.Workloads = append(m.Workloads, WorkloadProfile{Name: w, Class: classes[w]})
	}
	rep.Workloads = len(ws)
	// Rows in pair-name order, so the output does not depend on the file's row order.
	sort.SliceStable(mr.Groups, func(i, j int) bool {
		a, b := mr.Groups[i].Members, mr.Groups[j].Members
		if a[0].Workload != b[0].Workload {
			return a[0].Workload < b[0].Workload
		}
		return a[1].Workload < b[1].Workload
	})
	m.Modes = []ModeResult{mr}
	if err := m.validate().render(name, nil); err != nil {
		return nil, rep, err
	}
	m.normalize()
	return m, rep, nil
}
