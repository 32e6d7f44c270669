package scenarios

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
)

// Failure injection and recovery: the scenario's failures: block and its
// translation to sim.FailureConfig (docs/failures.md).

// Published defaults (Llama 3 405B pre-training, arXiv:2407.21783, the
// reliability table; /work/shared/traces/gpu-failure-stats/README.md §1):
// 419 unexpected interruptions in 54 days on 16,384 H100s, 58.7 % of them
// GPU-related. Per-GPU MTBF of the GPU-related causes =
// 16,384 × 1,296 h / (0.587 × 419); of the other causes (network, host,
// software), spread over the GPUs of a node, 16,384 × 1,296 h / (0.413 × 419).
const (
	metaGPUHours   = 16384 * 54 * 24
	metaUnexp      = 419
	metaGPUShare   = 0.587
	DefaultRepair  = 24 * sim.Hour // assumption: the sources give no repair time
	DefaultRebuild = 60 * sim.Second
)

var (
	// DefaultGPUMTBF is the per-GPU MTBF of GPU-related failures (≈ 86,300 h).
	DefaultGPUMTBF = sim.Seconds(3600 * metaGPUHours / (metaGPUShare * metaUnexp))
	// DefaultOtherMTBFPerGPU is the per-GPU MTBF of the other causes (≈ 122,700
	// h); a node of g GPUs fails at g times that rate.
	DefaultOtherMTBFPerGPU = sim.Seconds(3600 * metaGPUHours / ((1 - metaGPUShare) * metaUnexp))
)

// FailuresSpec is the scenario's failures: block.
type FailuresSpec struct {
	// Recovery is the default strategy (restart | fault-tolerant), overridable
	// per policy with policies[].recovery.
	Recovery RecoverySpec `yaml:",inline"`
	// Random turns the random failure processes on (default true); false
	// replays only the log and maintenance.
	Random *bool `yaml:"random"`
	// GPU and Node are the per-GPU and per-node failure processes.
	GPU  *ProcessSpec `yaml:"gpu"`
	Node *ProcessSpec `yaml:"node"`
	// Correlated are failures of a group of nodes at once (rack, leaf switch, PDU).
	Correlated []CorrelatedSpec `yaml:"correlated"`
	// Maintenance is a rolling schedule of planned drains.
	Maintenance *MaintenanceSpec `yaml:"maintenance"`
	// Log replays real incidents from a CSV file (time,target,duration).
	Log *FailureLogSpec `yaml:"log"`
}

// RecoverySpec is a recovery strategy with its settings.
type RecoverySpec struct {
	Strategy     string        `yaml:"strategy"`     // restart (default) | fault-tolerant
	RebuildCost  *policies.Dur `yaml:"rebuildCost"`  // fault-tolerant pause (default 60s)
	UseFreeNodes *bool         `yaml:"useFreeNodes"` // fault-tolerant may use free in-service nodes (default true)
	Spares       float64       `yaml:"spares"`       // fraction of nodes held as hot spares (default 0)
	// OptimizeCheckpoints "young-daly" gives each job τ = sqrt(2·δ·M) − δ.
	OptimizeCheckpoints string `yaml:"optimizeCheckpoints"`
}

// DistSpec is a distribution of a duration.
type DistSpec struct {
	Distribution string       `yaml:"distribution"` // exponential (default) | weibull | fixed
	Mean         policies.Dur `yaml:"mean"`         // the mean (Weibull: scale = mean / Γ(1+1/k))
	Shape        float64      `yaml:"shape"`        // Weibull k
}

// ProcessSpec is a per-GPU or per-node failure process.
type ProcessSpec struct {
	Enabled *bool `yaml:"enabled"` // default true
	// Distribution of the time to failure and its MTBF (per GPU, or per node).
	Distribution string       `yaml:"distribution"`
	MTBF         policies.Dur `yaml:"mtbf"`
	Shape        float64      `yaml:"shape"`
	// PerModel overrides the MTBF per GPU model.
	PerModel map[string]policies.Dur `yaml:"perModel"`
	Repair   *DistSpec               `yaml:"repair"`
}

// CorrelatedSpec is a failure process of node groups.
type CorrelatedSpec struct {
	Name   string       `yaml:"name"`
	Level  string       `yaml:"level"` // leaf | spine (a topology level), or
	Group  int          `yaml:"group"` // groups of this many consecutive nodes (a PDU)
	MTBF   policies.Dur `yaml:"mtbf"`  // per group
	Shape  float64      `yaml:"shape"`
	Dist   string       `yaml:"distribution"`
	Repair *DistSpec    `yaml:"repair"`
}

