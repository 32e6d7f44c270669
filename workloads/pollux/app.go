package pollux

import (
	"embed"
	"encoding/csv"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

//go:embed data/traces data/workloads data/workloads-0.5
var dataFS embed.FS

// DataFS is the embedded copy of the Pollux OSDI'21 artifact's profiles and
// workloads (data/README.md says where they come from).
func DataFS() fs.FS { return dataFS }

// Seconds is a duration in seconds.
type Seconds = float64

// Curve is one validation-<B>.csv: per-epoch cumulative progress, iterations and
// gradient statistics for total batch size B.
type Curve struct {
	BatchSize int
	Progress  []float64
	Iteration []float64
	GradSqr   []float64
	GradVar   []float64
}

type placementRow struct {
	bsz        []float64 // local_bsz ascending
	step, sync []float64
}

// App is one profiled application of the artifact (applications.py:Application).
// Its methods are safe for concurrent use.
type App struct {
	Name string
	// InitBatchSize is B0, the smallest batch size with a curve.
	InitBatchSize int
	// MaxBatchSize is the largest batch size with a curve.
	MaxBatchSize int
	// MinLocalBsz and MaxLocalBsz bound the per-GPU (atomic) batch size.
	MinLocalBsz, MaxLocalBsz int
	// MaxEpochs is the number of epochs to completion (target_metric is unset).
	MaxEpochs int

	curves     []Curve // ascending batch size
	placements map[string]*placementRow
	nd         *ndInterp

	mu       sync.Mutex
	thrCache map[thrKey][2]float64
}

type thrKey struct {
	placement string
	bsz       int
}

// maxEpochs is the APPLICATIONS table of applications.py; yolov3 also caps
// max_local_bsz at 8.
var appTable = map[string]struct{ epochs, maxLocal int }{
	"bert":        {2, 0},
	"cifar10":     {100, 0},
	"ncf":         {10, 0},
	"imagenet":    {90, 0},
	"deepspeech2": {80, 0},
	"yolov3":      {50, 8},
}

// AppNames lists the artifact's applications in sorted order.
func AppNames() []string {
	names := make([]string, 0, len(appTable))
	for n := range appTable {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

var (
	appsOnce sync.Once
	apps     map[string]*App
	appsErr  error
)

// Apps returns the six artifact applications, loaded once from the embedded data.
func Apps() (map[string]*App, error) {
	appsOnce.Do(func() {
		apps = map[string]*App{}
		for _, n := range AppNames() {
			a, err := LoadApp(dataFS, "data/traces/"+n, n)
			if err != nil {
				appsErr = err
				return
			}
			apps[n] = a
		}
	})
	return apps, appsErr
}

// appOf returns the artifact application named by job.App; an error when the
// applications cannot be loaded or the name is not one of them.
func appOf(job Job) (*App, error) {
	apps, err := Apps()
	if err != nil {
		return nil, err
	}
	a, ok := apps[job.App]
	if !ok {
		return nil, fmt.Errorf("pollux: unknown application %q", job.App)
	}
	return a, nil
}

func readCSV(fsys fs.FS, p string, want []string) ([][]float64, []string, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	head, err := r.Read()
	if err != nil {
		return nil, nil, fmt.Errorf("%s:1: header: %w", p, err)
	}
	if !slices.Equal(head, want) {
		return nil, nil, fmt.Errorf("%s:1: header: want %q, got %q", p, strings.Join(want, ","), strings.Join(head, ","))
	}
	var rows [][]float64
	var first []string
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s:%d: %w", p, line, err)
		}
		row := make([]float64, len(rec))
		for i, s := range rec {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, nil, fmt.Errorf("%s:%d: column %s: not a number: %q", p, line, want[i], s)
			}
			row[i] = v
		}
		rows = append(rows, row)
		first = append(first, rec[0])
	}
	if len(rows) == 0 {
		return nil, nil, fmt.Errorf("%s: no rows", p)
	}
	return rows, first, nil
}

