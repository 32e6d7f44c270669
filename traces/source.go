package traces

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gpusim/gpusim/internal/hugepage"
	"github.com/gpusim/gpusim/sim"
)

// TraceSource is the `workload.trace` block of a scenario: which trace to replay and
// how to reshape it. Load applies, in this order:
//
//  1. read the file (format, path; path is relative to the scenario's directory);
//  2. Filter (queues/vcs, classes, users; empty lists keep all);
//  3. Window: keep jobs with start_s <= submit < end_s and re-base submit to
//     submit - start_s;
//  4. sort by (submit, id) and keep the first Limit jobs;
//  5. LoadScale, or TargetLoad (LoadOn only): resampling seeded by the stream
//     "trace/resample";
//  6. TimeScale: multiply every submit time (durations and walltimes unchanged).
//
// The result is sorted by (submit, id).
type TraceSource struct {
	Format    string      `yaml:"format"`
	Path      string      `yaml:"path"`
	Filter    TraceFilter `yaml:"filter"`
	TimeScale float64     `yaml:"timeScale"` // multiplies submit times; 0 means 1; < 1 compresses arrivals (raises load)
	LoadScale float64     `yaml:"loadScale"` // 0 means 1; > 1 adds resampled copies; < 1 keeps a random subset
	// TargetLoad, when > 0, resamples (like LoadScale) by the factor that brings the
	// offered load on the cluster (GPU-seconds of demand / (cluster GPUs x submit
	// span)) to this value. Exclusive with loadScale; needs LoadOn.
	TargetLoad float64      `yaml:"targetLoad"`
	Window     *TraceWindow `yaml:"window"`
	Limit      int          `yaml:"limit"` // keep the first N jobs after filter and window; 0 = all
	// Shape, when "split", reshapes every whole-GPU job into full nodes plus a
	// remainder (SplitShape, docs/shapes.md) with NodeGPUs GPUs per full node;
	// "" keeps the importer's equal replicas.
	Shape    string `yaml:"shape"`
	NodeGPUs int32  `yaml:"nodeGPUs"` // GPUs of a full node for shape split; 0 = Options.NodeGPUs (the cluster's largest node)
	// Options are the importer options the scenario sets (not YAML): the
	// throughput table of formats that give work in steps.
	Options ReadOptions `yaml:"-"`
}

// TraceFilter keeps the jobs matching every non-empty list.
type TraceFilter struct {
	Queues  []string `yaml:"queues"`  // job queue (Philly VC, openb qos, Slurm partition, ...)
	VCs     []string `yaml:"vcs"`     // alias of queues (both lists are merged)
	Classes []string `yaml:"classes"` // sim.Classes names
	Users   []string `yaml:"users"`
}

// TraceWindow selects jobs by submit time in seconds of the trace's own clock.
type TraceWindow struct {
	Start float64 `yaml:"start_s"`
	End   float64 `yaml:"end_s"` // 0 = up to the end of the trace
}