// MaintenanceSpec is a rolling maintenance schedule.
type MaintenanceSpec struct {
	Start      policies.Dur `yaml:"start"`      // first window
	Every      policies.Dur `yaml:"every"`      // period
	Nodes      int          `yaml:"nodes"`      // nodes per window, rolling through the cluster
	Duration   policies.Dur `yaml:"duration"`   // how long they stay down
	Checkpoint *bool        `yaml:"checkpoint"` // jobs checkpoint before the drain (default true)
}

// FailureLogSpec is a failure log to replay.
type FailureLogSpec struct {
	Path string `yaml:"path"`
}

var recoveryPolicies = []string{"fifo", "sjf", "priority", "easy-backfill", "conservative-backfill"}

func (r *RecoverySpec) validate(fe *sim.FieldErrors, path string, saveCost policies.Dur) {
	if r.Strategy != "" {
		if _, err := sim.ParseRecovery(r.Strategy); err != nil {
			fe.Add(path+".strategy", "%v", err)
		}
	}
	if r.RebuildCost != nil && *r.RebuildCost < 0 {
		fe.Add(path+".rebuildCost", "must be >= 0")
	}
	if !(r.Spares >= 0 && r.Spares < 1) {
		fe.Add(path+".spares", "must be a fraction in [0, 1)")
	}
	switch r.OptimizeCheckpoints {
	case "", "none":
	case "young-daly":
		if saveCost <= 0 {
			fe.Add(path+".optimizeCheckpoints", "young-daly needs simulation.checkpointSaveCost > 0 (δ in τ = sqrt(2·δ·M) − δ)")
		}
	default:
		fe.Add(path+".optimizeCheckpoints", "want young-daly or none, got %q", r.OptimizeCheckpoints)
	}
}

func validDist(fe *sim.FieldErrors, path, kind string, shape float64, fixedOK bool) {
	switch kind {
	case "", "exponential":
	case "weibull":
		if !(shape > 0) || math.IsInf(shape, 0) {
			fe.Add(path+".shape", "a Weibull distribution needs shape > 0")
		}
	case "fixed":
		if !fixedOK {
			fe.Add(path+".distribution", "want exponential or weibull")
		}
	default:
		fe.Add(path+".distribution", "unknown distribution %q (want exponential, weibull or fixed)", kind)
	}
}

func (d *DistSpec) validate(fe *sim.FieldErrors, path string) {
	if d == nil {
		return
	}
	validDist(fe, path, d.Distribution, d.Shape, true)
	if d.Mean <= 0 {
		fe.Add(path+".mean", "must be > 0")
	}
}

