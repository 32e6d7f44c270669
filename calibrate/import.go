package calibrate

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ImportOptions name and describe an imported matrix.
type ImportOptions struct {
	Name     string // metadata.name (default: the format's name)
	GPUType  string // Gavel: which GPU type of the file to import (k80, p100, v100; default v100)
	GPUModel string // metadata.gpuModel (default: the Gavel GPU type in upper case; Lucid: empty = any model)
	Mode     string // the sharing mode the measurements are filed under (default timeslice)
}

func (o *ImportOptions) mode() (string, error) {
	switch o.Mode {
	case "":
		return ModeTimeslice, nil
	case ModeTimeslice, ModeMPS:
		return o.Mode, nil
	}
	return "", fmt.Errorf("mode %q: co-location factors are filed under timeslice or mps", o.Mode)
}

// ImportFormats lists the measurement formats ImportInterference reads.
var ImportFormats = []string{"gavel", "lucid"}

// ImportInterference converts published co-location measurements into a
// gpusim/v1alpha1 InterferenceMatrix, the format `gpusim calibrate run` writes:
//
//   - "gavel": Gavel's simulation_throughputs.json or
//     physical_cluster_throughputs.json (stanford-futuredata/gavel, MIT). For one
//     GPU type, each single-GPU job type (scale factor 1) is a workload; its
//     "null" entry is its alone throughput and each pair entry [this, other] a
//     pair group whose speed factors are this/alone(this) and other/alone(other).
//     Multi-GPU entries (scale factor > 1) are skipped. See ImportGavel.
//   - "lucid": Lucid's colocate_info.csv (S-Lab License 1.0, non-commercial: read
//     it where it is, never copy it). Each row is a measured pair whose speed1 and
//     speed2 are already speed factors (co-located / alone). See ImportLucid.
//
// Workload names are made valid matrix names (letters, digits, '.', '_', '-').
// name labels errors (file name).
func ImportInterference(format, name string, r io.Reader, o ImportOptions) (*InterferenceMatrix, error) {
	switch format {
	case "gavel":
		return ImportGavel(name, r, o)
	case "lucid":
		return ImportLucid(name, r, o)
	}
	return nil, fmt.Errorf("unknown import format %q (want %s)", format, strings.Join(ImportFormats, " or "))
}

var gavelKeyRE = regexp.MustCompile(`^\('(.+)', (\d+)\)$`)

// workloadName turns a published job description into a matrix workload name:
// "ResNet-18 (batch size 16)" becomes "ResNet-18-bs16".
func workloadName(s string) string {
	s = strings.ReplaceAll(s, " (batch size ", "-bs")
	var b strings.Builder
	dash := false
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
		if !ok {
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
				dash = true
			}
			continue
		}
		b.WriteRune(r)
		dash = r == '-'
	}
	return strings.Trim(b.String(), "-._")
}

// ImportGavel converts one GPU type of Gavel's throughput file (see
// ImportInterference). Workloads are sorted by name; each unordered pair becomes
// one group with members in workload order, taken from the row of the first
// member; a pair with a zero throughput (the pair does not fit) has factor 0 for
// that member. Pairs involving a job type without a positive alone throughput are
// skipped.
func ImportGavel(name string, r io.Reader, o ImportOptions) (*InterferenceMatrix, error) {
	mode, err := o.mode()
	if err != nil {
		return nil, err
	}
	var all map[string]map[string]map[string]json.RawMessage
	dec := json.NewDecoder(r)
	if err := dec.Decode(&all); err != nil {
		return nil, fmt.Errorf("%s: not a Gavel throughput file: %w", name, err)
	}
	gt := o.GPUType
	if gt == "" {
		gt = "v100"
	}
	rows, ok := all[gt]
	if !ok {
		types := make([]string, 0, len(all))
		for k := range all {
			types = append(types, k)
		}
		slices.Sort(types)
		return nil, fmt.Errorf("%s: no GPU type %q (the file has %s)", name, gt, strings.Join(types, ", "))
	}
	// Single-GPU job types and their alone throughput.
	type job struct {
		key, name string
		alone     float64
	}
	byKey := map[string]*job{}
	var jobs []*job
	names := map[string]string{}
	for key, row := range rows {
		m := gavelKeyRE.FindStringSubmatch(key)
		if m == nil {
			return nil, fmt.Errorf("%s: %s: job key %q is not ('<job type>', <scale factor>)", name, gt, key)
		}
		if m[2] != "1" {
			continue
		}
		var alone float64
		if err := json.Unmarshal(row["null"], &alone); err != nil {
			return nil, fmt.Errorf("%s: %s: %s: \"null\" is not a number", name, gt, key)
		}
		if !(alone > 0) || math.IsInf(alone, 0) {
			continue
		}
		j := &job{key: key, name: workloadName(m[1]), alone: alone}
		if prev, dup := names[j.name]; dup {
			return nil, fmt.Errorf("%s: %s: job types %q and %q map to the same workload name %q", name, gt, prev, m[1], j.name)
		}
		names[j.name] = m[1]
		byKey[key] = j
		jobs = append(jobs, j)
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("%s: %s: no single-GPU job type with a positive alone throughput", name, gt)
	}
	slices.SortFunc(jobs, func(a, b *job) int { return strings.Compare(a.name, b.name) })
	idx := map[*job]int{}
	m := newImported(o, "gavel-"+gt, mode)
	if o.GPUModel == "" {
		m.Metadata.GPUModel = strings.ToUpper(gt)
	}
	for i, j := range jobs {
		idx[j] = i
		m.Workloads = append(m.Workloads, WorkloadProfile{Name: j.name})
		m.Modes[0].Alone = append(m.Modes[0].Alone, AloneResult{Workload: j.name, Throughput: Stat{Mean: j.alone, Repetitions: 1}})
	}
	for _, a := range jobs {
		row := rows[a.key]
		others := make([]string, 0, len(row))
		for k := range row {
			if k != "null" {
				others = append(others, k)
			}
		}
		slices.Sort(others)
		for _, ok := range others {
			b := byKey[ok]
			if b == nil || idx[b] < idx[a] {
				continue // multi-GPU partner, or the pair is taken from b's row
			}
			var v []float64
			if err := json.Unmarshal(row[ok], &v); err != nil || len(v) != 2 {
				return nil, fmt.Errorf("%s: %s: %s: %s: want [this, other] throughputs", name, gt, a.key, ok)
			}
			fa, fb := v[0]/a.alone, v[1]/b.alone
			if badNum(fa) || badNum(fb) {
				return nil, fmt.Errorf("%s: %s: %s: %s: throughputs must be finite and >= 0", name, gt, a.key, ok)
			}
			m.Modes[0].Groups = append(m.Modes[0].Groups, GroupResult{Members: []MemberResult{
				{Workload: a.name, Stat: Stat{Mean: fa, Repetitions: 1}},
				{Workload: b.name, Stat: Stat{Mean: fb, Repetitions: 1}},
			}})
		}
	}
	return m, m.validate().render(name, nil)
}