// Validate checks the fields; paths are relative to the struct ("format",
// "filter.classes[1]", "window.end_s").
func (t *TraceSource) Validate() sim.FieldErrors {
	var fe sim.FieldErrors
	if t.Format == "" {
		fe.Add("format", "required (one of %s)", strings.Join(JobFormats(), ", "))
	} else if _, ok := jobFormats[t.Format]; !ok {
		fe.Add("format", "unknown job trace format %q (one of %s)", t.Format, strings.Join(JobFormats(), ", "))
	}
	if strings.TrimSpace(t.Path) == "" {
		fe.Add("path", "required")
	}
	fe = append(fe, t.Filter.validate()...)
	if !finite(t.TimeScale) || t.TimeScale < 0 {
		fe.Add("timeScale", "must be a finite number >= 0 (0 means 1), got %v", t.TimeScale)
	}
	if !finite(t.LoadScale) || t.LoadScale < 0 || t.LoadScale > 1000 {
		fe.Add("loadScale", "must be in [0, 1000] (0 means 1), got %v", t.LoadScale)
	}
	if !finite(t.TargetLoad) || t.TargetLoad < 0 || t.TargetLoad > 1000 {
		fe.Add("targetLoad", "must be in [0, 1000] (0 = not used), got %v", t.TargetLoad)
	} else if t.TargetLoad > 0 && t.LoadScale > 0 {
		fe.Add("targetLoad", "set loadScale or targetLoad, not both")
	}
	if w := t.Window; w != nil {
		if !finite(w.Start) || w.Start < 0 {
			fe.Add("window.start_s", "must be >= 0, got %v", w.Start)
		}
		if !finite(w.End) || w.End < 0 || (w.End != 0 && w.End <= w.Start) {
			fe.Add("window.end_s", "must be 0 (open) or greater than start_s, got %v", w.End)
		}
	}
	if t.Limit < 0 {
		fe.Add("limit", "must be >= 0, got %d", t.Limit)
	}
	fe = append(fe, t.validateShape()...)
	return fe
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func (f *TraceFilter) validate() sim.FieldErrors {
	var fe sim.FieldErrors
	list := func(name string, xs []string) {
		for i, x := range xs {
			if strings.TrimSpace(x) == "" {
				fe.Add(fmt.Sprintf("filter.%s[%d]", name, i), "must not be empty")
			}
		}
	}
	list("queues", f.Queues)
	list("vcs", f.VCs)
	list("users", f.Users)
	for i, c := range f.Classes {
		if _, err := sim.ParseClass(c); err != nil || c == "" {
			fe.Add(fmt.Sprintf("filter.classes[%d]", i), "unknown job class %q", c)
		}
	}
	return fe
}

// empty reports whether the filter keeps everything.
func (f *TraceFilter) empty() bool {
	return len(f.Queues)+len(f.VCs)+len(f.Classes)+len(f.Users) == 0
}

// Match reports whether the filter keeps job j.
func (f *TraceFilter) Match(j *sim.JobSpec) bool {
	if len(f.Queues)+len(f.VCs) > 0 && !slices.Contains(f.Queues, j.Queue) && !slices.Contains(f.VCs, j.Queue) {
		return false
	}
	if len(f.Classes) > 0 && !slices.Contains(f.Classes, string(j.Class)) {
		return false
	}
	if len(f.Users) > 0 && !slices.Contains(f.Users, j.User) {
		return false
	}
	return true
}

// ResolvePath returns path joined to baseDir unless it is absolute.
func ResolvePath(baseDir, path string) string {
	if filepath.IsAbs(path) || baseDir == "" {
		return path
	}
	return filepath.Join(baseDir, path)
}

// Load reads and reshapes the trace (see TraceSource). The report is the importer's,
// with notes on what the filter, window, limit and scaling removed or added. An
// empty result is an error.
func (t *TraceSource) Load(baseDir string, seed uint64) ([]sim.JobSpec, *ImportReport, error) {
	return t.LoadOn(baseDir, seed, 0)
}

// LoadOn is Load for a cluster of clusterGPUs GPUs, which TargetLoad needs (an
// error when TargetLoad is set and clusterGPUs <= 0). The resampling factor is
// TargetLoad / (offered load after filter, window and limit).
func (t *TraceSource) LoadOn(baseDir string, seed uint64, clusterGPUs int64) ([]sim.JobSpec, *ImportReport, error) {
	if err := t.Validate().Err(); err != nil {
		return nil, nil, err
	}
	if t.TargetLoad > 0 && clusterGPUs <= 0 {
		return nil, nil, fmt.Errorf("targetLoad needs the cluster size (GPUs)")
	}
	split, err := t.splitGPUs()
	if err != nil {
		return nil, nil, err
	}
	r, err := OpenJobsWith(t.Format, ResolvePath(baseDir, t.Path), t.Options)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	var start, end sim.Time = 0, sim.Never
	if t.Window != nil {
		start = sim.Time(sim.Seconds(t.Window.Start))
		if t.Window.End > 0 {
			end = sim.Time(sim.Seconds(t.Window.End))
		}
	}
	var acc jobChunks
	if h, ok := r.(rowsHinter); ok && t.Filter.empty() && t.Window == nil {
		// Every row is kept: reading into one slice of the right size saves
		// copying every job from chunks (and the chunks' memory). Unused
		// capacity is never touched, so it costs address space, not RSS.
		acc.reserve(h.rowsHint())
	}
	filtered, outside := 0, 0
	for {
		j, err := r.Next()
		if err != nil {
			if err == io.EOF {
				break
			}
			return nil, r.Report(), err
		}
		if !t.Filter.Match(&j) {
			filtered++
			continue
		}
		if j.Submit < start || j.Submit >= end {
			outside++
			continue
		}
		j.Submit -= start
		if split > 0 {
			SplitShape(&j, split)
		}
		acc.add(j)
	}
	jobs := acc.flatten()
	rep := r.Report()
	if !t.Filter.empty() {
		rep.Notes = append(rep.Notes, fmt.Sprintf("filter removed %d jobs", filtered))
	}
	if t.Window != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("window removed %d jobs; submit times re-based by -%gs", outside, t.Window.Start))
	}
	SortJobs(jobs)
	if t.Limit > 0 && len(jobs) > t.Limit {
		rep.Notes = append(rep.Notes, fmt.Sprintf("limit kept the first %d of %d jobs", t.Limit, len(jobs)))
		jobs = jobs[:t.Limit]
	}
	if len(jobs) == 0 {
		return nil, rep, fmt.Errorf("%s: no jobs left after filter/window/limit (%d rows read)", t.Path, rep.Rows)
	}
	factor := t.LoadScale
	if t.TargetLoad > 0 {
		now := OfferedLoad(jobs, clusterGPUs)
		if now <= 0 {
			return nil, rep, fmt.Errorf("%s: targetLoad: the trace has no GPU demand over a positive submit span", t.Path)
		}
		factor = t.TargetLoad / now
		if factor > 1000 {
			return nil, rep, fmt.Errorf("%s: targetLoad %g needs %.0fx the trace's jobs (offered load %.4g on %d GPUs); at most 1000x", t.Path, t.TargetLoad, factor, now, clusterGPUs)
		}
		rep.Notes = append(rep.Notes, fmt.Sprintf("targetLoad %g: offered load %.4g on %d GPUs, resampling factor %.4g", t.TargetLoad, now, clusterGPUs, factor))
	}
	if factor > 0 && factor != 1 {
		before := len(jobs)
		jobs = Resample(jobs, factor, seed)
		rep.Notes = append(rep.Notes, fmt.Sprintf("resampled x%.4g: %d -> %d jobs", factor, before, len(jobs)))
		if len(jobs) == 0 {
			return nil, rep, fmt.Errorf("%s: resampling x%.4g left no jobs", t.Path, factor)
		}
	}
	if t.TimeScale > 0 && t.TimeScale != 1 {
		ScaleTimes(jobs, t.TimeScale)
		rep.Notes = append(rep.Notes, fmt.Sprintf("timeScale %g applied to submit times", t.TimeScale))
	}
	SortJobs(jobs)
	return jobs, rep, nil
}