// validateFailures checks the failures: block and the policies' recovery
// overrides (paths from the root).
func (s *Scenario) validateFailures() sim.FieldErrors {
	var fe sim.FieldErrors
	f := s.Failures
	for i := range s.Policies {
		if s.Policies[i].Recovery != nil {
			p := fmt.Sprintf("policies[%d].recovery", i)
			if f == nil {
				fe.Add(p, "needs a failures: block")
				continue
			}
			s.Policies[i].Recovery.validate(&fe, p, s.Simulation.CheckpointSaveCost)
		}
	}
	if f == nil {
		return fe
	}
	f.Recovery.validate(&fe, "failures", s.Simulation.CheckpointSaveCost)
	if s.Interference != nil {
		fe.Add("failures", "not supported with interference: (device-level GPU sharing): a failure would have to stop co-located jobs, which the sharing model does not do")
	}
	if s.Experiment != nil {
		fe.Add("failures", "not supported in a fill experiment")
	}
	for i, p := range s.Cluster.Pools {
		if p.Sharing != nil && p.Sharing.Mode != "" && p.Sharing.Mode != "exclusive" {
			fe.Add(fmt.Sprintf("cluster.pools[%d].sharing", i), "failures: are not supported with GPU sharing modes")
		}
	}
	for i, p := range s.Policies {
		if p.Name != "" && !slices.Contains(recoveryPolicies, p.Name) {
			fe.Add(fmt.Sprintf("policies[%d].name", i), "failures: are supported only with %s: %s keeps its own admission, lease or round state, which engine-driven interruptions and recoveries would leave wrong", strings.Join(recoveryPolicies, ", "), p.Name)
		}
	}
	for _, pp := range []struct {
		name string
		p    *ProcessSpec
	}{{"gpu", f.GPU}, {"node", f.Node}} {
		if pp.p == nil {
			continue
		}
		path := "failures." + pp.name
		validDist(&fe, path, pp.p.Distribution, pp.p.Shape, false)
		if pp.p.MTBF < 0 {
			fe.Add(path+".mtbf", "must be > 0")
		}
		for _, m := range slices.Sorted(maps.Keys(pp.p.PerModel)) {
			if pp.p.PerModel[m] <= 0 {
				fe.Add(path+".perModel."+m, "must be > 0")
			}
		}
		pp.p.Repair.validate(&fe, path+".repair")
	}
	names := map[string]bool{"gpu": true, "node": true, "maintenance": true, "log": true}
	for i, c := range f.Correlated {
		path := fmt.Sprintf("failures.correlated[%d]", i)
		if c.Name == "" {
			fe.Add(path+".name", "required")
		} else if names[c.Name] {
			fe.Add(path+".name", "duplicate or reserved name %q", c.Name)
		}
		names[c.Name] = true
		switch {
		case c.Level != "" && c.Group != 0:
			fe.Add(path+".group", "give level or group, not both")
		case c.Level == "" && c.Group == 0:
			fe.Add(path+".level", "needs level (leaf or spine) or group (nodes per group)")
		case c.Level != "" && c.Level != "leaf" && c.Level != "spine":
			fe.Add(path+".level", "want leaf or spine, got %q", c.Level)
		case c.Group < 0:
			fe.Add(path+".group", "must be >= 1")
		}
		if c.MTBF <= 0 {
			fe.Add(path+".mtbf", "must be > 0")
		}
		validDist(&fe, path, c.Dist, c.Shape, false)
		c.Repair.validate(&fe, path+".repair")
	}
	if m := f.Maintenance; m != nil {
		if m.Every <= 0 {
			fe.Add("failures.maintenance.every", "must be > 0")
		}
		if m.Start < 0 {
			fe.Add("failures.maintenance.start", "must be >= 0")
		}
		if m.Nodes < 1 {
			fe.Add("failures.maintenance.nodes", "must be >= 1")
		}
		if m.Duration <= 0 {
			fe.Add("failures.maintenance.duration", "must be > 0")
		}
	}
	if f.Log != nil && f.Log.Path == "" {
		fe.Add("failures.log.path", "required")
	}
	return fe
}

// youngDalyAnywhere reports whether some policy uses Young/Daly intervals
// (then checkpointSaveCost works without checkpointInterval).
func (s *Scenario) youngDalyAnywhere() bool {
	if s.Failures == nil {
		return false
	}
	for i := range s.Policies {
		if s.recoveryFor(i).OptimizeCheckpoints == "young-daly" {
			return true
		}
	}
	return s.Failures.Recovery.OptimizeCheckpoints == "young-daly"
}

// recoveryFor merges policy i's recovery override over the block's default.
func (s *Scenario) recoveryFor(i int) RecoverySpec {
	r := s.Failures.Recovery
	if i >= 0 && i < len(s.Policies) {
		if o := s.Policies[i].Recovery; o != nil {
			if o.Strategy != "" {
				r.Strategy = o.Strategy
			}
			if o.RebuildCost != nil {
				r.RebuildCost = o.RebuildCost
			}
			if o.UseFreeNodes != nil {
				r.UseFreeNodes = o.UseFreeNodes
			}
			if o.Spares != 0 {
				r.Spares = o.Spares
			}
			if o.OptimizeCheckpoints != "" {
				r.OptimizeCheckpoints = o.OptimizeCheckpoints
			}
		}
	}
	return r
}

func (d *DistSpec) dist(def sim.Duration) sim.Dist {
	if d == nil {
		return sim.Dist{Kind: sim.DistExponential, Mean: def}
	}
	return mkDist(d.Distribution, sim.Duration(d.Mean), d.Shape)
}

func mkDist(kind string, mean sim.Duration, shape float64) sim.Dist {
	switch kind {
	case "weibull":
		return sim.Dist{Kind: sim.DistWeibull, Shape: shape, Scale: sim.Duration(float64(mean) / math.Gamma(1+1/shape))}
	case "fixed":
		return sim.Dist{Kind: sim.DistFixed, Mean: mean}
	}
	return sim.Dist{Kind: sim.DistExponential, Mean: mean}
}