// LoadApp reads one application's placements.csv, scalability.csv and
// validation-*.csv from dir, with the per-app constants of applications.py's
// APPLICATIONS table (name must be one of AppNames).
func LoadApp(fsys fs.FS, dir, name string) (*App, error) {
	cfg, ok := appTable[name]
	if !ok {
		return nil, fmt.Errorf("pollux: unknown application %q", name)
	}
	a := &App{Name: name, placements: map[string]*placementRow{}, thrCache: map[thrKey][2]float64{}}
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, "validation-") || !strings.HasSuffix(n, ".csv") {
			continue
		}
		b, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(n, "validation-"), ".csv"))
		if err != nil || b <= 0 {
			return nil, fmt.Errorf("%s: batch size in file name: %q", path.Join(dir, n), n)
		}
		rows, _, err := readCSV(fsys, path.Join(dir, n), []string{"progress", "iteration", "metric", "grad_sqr", "grad_var"})
		if err != nil {
			return nil, err
		}
		c := Curve{BatchSize: b}
		for _, r := range rows {
			c.Progress = append(c.Progress, r[0])
			c.Iteration = append(c.Iteration, r[1])
			c.GradSqr = append(c.GradSqr, r[3])
			c.GradVar = append(c.GradVar, r[4])
		}
		a.curves = append(a.curves, c)
	}
	if len(a.curves) == 0 {
		return nil, fmt.Errorf("%s: no validation-*.csv", dir)
	}
	sort.Slice(a.curves, func(i, j int) bool { return a.curves[i].BatchSize < a.curves[j].BatchSize })
	a.InitBatchSize = a.curves[0].BatchSize
	a.MaxBatchSize = a.curves[len(a.curves)-1].BatchSize
	a.MaxEpochs = cfg.epochs
	for _, c := range a.curves {
		if len(c.Progress) < a.MaxEpochs {
			return nil, fmt.Errorf("%s: validation-%d.csv has %d epochs, need %d", dir, c.BatchSize, len(c.Progress), a.MaxEpochs)
		}
	}

	prow, pid, err := readCSV(fsys, path.Join(dir, "placements.csv"), []string{"placement", "local_bsz", "step_time", "sync_time"})
	if err != nil {
		return nil, err
	}
	type shapeKey struct{ n, r, b float64 }
	type acc struct {
		step, sync float64
		k          int
	}
	shapes := map[shapeKey]*acc{}
	var shapeOrder []shapeKey
	a.MinLocalBsz, a.MaxLocalBsz = math.MaxInt, 0
	for i, r := range prow {
		p := pid[i]
		nodes, reps := len(p), 0
		for _, ch := range p {
			if ch < '1' || ch > '9' {
				return nil, fmt.Errorf("%s:%d: column placement: %q", path.Join(dir, "placements.csv"), i+2, p)
			}
			reps += int(ch - '0')
		}
		pr := a.placements[p]
		if pr == nil {
			pr = &placementRow{}
			a.placements[p] = pr
		}
		pr.bsz = append(pr.bsz, r[1])
		pr.step = append(pr.step, r[2])
		pr.sync = append(pr.sync, r[3])
		a.MinLocalBsz = min(a.MinLocalBsz, int(r[1]))
		a.MaxLocalBsz = max(a.MaxLocalBsz, int(r[1]))
		k := shapeKey{float64(nodes), float64(reps), r[1]}
		s := shapes[k]
		if s == nil {
			s = &acc{}
			shapes[k] = s
			shapeOrder = append(shapeOrder, k)
		}
		s.step += r[2]
		s.sync += r[3]
		s.k++
	}
	for _, pr := range a.placements {
		idx := make([]int, len(pr.bsz))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(i, j int) bool { return pr.bsz[idx[i]] < pr.bsz[idx[j]] })
		b, s, y := make([]float64, len(idx)), make([]float64, len(idx)), make([]float64, len(idx))
		for i, k := range idx {
			b[i], s[i], y[i] = pr.bsz[k], pr.step[k], pr.sync[k]
		}
		pr.bsz, pr.step, pr.sync = b, s, y
	}
	if cfg.maxLocal > 0 {
		a.MaxLocalBsz = cfg.maxLocal
	}
	srow, _, err := readCSV(fsys, path.Join(dir, "scalability.csv"), []string{"num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time"})
	if err != nil {
		return nil, err
	}
	var pts [][3]float64
	var vals [][2]float64
	for _, k := range shapeOrder {
		s := shapes[k]
		pts = append(pts, [3]float64{k.n, k.r, k.b})
		vals = append(vals, [2]float64{s.step / float64(s.k), s.sync / float64(s.k)})
	}
	for _, r := range srow {
		pts = append(pts, [3]float64{r[0], r[1], r[2]})
		vals = append(vals, [2]float64{r[3], r[4]})
	}
	a.nd = newNDInterp(pts, vals)
	return a, nil
}