// OfferedLoad is the GPU demand of jobs (replicas x gpus x share x duration, in
// GPU-seconds) divided by clusterGPUs x the submit span; 0 when the span or the
// cluster is empty.
func OfferedLoad(jobs []sim.JobSpec, clusterGPUs int64) float64 {
	if len(jobs) == 0 || clusterGPUs <= 0 {
		return 0
	}
	lo, hi := jobs[0].Submit, jobs[0].Submit
	demand := 0.0
	for i := range jobs {
		j := &jobs[i]
		lo, hi = min(lo, j.Submit), max(hi, j.Submit)
		demand += float64(j.GPUDemandMilli()) / 1000 * j.Duration.Seconds()
	}
	span := hi.Sub(lo).Seconds()
	if span <= 0 {
		return 0
	}
	return demand / (float64(clusterGPUs) * span)
}

// SortJobs sorts jobs by (Submit, ID), the engine's canonical order (stable, so
// equal keys keep their order). Already sorted input, the common case of a trace,
// is only checked.
func SortJobs(jobs []sim.JobSpec) {
	if slices.IsSortedFunc(jobs, compareJobs) {
		return
	}
	slices.SortStableFunc(jobs, compareJobs)
}

func compareJobs(a, b sim.JobSpec) int {
	if a.Submit != b.Submit {
		if a.Submit < b.Submit {
			return -1
		}
		return 1
	}
	return strings.Compare(string(a.ID), string(b.ID))
}

