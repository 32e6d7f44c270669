// Package gandiva simulates Gandiva (Xiao et al., OSDI 2018) as the policy
// "gandiva": affinity-based placement, packing of low-utilisation jobs on one
// GPU, time-slicing when the cluster is oversubscribed, introspective
// un-packing, migration (checkpoint at an iteration boundary, restart elsewhere
// after migrationDelay) and the grow-shrink of the introspective mode, on
// gpusim's device-level sharing model. docs/colocation.md lists the rules, the
// parameters and every difference from the paper.
package gandiva

import (
	"errors"
	"fmt"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/policies/internal/coloc"
	"github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/sim"
)

// Params are gandiva's parameters.
type Params struct {
	// PackUtilisation: a shareable job is packed onto a GPU when the solo
	// sm_util of its jobs plus its own stays at or below this (default 1.0:
	// the kernels fit side by side).
	PackUtilisation float64 `yaml:"packUtilisation"`
	// UnknownUtilisation is the sm_util assumed for a job whose trace gives none
	// (default 1.0: never packed).
	UnknownUtilisation *float64 `yaml:"unknownUtilisation"`
	// TimeSlice: when neither a free GPU nor a packing fits, a shareable job
	// time-slices a time-slicing GPU with the fewest jobs (default true).
	TimeSlice *bool `yaml:"timeSlice"`
	// Introspect: a packed GPU whose jobs' measured speeds sum below 1 is
	// un-packed (default true).
	Introspect *bool `yaml:"introspect"`
	// Migrate: jobs slowed by sharing move to a free GPU when the expected gain
	// exceeds migrationDelay (grow), and un-packed jobs move (default true).
	Migrate *bool `yaml:"migrate"`
	// MigrationDelay is the restore time a migrated job spends on its new GPU
	// before it progresses again (default 45s).
	MigrationDelay policies.Dur `yaml:"migrationDelay"`
	// Placement is the placer for multi-replica gangs (default best-fit);
	// single-replica jobs use the affinity node sets.
	Placement string `yaml:"placement"`
}

func init() {
	policies.RegisterDecoded[Params](policies.Info{Name: "gandiva",
		Summary: "Gandiva (OSDI'18): affinity node sets, packing by sm_util, time-slicing when oversubscribed, introspective un-packing, migration with its cost, grow-shrink.",
		Params:  "packUtilisation (1.0); unknownUtilisation (1.0); timeSlice, introspect, migrate (true); migrationDelay (45s); placement (best-fit, gangs)"}, New)
}

// how a sharer joined its GPU
const (
	joinNone  uint8 = iota
	joinPack        // packed by utilisation (introspection applies)
	joinSlice       // time-sliced (oversubscription)
)

// Policy is the gandiva policy.
type Policy struct {
	packU, unknownU            float64
	slice, introspect, migrate bool
	delay                      sim.Duration
	gang                       placement.Placer
	tab                        coloc.Table
	join                       []uint8 // per JobRef: how it joined its GPU in its current run
	noPack                     []bool  // per JobRef: un-packed once, never packed again
	aff                        []int32 // per node: GPUs per replica of its jobs (0 none, -1 mixed)
	pl                         placement.Placement
	Migrations, Unpacks, Packs int64 // counters (tests, docs)
	TimeSlices                 int64
	packMemo, sliceMemo        coloc.Memo // failed joins of this scheduling point
	wholeFail                  struct {
		k, cpu, mem int64
		valid       bool
	} // pending loop: smallest single-replica demand that found no free node
	scratchNodes []sim.NodeID
	scratchGPUs  []sim.GPUID
}