// Curves returns the validation curves in ascending batch size (read-only).
func (a *App) Curves() []Curve { return a.curves }

// validatedBatchSizes is applications.py:_validated_batch_sizes: the curves that
// bracket batchSize (the same one twice on an exact match).
func (a *App) validatedBatchSizes(batchSize float64) (lo, hi *Curve) {
	for i := range a.curves {
		c := &a.curves[i]
		if float64(c.BatchSize) <= batchSize {
			lo = c
		}
		if float64(c.BatchSize) >= batchSize {
			hi = c
			break
		}
	}
	return lo, hi
}

func lerpB(b float64, lo, hi *Curve, lv, hv float64) float64 {
	if lo.BatchSize == hi.BatchSize {
		return lv
	}
	lb, hb := float64(lo.BatchSize), float64(hi.BatchSize)
	return ((b-lb)*hv + (hb-b)*lv) / (hb - lb)
}

// GradStats is applications.py:get_grad_stats: grad_sqr and grad_var during the
// given 0-based epoch, interpolated linearly in batch size between the curves
// that bracket it. It returns an error for a batch size outside the curves.
func (a *App) GradStats(batchSize float64, epoch int) (sqr, vr float64, err error) {
	lo, hi := a.validatedBatchSizes(batchSize)
	if lo == nil || hi == nil {
		return 0, 0, fmt.Errorf("pollux: %s: batch size %g outside the profiled %d..%d", a.Name, batchSize, a.InitBatchSize, a.MaxBatchSize)
	}
	if epoch < 0 || epoch >= len(lo.GradSqr) || epoch >= len(hi.GradSqr) {
		return 0, 0, fmt.Errorf("pollux: %s: epoch %d outside the curves", a.Name, epoch)
	}
	return lerpB(batchSize, lo, hi, lo.GradSqr[epoch], hi.GradSqr[epoch]),
		lerpB(batchSize, lo, hi, lo.GradVar[epoch], hi.GradVar[epoch]), nil
}

// Iteration is applications.py:get_iteration: cumulative optimizer steps after
// finishing the given 0-based epoch at this batch size (linear in batch size).
func (a *App) Iteration(batchSize float64, epoch int) (float64, error) {
	lo, hi := a.validatedBatchSizes(batchSize)
	if lo == nil || hi == nil {
		return 0, fmt.Errorf("pollux: %s: batch size %g outside the profiled %d..%d", a.Name, batchSize, a.InitBatchSize, a.MaxBatchSize)
	}
	return lerpB(batchSize, lo, hi, lo.Iteration[epoch], hi.Iteration[epoch]), nil
}

// Progress is applications.py:get_progress: the progress (in B0-iterations) at
// which epoch `epoch` ends, the minimum over the curves of progress[epoch-1]; 0
// for epoch 0.
func (a *App) Progress(epoch int) float64 {
	if epoch == 0 {
		return 0
	}
	p := math.Inf(1)
	for _, c := range a.curves {
		p = min(p, c.Progress[epoch-1])
	}
	return p
}