// jobChunks collects jobs of unknown count in fixed-size chunks, so reading a
// large trace copies each job once (into the exact-size result of flatten)
// instead of through repeated slice growth.
type jobChunks struct {
	full     [][]sim.JobSpec
	cur      []sim.JobSpec
	n        int
	reserved bool // cur was sized by reserve
}

// reserve makes the first chunk hold n jobs (nothing when n <= 0 or jobs were
// added); when no more are added, flatten returns it without copying.
func (c *jobChunks) reserve(n int) {
	if n > 0 && c.n == 0 {
		c.cur, c.reserved = make([]sim.JobSpec, 0, n), true
		hugepage.Advise(c.cur)
	}
}

const jobChunkLen = 1 << 14

func (c *jobChunks) add(j sim.JobSpec) {
	if len(c.cur) == cap(c.cur) {
		if c.cur != nil {
			c.full = append(c.full, c.cur)
		}
		c.cur = make([]sim.JobSpec, 0, jobChunkLen)
	}
	c.cur = append(c.cur, j)
	c.n++
}

// flatten returns every job added, in order, in one slice (nil when none) and
// empties c.
func (c *jobChunks) flatten() []sim.JobSpec {
	if c.n == 0 {
		return nil
	}
	if c.reserved && len(c.full) == 0 {
		out := c.cur
		*c = jobChunks{}
		return out
	}
	out := make([]sim.JobSpec, 0, c.n)
	for i, ch := range c.full {
		out = append(out, ch...)
		c.full[i] = nil
	}
	out = append(out, c.cur...)
	*c = jobChunks{}
	return out
}

// ScaleTimes multiplies every submit time by f (> 0), rounding to the microsecond.
func ScaleTimes(jobs []sim.JobSpec, f float64) {
	for i := range jobs {
		jobs[i].Submit = sim.Time(sim.Seconds(jobs[i].Submit.Seconds() * f))
	}
}

// Resample scales the number of jobs by factor (seeded by sim.Stream(seed,
// "trace/resample")), which scales the offered load in expectation while keeping
// the arrival pattern:
//
//   - factor < 1: a uniformly random subset of round(factor*n) jobs is kept, with
//     their own submit times;
//   - factor > 1: every job is kept and round((factor-1)*n) copies are added; each
//     copy takes the shape (resources, duration, queue, ...) of one job drawn with
//     replacement and the submit time of another, independently drawn job, and its
//     ID is "<id>#r<k>" (k counts the copies from 1).
//
// jobs must be in a deterministic order (e.g. SortJobs); the result is unsorted.
func Resample(jobs []sim.JobSpec, factor float64, seed uint64) []sim.JobSpec {
	n := len(jobs)
	if n == 0 || factor == 1 {
		return jobs
	}
	rng := sim.Stream(seed, "trace/resample")
	if factor < 1 {
		k := int(math.Round(factor * float64(n)))
		idx := rng.Perm(n)[:k]
		slices.Sort(idx)
		out := make([]sim.JobSpec, k)
		for i, x := range idx {
			out[i] = jobs[x]
		}
		return out
	}
	extra := int(math.Round((factor - 1) * float64(n)))
	out := make([]sim.JobSpec, n, n+extra)
	copy(out, jobs)
	for k := 1; k <= extra; k++ {
		c := jobs[rng.IntN(n)]
		c.Submit = jobs[rng.IntN(n)].Submit
		c.ID = sim.JobID(string(c.ID) + "#r" + strconv.Itoa(k))
		c.GPUModels = slices.Clone(c.GPUModels)
		out = append(out, c)
	}
	return out
}