func (p *ProcessSpec) on() bool { return p == nil || p.Enabled == nil || *p.Enabled }

// mtbfFor is the process's MTBF for GPU model m (def when unset).
func (p *ProcessSpec) mtbfFor(m string, def sim.Duration) sim.Duration {
	if p == nil {
		return def
	}
	if v, ok := p.PerModel[m]; ok {
		return sim.Duration(v)
	}
	if p.MTBF > 0 {
		return sim.Duration(p.MTBF)
	}
	return def
}

func (p *ProcessSpec) ttf(mtbf sim.Duration) sim.Dist {
	if p == nil {
		return mkDist("", mtbf, 0)
	}
	return mkDist(p.Distribution, mtbf, p.Shape)
}

func (p *ProcessSpec) repair() sim.Dist {
	if p == nil {
		return sim.Dist{Kind: sim.DistExponential, Mean: DefaultRepair}
	}
	return p.Repair.dist(DefaultRepair)
}

// nodeMTBF is the default MTBF of a node with g GPUs (other causes).
func nodeMTBF(g int32) sim.Duration {
	return DefaultOtherMTBFPerGPU / sim.Duration(max(1, g))
}

// FailureConfig builds policy i's failure configuration for cluster c: a
// fresh source (each engine consumes its own), the recovery strategy, spares
// and the checkpoint intervals. Nil without a failures: block.
func (s *Scenario) FailureConfig(i int, c *sim.Cluster) (*sim.FailureConfig, error) {
	f := s.Failures
	if f == nil {
		return nil, nil
	}
	rs := s.recoveryFor(i)
	fc := &sim.FailureConfig{RebuildCost: DefaultRebuild, UseFreeNodes: true, PlannedCheckpoint: true}
	if rs.Strategy != "" {
		fc.Recovery, _ = sim.ParseRecovery(rs.Strategy)
	}
	if rs.RebuildCost != nil {
		fc.RebuildCost = sim.Duration(*rs.RebuildCost)
	}
	if rs.UseFreeNodes != nil {
		fc.UseFreeNodes = *rs.UseFreeNodes
	}
	fc.Spares = pickSpares(c, rs.Spares)
	if m := f.Maintenance; m != nil && m.Checkpoint != nil {
		fc.PlannedCheckpoint = *m.Checkpoint
	}
	procs := s.failureProcesses(c)
	var fixed []sim.Incident
	if f.Log != nil {
		var err error
		if fixed, err = s.readFailureLog(c); err != nil {
			return nil, err
		}
	}
	g, err := sim.NewGenerator(s.SeedValue(), procs, fixed)
	if err != nil {
		return nil, s.fieldErr("failures", err)
	}
	if m := f.Maintenance; m != nil {
		g.AddPeriodic(maintenanceGroups(c, m.Nodes), sim.Time(m.Start), sim.Duration(m.Every), sim.Duration(m.Duration))
	}
	fc.Source = g
	if rs.OptimizeCheckpoints == "young-daly" {
		fc.CheckpointInterval = s.youngDaly(c)
	}
	return fc, nil
}

func (s *Scenario) failureProcesses(c *sim.Cluster) []sim.FailureProcess {
	f := s.Failures
	if f.Random != nil && !*f.Random {
		return nil
	}
	var procs []sim.FailureProcess
	if f.GPU.on() {
		p := sim.FailureProcess{Name: "gpu", Repair: f.GPU.repair()}
		for n := sim.NodeID(0); int(n) < c.NumNodes(); n++ {
			d := f.GPU.ttf(f.GPU.mtbfFor(c.Node(n).GPUModel, DefaultGPUMTBF))
			lo, hi := c.NodeGPUs(n)
			for g := lo; g < hi; g++ {
				p.Targets = append(p.Targets, sim.FailureTarget{GPU: g, TTF: d})
			}
		}
		procs = append(procs, p)
	}
	if f.Node.on() {
		p := sim.FailureProcess{Name: "node", Repair: f.Node.repair()}
		for n := sim.NodeID(0); int(n) < c.NumNodes(); n++ {
			nd := c.Node(n)
			d := f.Node.ttf(f.Node.mtbfFor(nd.GPUModel, nodeMTBF(nd.GPUs)))
			p.Targets = append(p.Targets, sim.FailureTarget{GPU: -1, Nodes: []sim.NodeID{n}, TTF: d})
		}
		procs = append(procs, p)
	}
	for _, cs := range f.Correlated {
		p := sim.FailureProcess{Name: cs.Name, Repair: cs.Repair.dist(DefaultRepair)}
		d := mkDist(cs.Dist, sim.Duration(cs.MTBF), cs.Shape)
		for _, grp := range nodeGroups(c, cs.Level, cs.Group) {
			p.Targets = append(p.Targets, sim.FailureTarget{GPU: -1, Nodes: grp, TTF: d})
		}
		procs = append(procs, p)
	}
	return procs
}