// New builds the policy from its parameters; errors name the field.
func New(p Params) (*Policy, error) {
	var errs []error
	g := &Policy{packU: 1, unknownU: 1, slice: true, introspect: true, migrate: true, delay: 45 * sim.Second}
	if p.PackUtilisation < 0 || p.PackUtilisation > 4 {
		errs = append(errs, fmt.Errorf("packUtilisation: must be in [0, 4], got %v", p.PackUtilisation))
	} else if p.PackUtilisation > 0 {
		g.packU = p.PackUtilisation
	}
	if u := p.UnknownUtilisation; u != nil {
		if !(*u >= 0 && *u <= 1) {
			errs = append(errs, fmt.Errorf("unknownUtilisation: must be in [0, 1], got %v", *u))
		}
		g.unknownU = *u
	}
	for _, b := range []struct {
		v   *bool
		dst *bool
	}{{p.TimeSlice, &g.slice}, {p.Introspect, &g.introspect}, {p.Migrate, &g.migrate}} {
		if b.v != nil {
			*b.dst = *b.v
		}
	}
	if p.MigrationDelay > 0 {
		g.delay = sim.Duration(p.MigrationDelay)
	}
	name := p.Placement
	if name == "" {
		name = "best-fit"
	}
	var err error
	if g.gang, err = placement.New(name); err != nil {
		errs = append(errs, fmt.Errorf("placement: %w", err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return g, nil
}

// Name implements sim.Policy.
func (g *Policy) Name() string { return "gandiva" }

func (g *Policy) init(v *sim.View) {
	if g.aff == nil {
		g.aff = make([]int32, v.Cluster().NumNodes())
	}
	if n := v.NumJobs(); len(g.join) < n { // first call, or jobs submitted since (live runs)
		g.join = append(g.join, make([]uint8, n-len(g.join))...)
		g.noPack = append(g.noPack, make([]bool, n-len(g.noPack))...)
	}
}

// Schedule implements sim.Policy: introspection, then pending jobs in FIFO
// order (free GPUs by affinity, else packing, else time-slicing), then
// migrations to the GPUs still free.
func (g *Policy) Schedule(v *sim.View, p *sim.Plan) error {
	g.init(v)
	c := v.Cluster()
	g.tab.Build(v)
	g.buildAffinity(v)
	g.packMemo.Reset()
	g.sliceMemo.Reset()
	if g.introspect {
		if err := g.unpack(v, p); err != nil {
			return err
		}
	}
	g.wholeFail.valid = false // only starts from here to the grow step: free capacity only shrinks
	for j := v.PendingHead(); j != nil; {
		next := v.NextPending(j)
		if err := g.place(v, p, j); err != nil {
			return err
		}
		j = next
	}
	if g.migrate && c.FreeGPUs() > 0 {
		return g.grow(v, p)
	}
	return nil
}

// buildAffinity marks each node with the GPUs per replica of the jobs on it
// (Gandiva's node sets by job size).
func (g *Policy) buildAffinity(v *sim.View) {
	for i := range g.aff {
		g.aff[i] = 0
	}
	for _, j := range v.Running() {
		for _, n := range j.Nodes {
			g.note(n, j.Spec.GPUsPerReplica)
		}
	}
}

func (g *Policy) note(n sim.NodeID, k int32) {
	switch a := g.aff[n]; {
	case k == 0:
	case a == 0:
		g.aff[n] = k
	case a != k:
		g.aff[n] = -1
	}
}

// place tries, in order: whole free GPUs (affinity), packing, time-slicing.
func (g *Policy) place(v *sim.View, p *sim.Plan, j *sim.Job) error {
	c := v.Cluster()
	if j.Suspended() {
		return nil // gandiva never suspends; other suspensions are not resumed
	}
	if g.placeWhole(c, j) {
		return g.start(p, c, j, joinNone)
	}
	if !coloc.Shareable(c, &j.Spec) {
		p.Wait(j.Ref, sim.ReasonNoCapacity)
		return nil
	}
	u := coloc.Util(&j.Spec, g.unknownU)
	best, bestU := sim.GPUID(-1), 0.0
	if !g.noPack[j.Ref] && !g.packMemo.Skip(&j.Spec, u) {
		for _, gpu := range g.tab.GPUs() {
			on := g.tab.On(gpu)
			if len(on) == 0 || !coloc.CanJoin(c, &j.Spec, gpu) {
				continue
			}
			if s := coloc.UtilSum(on, g.unknownU) + u; s <= g.packU+1e-9 && (best < 0 || s < bestU) {
				best, bestU = gpu, s
			}
		}
	}
	if best < 0 && !g.noPack[j.Ref] {
		g.packMemo.Fail(&j.Spec, u)
	}
	if best >= 0 {
		g.Packs++
		return g.startOn(p, c, j, best, joinPack)
	}
	if g.slice && !g.sliceMemo.Skip(&j.Spec, 0) {
		bestN := 0
		for _, gpu := range g.tab.GPUs() {
			on := g.tab.On(gpu)
			if len(on) == 0 || c.GPUMode(gpu) != sim.ShareTimeSlice || !coloc.CanJoin(c, &j.Spec, gpu) {
				continue
			}
			if best < 0 || len(on) < bestN {
				best, bestN = gpu, len(on)
			}
		}
		if best >= 0 {
			g.TimeSlices++
			return g.startOn(p, c, j, best, joinSlice)
		}
		g.sliceMemo.Fail(&j.Spec, 0)
	}
	p.Wait(j.Ref, sim.ReasonNoCapacity)
	return nil
}

// placeWhole puts j on whole free GPUs: a single-replica job on a node of its
// own size's node set with the most free GPUs, else an empty node, else any
// node with room (the node sets grow); gangs through the gang placer.
func (g *Policy) placeWhole(c *sim.Cluster, j *sim.Job) bool {
	s := &j.Spec
	if s.Replicas != 1 || s.GPUsPerReplica == 0 {
		return coloc.PlaceWhole(c, g.gang, j, &g.pl)
	}
	k := s.GPUsPerReplica
	if int64(k) > c.FreeGPUs() {
		return false
	}
	f := &g.wholeFail
	plain := len(s.GPUModels) == 0
	if f.valid && plain && int64(k) >= f.k && s.CPUMilli >= f.cpu && s.MemoryMiB >= f.mem {
		return false
	}
	best, bestTier, bestFree := sim.NodeID(-1), 3, int32(0)
	for n := sim.NodeID(0); int(n) < c.NumNodes(); n++ {
		free := c.NodeFreeGPUs(n)
		if free < k || !s.AllowsModel(c.Node(n).GPUModel) || !coloc.HostOK(c, n, s) {
			continue
		}
		if first, _ := c.NodeGPUs(n); c.GPUMode(first) == sim.ShareMIG {
			continue
		}
		tier := 2
		switch g.aff[n] {
		case k:
			tier = 0
		case 0:
			tier = 1
		}
		if tier < bestTier || tier == bestTier && free > bestFree {
			best, bestTier, bestFree = n, tier, free
		}
	}
	if best < 0 {
		if plain && (!f.valid || int64(k) <= f.k && s.CPUMilli <= f.cpu && s.MemoryMiB <= f.mem) {
			f.k, f.cpu, f.mem, f.valid = int64(k), s.CPUMilli, s.MemoryMiB, true
		}
		return false
	}
	g.scratchNodes = append(g.scratchNodes[:0], best)
	g.scratchGPUs = g.scratchGPUs[:0]
	first, end := c.NodeGPUs(best)
	for gpu := first; gpu < end && int32(len(g.scratchGPUs)) < k; gpu++ {
		if c.GPUUsed(gpu) == 0 {
			g.scratchGPUs = append(g.scratchGPUs, gpu)
		}
	}
	g.pl.Nodes = append(g.pl.Nodes[:0], g.scratchNodes...)
	g.pl.GPUs = append(g.pl.GPUs[:0], g.scratchGPUs...)
	return true
}

// start starts j on g.pl and records how it joined its GPU (every start of
// this policy goes through here, so the mark of a running job is always its
// current run's).
func (g *Policy) start(p *sim.Plan, c *sim.Cluster, j *sim.Job, how uint8) error {
	if err := p.AddStart(j.Ref, g.pl.Nodes, g.pl.GPUs); err != nil {
		return err
	}
	g.join[j.Ref] = how
	for _, n := range g.pl.Nodes {
		g.note(n, j.Spec.GPUsPerReplica)
	}
	if len(j.GPUs) == 1 && c.Sharers(j.GPUs[0]) > 0 {
		g.tab.Add(j.GPUs[0], j) // a sharer: later jobs of this call may join it
		if c.Sharers(j.GPUs[0]) == 1 {
			g.packMemo.Reset() // a new GPU with room for sharers
			g.sliceMemo.Reset()
		}
	}
	return nil
}

func (g *Policy) startOn(p *sim.Plan, c *sim.Cluster, j *sim.Job, gpu sim.GPUID, how uint8) error {
	g.pl.Nodes = append(g.pl.Nodes[:0], c.GPUNode(gpu))
	g.pl.GPUs = append(g.pl.GPUs[:0], gpu)
	return g.start(p, c, j, how)
}

// remaining estimates j's remaining work from its walltime estimate, the work
// kept at its last stop and the time since its last start at its current speed.
func remaining(j *sim.Job, now sim.Time) float64 {
	r := float64(j.Estimate-j.Done) - float64(now.Sub(j.LastStart))*j.Speed()
	return max(r, 0)
}

// unpack is the introspection: on each GPU holding a packed job, when the
// measured speeds of its jobs sum below 1 (packing made the GPU do less than
// one job alone), the last-packed job leaves: to a free GPU when there is one,
// else back to the queue (keeping its work) and it is never packed again.
func (g *Policy) unpack(v *sim.View, p *sim.Plan) error {
	c := v.Cluster()
	g.wholeFail.valid = false
	for _, gpu := range g.tab.GPUs() {
		on := g.tab.On(gpu)
		if len(on) < 2 {
			continue
		}
		sum := 0.0
		var last *sim.Job
		for _, j := range on {
			sum += j.Speed()
			if g.join[j.Ref] == joinPack {
				last = j
			}
		}
		if last == nil || sum >= 1-1e-9 || !last.Preemptible(v.Now()) {
			continue
		}
		g.Unpacks++
		g.noPack[last.Ref] = true
		if err := p.AddMigrate(last.Ref, g.delay, "gandiva: unpack (packed throughput below 1)"); err != nil {
			return err
		}
		g.tab.Remove(gpu, last)
		g.wholeFail.valid = false
		g.packMemo.Reset()
		g.sliceMemo.Reset()
		if g.migrate && g.placeWhole(c, last) {
			g.Migrations++
			if err := g.start(p, c, last, joinNone); err != nil {
				return err
			}
		}
	}
	return nil
}

// grow moves jobs slowed by sharing onto the GPUs left free after the pending
// jobs were placed (Gandiva's migration to use idle GPUs and its grow step):
// on each shared GPU in id order, the newest job moves when its expected
// remaining time at its current speed exceeds its time alone by more than the
// migration delay.
func (g *Policy) grow(v *sim.View, p *sim.Plan) error {
	c := v.Cluster()
	g.wholeFail.valid = false
	now := v.Now()
	for _, gpu := range g.tab.GPUs() {
		if c.FreeGPUs() == 0 {
			return nil
		}
		on := g.tab.On(gpu)
		if len(on) < 2 {
			continue
		}
		j := on[len(on)-1]
		s := j.Speed()
		if !(s > 0) || s >= 1 || !j.Preemptible(now) {
			continue
		}
		r := remaining(j, now)
		if r/s-r <= float64(g.delay) {
			continue
		}
		if !g.placeWhole(c, j) { // other free GPUs: j still holds its own
			continue
		}
		if err := p.AddMigrate(j.Ref, g.delay, "gandiva: migrate to a free GPU"); err != nil {
			return err
		}
		g.tab.Remove(gpu, j)
		g.Migrations++
		if err := g.start(p, c, j, joinNone); err != nil {
			return err
		}
	}
	return nil
}