// ClusterSource is the `cluster.from` block of a scenario: build the cluster from a
// node list. Nodes are kept in file order.
type ClusterSource struct {
	Format string `yaml:"format"`
	Path   string `yaml:"path"` // relative to the scenario's directory
	// GPUOnly drops nodes without GPUs.
	GPUOnly bool `yaml:"gpuOnly"`
	// NodesPerLeaf, when > 0, puts consecutive groups of that many nodes under one
	// leaf switch (Leaf = index/NodesPerLeaf); 0 puts every node on leaf 0.
	NodesPerLeaf int `yaml:"nodesPerLeaf"`
	// LeavesPerSpine, when > 0, groups leaves under spines the same way.
	LeavesPerSpine int `yaml:"leavesPerSpine"`
	// DefaultMemoryMiB, when > 0, is the memory of nodes whose list gives none
	// (spot-gpu-nodes has no memory column).
	DefaultMemoryMiB int64 `yaml:"defaultMemoryMiB"`
}

// Validate checks the fields; paths are relative to the struct.
func (c *ClusterSource) Validate() sim.FieldErrors {
	var fe sim.FieldErrors
	if c.Format == "" {
		fe.Add("format", "required (one of %s)", strings.Join(NodeFormats(), ", "))
	} else if _, ok := nodeFormats[c.Format]; !ok {
		fe.Add("format", "unknown node list format %q (one of %s)", c.Format, strings.Join(NodeFormats(), ", "))
	}
	if strings.TrimSpace(c.Path) == "" {
		fe.Add("path", "required")
	}
	if c.NodesPerLeaf < 0 {
		fe.Add("nodesPerLeaf", "must be >= 0, got %d", c.NodesPerLeaf)
	}
	if c.LeavesPerSpine < 0 {
		fe.Add("leavesPerSpine", "must be >= 0, got %d", c.LeavesPerSpine)
	}
	if c.DefaultMemoryMiB < 0 {
		fe.Add("defaultMemoryMiB", "must be >= 0, got %d", c.DefaultMemoryMiB)
	}
	return fe
}

// Load reads the node list and applies GPUOnly, DefaultMemoryMiB and the leaf/spine
// grouping.
func (c *ClusterSource) Load(baseDir string) ([]sim.NodeSpec, error) {
	if err := c.Validate().Err(); err != nil {
		return nil, err
	}
	nodes, err := ReadNodes(c.Format, ResolvePath(baseDir, c.Path))
	if err != nil {
		return nil, err
	}
	if c.GPUOnly {
		nodes = slices.DeleteFunc(nodes, func(n sim.NodeSpec) bool { return n.GPUs == 0 })
		if len(nodes) == 0 {
			return nil, fmt.Errorf("%s: no GPU nodes", c.Path)
		}
	}
	for i := range nodes {
		leaf := 0
		if c.NodesPerLeaf > 0 {
			leaf = i / c.NodesPerLeaf
		}
		spine := 0
		if c.LeavesPerSpine > 0 {
			spine = leaf / c.LeavesPerSpine
		}
		nodes[i].Leaf, nodes[i].Spine = int32(leaf), int32(spine)
		if nodes[i].MemoryMiB == 0 && c.DefaultMemoryMiB > 0 {
			nodes[i].MemoryMiB = c.DefaultMemoryMiB
		}
	}
	return nodes, nil
}