// nodeGroups splits the nodes by leaf or spine, or into groups of size
// consecutive nodes.
func nodeGroups(c *sim.Cluster, level string, size int) [][]sim.NodeID {
	var out [][]sim.NodeID
	key := func(n sim.NodeID) int32 {
		switch level {
		case "leaf":
			return c.Node(n).Leaf
		case "spine":
			return c.Node(n).Spine
		}
		return int32(int(n) / size)
	}
	for n := sim.NodeID(0); int(n) < c.NumNodes(); n++ {
		if n == 0 || key(n) != key(n-1) {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], n)
	}
	return out
}

// maintenanceGroups cuts the nodes into windows of k consecutive nodes.
func maintenanceGroups(c *sim.Cluster, k int) [][]sim.NodeID {
	var out [][]sim.NodeID
	for lo := 0; lo < c.NumNodes(); lo += k {
		var g []sim.NodeID
		for n := lo; n < min(lo+k, c.NumNodes()); n++ {
			g = append(g, sim.NodeID(n))
		}
		out = append(out, g)
	}
	return out
}

// pickSpares holds round(frac × nodes) nodes as spares, spread over the
// leaves: the last node of each leaf, then the one before, and so on, so a
// gang confined to a leaf finds a spare in it.
func pickSpares(c *sim.Cluster, frac float64) []sim.NodeID {
	k := int(math.Round(frac * float64(c.NumNodes())))
	if k <= 0 {
		return nil
	}
	leaves := nodeGroups(c, "leaf", 0)
	var out []sim.NodeID
	for depth := 1; len(out) < k; depth++ {
		added := false
		for _, l := range leaves {
			if len(out) < k && depth <= len(l) {
				out = append(out, l[len(l)-depth])
				added = true
			}
		}
		if !added {
			break
		}
	}
	slices.Sort(out)
	return out
}

// youngDaly gives each job τ = sqrt(2·δ·M) − δ (Young 1974, Daly 2006 first
// order): δ the checkpoint save cost, M the job's MTBF from the GPU and node
// processes over the GPUs and nodes it occupies (correlated failures and
// maintenance excluded).
func (s *Scenario) youngDaly(c *sim.Cluster) func(*sim.JobSpec) sim.Duration {
	f := s.Failures
	delta := sim.Duration(s.Simulation.CheckpointSaveCost).Seconds()
	def := c.Node(0)
	byModel := map[string]*sim.NodeSpec{}
	for n := sim.NodeID(0); int(n) < c.NumNodes(); n++ {
		if _, ok := byModel[c.Node(n).GPUModel]; !ok {
			byModel[c.Node(n).GPUModel] = c.Node(n)
		}
	}
	return func(j *sim.JobSpec) sim.Duration {
		nd := def
		if len(j.GPUModels) > 0 {
			if x, ok := byModel[j.GPUModels[0]]; ok {
				nd = x
			}
		}
		rate := 0.0 // per second
		gpus := float64(j.TotalGPUs())
		nodes := float64(j.Replicas)
		if nd.GPUs > 0 && j.GPUsPerReplica > 0 {
			nodes = math.Ceil(gpus / float64(nd.GPUs))
		}
		if f.Random == nil || *f.Random {
			if f.GPU.on() {
				rate += gpus / f.GPU.ttf(f.GPU.mtbfFor(nd.GPUModel, DefaultGPUMTBF)).MeanValue().Seconds()
			}
			if f.Node.on() {
				rate += nodes / f.Node.ttf(f.Node.mtbfFor(nd.GPUModel, nodeMTBF(nd.GPUs))).MeanValue().Seconds()
			}
		}
		if rate <= 0 {
			return 0 // no failures expected: no periodic checkpoints
		}
		return YoungDaly(sim.Seconds(delta), sim.Seconds(1/rate))
	}
}