// CompletionEpoch is applications.py:get_completion_epoch with target_metric
// unset: the job completes once epoch MaxEpochs-1 has been finished.
func (a *App) CompletionEpoch() int { return a.MaxEpochs - 1 }

// TotalProgress is the progress at which the job completes.
func (a *App) TotalProgress() float64 { return a.Progress(a.MaxEpochs) }

// CanonicalPlacement normalises a placement (GPUs per node, zeros dropped) to its
// lexicographically smallest rotation and returns it as the digit string of
// placements.csv (applications.py:get_throughput). Counts above 9 are invalid.
func CanonicalPlacement(p []int) string {
	q := make([]int, 0, len(p))
	for _, v := range p {
		if v > 0 {
			q = append(q, v)
		}
	}
	best := q
	rot := make([]int, len(q))
	for i := 1; i < len(q); i++ {
		copy(rot, q[i:])
		copy(rot[len(q)-i:], q[:i])
		if slices.Compare(rot, best) < 0 {
			best = slices.Clone(rot)
		}
	}
	var sb strings.Builder
	for _, v := range best {
		sb.WriteByte(byte('0' + v))
	}
	return sb.String()
}

// Throughput is applications.py:get_throughput: the true (profiled) seconds per
// optimizer step and the part of it spent in gradient synchronisation, for a
// placement (GPUs per node) and per-GPU batch localBsz. A placement of
// placements.csv is interpolated linearly in local_bsz (interp1d); any other is
// interpolated over the Delaunay triangulation of (num_nodes capped at 16,
// num_replicas, local_bsz) as scipy's LinearNDInterpolator does. Results are
// memoised per (canonical placement, localBsz).
func (a *App) Throughput(placement []int, localBsz int) (step, sync Seconds, err error) {
	key := thrKey{CanonicalPlacement(placement), localBsz}
	a.mu.Lock()
	v, ok := a.thrCache[key]
	a.mu.Unlock()
	if ok {
		return v[0], v[1], nil
	}
	step, sync, err = a.throughput(key.placement, localBsz)
	if err != nil {
		return 0, 0, err
	}
	a.mu.Lock()
	a.thrCache[key] = [2]float64{step, sync}
	a.mu.Unlock()
	return step, sync, nil
}

func (a *App) throughput(canon string, localBsz int) (float64, float64, error) {
	if len(canon) == 0 {
		return 0, 0, fmt.Errorf("pollux: %s: empty placement", a.Name)
	}
	b := float64(localBsz)
	if pr, ok := a.placements[canon]; ok {
		n := len(pr.bsz)
		if b < pr.bsz[0] || b > pr.bsz[n-1] {
			return 0, 0, fmt.Errorf("pollux: %s: local batch %d outside the profiled %g..%g of placement %s", a.Name, localBsz, pr.bsz[0], pr.bsz[n-1], canon)
		}
		i := sort.SearchFloat64s(pr.bsz, b) // first >= b
		if pr.bsz[i] == b {
			return pr.step[i], pr.sync[i], nil
		}
		x0, x1 := pr.bsz[i-1], pr.bsz[i]
		t := (b - x0) / (x1 - x0)
		return pr.step[i-1] + t*(pr.step[i]-pr.step[i-1]), pr.sync[i-1] + t*(pr.sync[i]-pr.sync[i-1]), nil
	}
	reps := 0
	for _, ch := range canon {
		reps += int(ch - '0')
	}
	nodes := min(len(canon), 16)
	y, ok := a.nd.at([3]float64{float64(nodes), float64(reps), b})
	if !ok {
		return 0, 0, fmt.Errorf("pollux: %s: (%d nodes, %d GPUs, local batch %d) outside the profiled shapes", a.Name, nodes, reps, localBsz)
	}
	return y[0], y[1], nil
}