func newImported(o ImportOptions, defName, mode string) *InterferenceMatrix {
	n := o.Name
	if n == "" {
		n = defName
	}
	return &InterferenceMatrix{APIVersion: APIVersion, Kind: InterferenceKind,
		Metadata:  MatrixMetadata{Name: n, GPUModel: o.GPUModel, Repetitions: 1},
		Workloads: []WorkloadProfile{},
		Modes:     []ModeResult{{Mode: mode, Alone: []AloneResult{}, Groups: []GroupResult{}}}}
}

// lucidColumns is the header of Lucid's colocate_info.csv (after its unnamed
// index column).
var lucidColumns = []string{"model1", "dataset1", "gpu_num1", "batchsize1", "amp1", "speed1",
	"model2", "dataset2", "gpu_num2", "batchsize2", "amp2", "speed2", "gpu_util", "gmem_util", "gmem"}

// ImportLucid converts Lucid's colocate_info.csv (see ImportInterference). A
// workload is model-dataset-g<gpus>-bs<batch>[-amp]; a pair measured more than
// once gets the mean of its measurements (repetitions counts them), members in
// workload order. Alone throughputs are not in the file, so the matrix has no
// alone entries. Errors name file:line and column.
func ImportLucid(name string, r io.Reader, o ImportOptions) (*InterferenceMatrix, error) {
	mode, err := o.mode()
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	cr := csv.NewReader(bytes.NewReader(b))
	cr.ReuseRecord = false
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s:1: %w", name, err)
	}
	if len(head) != len(lucidColumns)+1 || !slices.Equal(head[1:], lucidColumns) {
		return nil, fmt.Errorf("%s:1: not Lucid's colocate_info.csv (want columns ,%s)", name, strings.Join(lucidColumns, ","))
	}
	type acc struct {
		sum [2]float64
		n   int
	}
	pairs := map[[2]string]*acc{}
	var order [][2]string
	seen := map[string]bool{}
	line := 1
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line++
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		w := [2]string{}
		sp := [2]float64{}
		for k := range 2 {
			c := 1 + 6*k
			amp := ""
			switch rec[c+4] {
			case "1":
				amp = "-amp"
			case "0":
			default:
				return nil, fmt.Errorf("%s:%d: column amp%d: want 0 or 1, got %q", name, line, k+1, rec[c+4])
			}
			w[k] = workloadName(fmt.Sprintf("%s-%s-g%s-bs%s%s", rec[c], rec[c+1], rec[c+2], rec[c+3], amp))
			x, err := strconv.ParseFloat(rec[c+5], 64)
			if err != nil || badNum(x) {
				return nil, fmt.Errorf("%s:%d: column speed%d: want a number >= 0, got %q", name, line, k+1, rec[c+5])
			}
			sp[k] = x
			if w[k] == "" {
				return nil, fmt.Errorf("%s:%d: column model%d: empty workload", name, line, k+1)
			}
			seen[w[k]] = true
		}
		if w[1] < w[0] {
			w[0], w[1] = w[1], w[0]
			sp[0], sp[1] = sp[1], sp[0]
		}
		a := pairs[w]
		if a == nil {
			a = &acc{}
			pairs[w] = a
			order = append(order, w)
		}
		a.sum[0] += sp[0]
		a.sum[1] += sp[1]
		a.n++
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("%s: no measured pairs", name)
	}
	m := newImported(o, "lucid", mode)
	ws := make([]string, 0, len(seen))
	for w := range seen {
		ws = append(ws, w)
	}
	slices.Sort(ws)
	for _, w := range ws {
		m.Workloads = append(m.Workloads, WorkloadProfile{Name: w})
	}
	slices.SortFunc(order, func(a, b [2]string) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) })
	for _, w := range order {
		a := pairs[w]
		n := float64(a.n)
		m.Modes[0].Groups = append(m.Modes[0].Groups, GroupResult{Members: []MemberResult{
			{Workload: w[0], Stat: Stat{Mean: a.sum[0] / n, Repetitions: a.n}},
			{Workload: w[1], Stat: Stat{Mean: a.sum[1] / n, Repetitions: a.n}},
		}})
	}
	return m, m.validate().render(name, nil)
}