// YoungDaly returns the checkpoint interval τ = sqrt(2·δ·M) − δ for save cost
// δ and MTBF M, rounded to whole seconds, at least 1 s.
func YoungDaly(delta, mtbf sim.Duration) sim.Duration {
	tau := math.Sqrt(2*delta.Seconds()*mtbf.Seconds()) - delta.Seconds()
	return max(sim.Second, sim.Seconds(math.Round(tau)))
}

// readFailureLog reads failures.log.path: a CSV with header time,target,duration
// (seconds; target a node name, "<node>/gpu<i>" for one GPU, "leaf:<i>" or
// "spine:<i>" for a group; an optional fourth column planned = true/false).
func (s *Scenario) readFailureLog(c *sim.Cluster) ([]sim.Incident, error) {
	path := s.Resolve(s.Failures.Log.Path)
	fh, err := os.Open(path)
	if err != nil {
		return nil, s.fieldErr("failures.log.path", err)
	}
	defer fh.Close()
	inc, err := parseFailureLog(path, fh, c)
	if err != nil {
		return nil, s.fieldErr("failures.log.path", err)
	}
	return inc, nil
}

func parseFailureLog(name string, r io.Reader, c *sim.Cluster) ([]sim.Incident, error) {
	byName := map[string]sim.NodeID{}
	for n := sim.NodeID(0); int(n) < c.NumNodes(); n++ {
		byName[c.Node(n).Name] = n
	}
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s:1: header: %w", name, err)
	}
	h := strings.Join(head, ",")
	if h != "time,target,duration" && h != "time,target,duration,planned" {
		return nil, fmt.Errorf("%s:1: header: want time,target,duration[,planned], got %s", name, h)
	}
	var out []sim.Incident
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		bad := func(col, format string, a ...any) error {
			return fmt.Errorf("%s:%d: column %s: %s", name, line, col, fmt.Sprintf(format, a...))
		}
		if len(rec) != len(head) {
			return nil, fmt.Errorf("%s:%d: want %d columns, got %d", name, line, len(head), len(rec))
		}
		t, err := strconv.ParseFloat(rec[0], 64)
		if err != nil || t < 0 || math.IsInf(t, 0) {
			return nil, bad("time", "want seconds >= 0, got %q", rec[0])
		}
		d, err := strconv.ParseFloat(rec[2], 64)
		if err != nil || d <= 0 || math.IsInf(d, 0) {
			return nil, bad("duration", "want seconds > 0, got %q", rec[2])
		}
		in := sim.Incident{At: sim.Time(sim.Seconds(t)), Repair: sim.Seconds(d), GPU: -1, Cause: "log"}
		if len(rec) == 4 {
			p, err := strconv.ParseBool(rec[3])
			if err != nil {
				return nil, bad("planned", "want true or false, got %q", rec[3])
			}
			in.Planned = p
		}
		tg := rec[1]
		switch {
		case strings.HasPrefix(tg, "leaf:") || strings.HasPrefix(tg, "spine:"):
			lv, idx, _ := strings.Cut(tg, ":")
			k, err := strconv.Atoi(idx)
			if err != nil {
				return nil, bad("target", "want %s:<index>, got %q", lv, tg)
			}
			for n := sim.NodeID(0); int(n) < c.NumNodes(); n++ {
				if lv == "leaf" && c.Node(n).Leaf == int32(k) || lv == "spine" && c.Node(n).Spine == int32(k) {
					in.Nodes = append(in.Nodes, n)
				}
			}
			if len(in.Nodes) == 0 {
				return nil, bad("target", "no node in %s", tg)
			}
		case strings.Contains(tg, "/gpu"):
			node, gi, _ := strings.Cut(tg, "/gpu")
			n, ok := byName[node]
			k, err := strconv.Atoi(gi)
			lo, hi := c.NodeGPUs(n)
			if !ok || err != nil || k < 0 || int(lo)+k >= int(hi) {
				return nil, bad("target", "no GPU %q (want <node>/gpu<index>)", tg)
			}
			in.GPU = lo + sim.GPUID(k)
		default:
			n, ok := byName[tg]
			if !ok {
				return nil, bad("target", "unknown node %q", tg)
			}
			in.Nodes = []sim.NodeID{n}
		}
		out = append(out, in)
	}
}
