// Package rounds is the round-based driving style of issue 14 §1 (Gavel,
// Pollux, Sia, Blox): a policy decides every job's replica count once per
// round of fixed length, the driver turns the decision into the engine's
// starts, lease ends and elastic resizes, and between rounds nothing changes.
// A job whose allocation changes pays the engine's restart cost
// (sim.Config.CheckpointRestore after a lease end, sim.Config.RescaleDelay
// after a resize); a job whose count is unchanged keeps its GPUs and pays
// nothing. Event-driven policies do not use it and are unaffected.
//
// See docs/elastic.md.
package rounds

import (
	"fmt"
	"slices"

	"github.com/gpusim/gpusim/sim"
)

// Allocator decides one round.
type Allocator interface {
	// Allocate sets want[i], the replica count of active[i] for the next
	// round: 0 (not running) or one of its sizes (sim.ElasticSpec.Valid;
	// Spec.Replicas for a rigid job). active is every arrived, unfinished job
	// in JobRef order; the counts' GPUs must fit the cluster.
	Allocate(v *sim.View, active []*sim.Job, want []int32) error
}

// Rater is an Allocator whose running jobs' throughput changes without a
// resize (Pollux's batch size re-picked at each round and epoch boundary,
// sim.Plan.AddRate). The driver calls Rerate at every one of its scheduling
// points, after a round's decisions are applied (running: the jobs running
// then, in JobRef order); Rerate sets rates with p.AddRate and may ask for
// scheduling points between rounds with p.Wake (say, at an epoch boundary).
type Rater interface {
	Rerate(v *sim.View, p *sim.Plan, running []*sim.Job) error
}

// Placer is an Allocator that also chooses its jobs' nodes (Pollux's and
// Sia's placements). With Repack on, the driver places each job whose count
// changes, or that Place moves to other nodes at the same count, on the nodes
// Place returns for it (index i of the last Allocate's active jobs; a node
// once per replica; nil: keep the job where it is), taking free GPUs there,
// instead of the most-free-node rule; nodes without the GPUs fall back to
// the rule. A job moved at the same count ends its lease and starts on its
// new nodes (paying the restore instead of the rescale delay).
type Placer interface {
	Place(i int) []sim.NodeID
}

// Driver is a sim.Policy that runs an Allocator at every multiple of Round
// after time 0 (the first round is at Round, as the Pollux artifact's
// simulator.py loop). At a round it applies the allocation in the artifact's
// order: jobs losing all their GPUs end their lease (sim.PreemptLease, work
// kept), shrinking elastic jobs release their last replicas, then jobs that
// start or grow are placed in ascending target count, each taking replicas
// from the node with the most free GPUs (lowest index on ties) as many as it
// holds. A job that cannot change this round (protected from preemption, not
// at a safe point, or its GPUs are not free) keeps its allocation.
type Driver struct {
	name  string
	round sim.Duration
	alloc Allocator
	// Repack places every job whose count changes anew, as the artifact's
	// Tiresias and Optimus do: starts and changes in ascending target count,
	// each from the most-free node of a virtual cluster on which every
	// changing job's GPUs are free, then applied as starts and
	// whole-placement resizes (see repack). false keeps a resized job's
	// replicas (shrinking drops the last ones, growing adds replicas).
	Repack bool

	next   sim.Time
	active []*sim.Job
	cmp    []sim.NodeID // moved's scratch
	// running: the jobs handed to Rater.Rerate
	running []*sim.Job
	want    []int32
	order   []int
	free    []int32
	nodes   []sim.NodeID
	gpus    []sim.GPUID
	// repack's plan: virtual free GPUs, planned nodes and GPUs, each job's
	// spans in them, and which are applied
	vfree   []bool
	pn      []sim.NodeID
	pg      []sim.GPUID
	span    [][4]int
	applied []bool
	// Rounds counts the rounds run (tests, explain).
	Rounds int
}

// New returns a driver named name running alloc every round (> 0).
func New(name string, round sim.Duration, alloc Allocator) (*Driver, error) {
	if round <= 0 {
		return nil, fmt.Errorf("round: must be > 0, got %s", round)
	}
	return &Driver{name: name, round: round, alloc: alloc}, nil
}

// Name implements sim.Policy.
func (d *Driver) Name() string { return d.name }

// Round is the round length.
func (d *Driver) Round() sim.Duration { return d.round }

// Schedule implements sim.Policy: between rounds it only asks for the next
// round's scheduling point.
func (d *Driver) Schedule(v *sim.View, p *sim.Plan) error {
	now := v.Now()
	if d.next == 0 {
		d.next = sim.Time(d.round)
	}
	if now < d.next {
		p.Wake(d.next)
		return d.rerate(v, p)
	}
	d.next = sim.Time((sim.Duration(now)/d.round + 1) * d.round)
	p.Wake(d.next)
	d.active = d.active[:0]
	d.active = append(d.active, v.Running()...)
	for j := range v.Pending() {
		d.active = append(d.active, j)
	}
	if len(d.active) == 0 {
		return d.rerate(v, p)
	}
	slices.SortFunc(d.active, func(a, b *sim.Job) int { return int(a.Ref - b.Ref) })
	d.want = slices.Grow(d.want[:0], len(d.active))[:len(d.active)]
	clear(d.want)
	if err := d.alloc.Allocate(v, d.active, d.want); err != nil {
		return err
	}
	d.Rounds++
	for i, j := range d.active {
		w := d.want[i]
		if w == 0 {
			continue
		}
		if el := j.Spec.Elastic; el != nil && !el.Valid(w) || el == nil && w != j.Spec.Replicas {
			return fmt.Errorf("round at %s: allocator gave job %s %d replicas, not one of its sizes", now, j, w)
		}
	}
	// Ends and shrinks free GPUs first.
	for i, j := range d.active {
		w := d.want[i]
		if j.State != sim.StateRunning || w >= int32(len(j.Nodes)) {
			continue
		}
		if w == 0 {
			if j.Preemptible(now) {
				if err := p.AddPreempt(j.Ref, sim.PreemptLease, "round"); err != nil {
					return err
				}
			}
			continue
		}
		if j.Resizable(now) && !d.Repack {
			if err := p.AddResize(j.Ref, w, nil, nil); err != nil {
				return err
			}
		}
	}
	// Starts and grows (and, repacking, every change) in ascending target
	// count (stable: JobRef order).
	d.order = d.order[:0]
	for i, j := range d.active {
		w := d.want[i]
		if w > 0 && (j.State == sim.StatePending || j.State == sim.StateRunning && (w != int32(len(j.Nodes)) || d.moved(i, j)) && j.Resizable(now) && (d.Repack || w > int32(len(j.Nodes)))) {
			d.order = append(d.order, i)
		}
	}
	slices.SortStableFunc(d.order, func(a, b int) int { return int(d.want[a] - d.want[b]) })
	c := v.Cluster()
	if d.Repack {
		if ok, err := d.repack(c, p, now); ok || err != nil {
			if err != nil {
				return err
			}
			return d.rerate(v, p)
		}
	}
	for _, i := range d.order {
		j := d.active[i]
		add := d.want[i]
		if j.State == sim.StateRunning && !d.Repack {
			add -= int32(len(j.Nodes))
		}
		var own []sim.GPUID
		if j.State == sim.StateRunning && d.Repack {
			own = j.GPUs
		}
		if !d.place(c, &j.Spec, add, own) {
			continue // does not fit this round: keeps its allocation
		}
		var err error
		if j.State == sim.StateRunning {
			err = p.AddResize(j.Ref, d.want[i], d.nodes, d.gpus)
		} else {
			err = p.AddStart(j.Ref, d.nodes, d.gpus)
		}
		if err != nil {
			return err
		}
	}
	return d.rerate(v, p)
}

// rerate calls the allocator's Rerate (Rater) with the running jobs.
func (d *Driver) rerate(v *sim.View, p *sim.Plan) error {
	r, ok := d.alloc.(Rater)
	if !ok {
		return nil
	}
	d.running = append(d.running[:0], v.Running()...)
	slices.SortFunc(d.running, func(a, b *sim.Job) int { return int(a.Ref - b.Ref) })
	return r.Rerate(v, p, d.running)
}

// repack places the jobs of d.order (starts and changes, ascending target
// count) as the artifact does: on a virtual cluster where every changing
// job's GPUs are free, each in turn from the node with the most free GPUs.
// It then applies the plan: a job's start or whole-placement resize as soon
// as all its planned GPUs are free or its own; when no job can go (its GPUs
// are planned for another and the other's for it) the first waiting running
// job ends its lease and starts on its planned GPUs later in the same call
// (paying the restore instead of the rescale delay). It reports false, having
// changed nothing, when the virtual placement fails (replicas of several
// GPUs that fragmentation leaves no node for): the caller then places job by
// job.
func (d *Driver) repack(c *sim.Cluster, p *sim.Plan, now sim.Time) (bool, error) {
	ng := int(c.NumGPUs())
	d.vfree = slices.Grow(d.vfree[:0], ng)[:ng]
	for g := range d.vfree {
		d.vfree[g] = c.GPUUsed(sim.GPUID(g)) == 0
	}
	for _, i := range d.order {
		if j := d.active[i]; j.State == sim.StateRunning {
			for _, g := range j.GPUs {
				d.vfree[g] = true
			}
		}
	}
	d.pn, d.pg, d.span = d.pn[:0], d.pg[:0], d.span[:0]
	for _, i := range d.order {
		j := d.active[i]
		n0, g0 := len(d.pn), len(d.pg)
		if pl, ok := d.alloc.(Placer); ok && d.placeOn(c, &j.Spec, pl.Place(i), d.want[i]) {
			d.span = append(d.span, [4]int{n0, len(d.pn), g0, len(d.pg)})
			continue
		}
		if !d.placeVirtual(c, &j.Spec, d.want[i]) {
			return false, nil
		}
		d.span = append(d.span, [4]int{n0, len(d.pn), g0, len(d.pg)})
	}
	d.applied = slices.Grow(d.applied[:0], len(d.order))[:len(d.order)]
	clear(d.applied)
	for left := len(d.order); left > 0; {
		progress := false
		for k, i := range d.order {
			j := d.active[i]
			sp := d.span[k]
			gpus := d.pg[sp[2]:sp[3]]
			if d.applied[k] || !d.gpusReady(c, j, gpus) {
				continue
			}
			var err error
			switch {
			case j.State == sim.StateRunning && d.want[i] == int32(len(j.Nodes)):
				// moved at the same size (Placer): a lease end and a start
				if err = p.AddPreempt(j.Ref, sim.PreemptLease, "round"); err == nil {
					err = p.AddStart(j.Ref, d.pn[sp[0]:sp[1]], gpus)
				}
			case j.State == sim.StateRunning:
				err = p.AddResize(j.Ref, d.want[i], d.pn[sp[0]:sp[1]], gpus)
			default:
				err = p.AddStart(j.Ref, d.pn[sp[0]:sp[1]], gpus)
			}
			if err != nil {
				return true, err
			}
			d.applied[k], progress = true, true
			left--
		}
		if progress {
			continue
		}
		// A cycle: the first waiting running job ends its lease.
		broke := false
		for k, i := range d.order {
			if j := d.active[i]; !d.applied[k] && j.State == sim.StateRunning && j.Preemptible(now) {
				if err := p.AddPreempt(j.Ref, sim.PreemptLease, "round"); err != nil {
					return true, err
				}
				broke = true
				break
			}
		}
		if !broke {
			return true, nil // the rest keep their allocations this round
		}
	}
	return true, nil
}

// gpusReady reports whether every GPU of gpus is free or job j's own.
func (d *Driver) gpusReady(c *sim.Cluster, j *sim.Job, gpus []sim.GPUID) bool {
	for _, g := range gpus {
		if c.GPUUsed(g) != 0 && (j.State != sim.StateRunning || !slices.Contains(j.GPUs, g)) {
			return false
		}
	}
	return true
}

// moved reports whether a Placer moves running job j (active[i]) at its
// current count to other nodes (as a multiset).
func (d *Driver) moved(i int, j *sim.Job) bool {
	pl, ok := d.alloc.(Placer)
	if !ok || !d.Repack {
		return false
	}
	nodes := pl.Place(i)
	if len(nodes) != len(j.Nodes) {
		return false
	}
	d.cmp = append(append(d.cmp[:0], nodes...), j.Nodes...)
	a, b := d.cmp[:len(nodes)], d.cmp[len(nodes):]
	slices.Sort(a)
	slices.Sort(b)
	return !slices.Equal(a, b)
}

// mostFree is the node with the most free GPUs in d.free among those with at
// least g (the lowest index on ties); -1 when none has g.
func (d *Driver) mostFree(g int32) int {
	best := -1
	for n, f := range d.free {
		if f >= g && (best < 0 || f > d.free[best]) {
			best = n
		}
	}
	return best
}

// takeVirtual takes up to want of node id's virtual free GPUs (d.vfree), in
// index order, appending them to d.pg; it returns how many it took.
func (d *Driver) takeVirtual(c *sim.Cluster, id sim.NodeID, want int32) int32 {
	first, end := c.NodeGPUs(id)
	got := int32(0)
	for gpu := first; gpu < end && got < want; gpu++ {
		if d.vfree[gpu] {
			d.vfree[gpu] = false
			d.pg = append(d.pg, gpu)
			got++
		}
	}
	return got
}

// placeOn appends to d.pn and d.pg k replicas of s on the given nodes (one
// entry per replica) from the virtual free GPUs d.vfree, taking them; false,
// having taken none, when nodes is not k long or lacks the GPUs.
func (d *Driver) placeOn(c *sim.Cluster, s *sim.JobSpec, nodes []sim.NodeID, k int32) bool {
	if len(nodes) != int(k) {
		return false
	}
	n0, g0 := len(d.pn), len(d.pg)
	for _, id := range nodes {
		if id < 0 || int(id) >= c.NumNodes() || !s.AllowsModel(c.Node(id).GPUModel) {
			break
		}
		got := d.takeVirtual(c, id, s.GPUsPerReplica)
		d.pn = append(d.pn, id)
		if got < s.GPUsPerReplica {
			break
		}
	}
	if len(d.pg)-g0 == int(k*s.GPUsPerReplica) {
		return true
	}
	for _, g := range d.pg[g0:] {
		d.vfree[g] = true
	}
	d.pn, d.pg = d.pn[:n0], d.pg[:g0]
	return false
}

// placeVirtual appends to d.pn and d.pg k replicas of s on the virtual free
// GPUs d.vfree (taking them), by place's rule; false when they do not fit.
func (d *Driver) placeVirtual(c *sim.Cluster, s *sim.JobSpec, k int32) bool {
	g := s.GPUsPerReplica
	d.free = slices.Grow(d.free[:0], c.NumNodes())[:c.NumNodes()]
	for n := range d.free {
		id := sim.NodeID(n)
		d.free[n] = 0
		if !s.AllowsModel(c.Node(id).GPUModel) {
			continue
		}
		first, end := c.NodeGPUs(id)
		for gpu := first; gpu < end; gpu++ {
			if d.vfree[gpu] {
				d.free[n]++
			}
		}
	}
	for k > 0 {
		best := d.mostFree(g)
		if best < 0 {
			return false
		}
		id := sim.NodeID(best)
		take := min(d.free[best]/g, k)
		d.free[best] = 0
		d.takeVirtual(c, id, take*g)
		for range take {
			d.pn = append(d.pn, id)
		}
		k -= take
	}
	return true
}

// place fills d.nodes and d.gpus with k replicas of s: repeatedly, as many
// replicas as fit on the node with the most free GPUs (lowest index on ties)
// among the nodes of an allowed model with room for a replica's CPU and
// memory. GPUs in own (the job's current ones, for a whole-placement resize)
// count as free. It reports false when they do not fit.
func (d *Driver) place(c *sim.Cluster, s *sim.JobSpec, k int32, own []sim.GPUID) bool {
	g := s.GPUsPerReplica
	d.nodes, d.gpus = d.nodes[:0], d.gpus[:0]
	d.free = slices.Grow(d.free[:0], c.NumNodes())[:c.NumNodes()]
	for n := range d.free {
		id := sim.NodeID(n)
		d.free[n] = 0
		if s.AllowsModel(c.Node(id).GPUModel) {
			d.free[n] = c.NodeFreeGPUs(id)
		}
	}
	for _, gpu := range own {
		d.free[c.GPUNode(gpu)]++
	}
	for k > 0 {
		best := d.mostFree(g)
		if best < 0 {
			return false
		}
		id := sim.NodeID(best)
		take := d.free[best] / g
		if s.CPUMilli > 0 {
			take = min(take, int32(c.NodeFreeCPU(id)/s.CPUMilli))
		}
		if s.MemoryMiB > 0 {
			take = min(take, int32(c.NodeFreeMemory(id)/s.MemoryMiB))
		}
		take = min(take, k)
		d.free[best] = 0 // taken from once (what is left is too little or not needed)
		if take == 0 {
			continue
		}
		first, end := c.NodeGPUs(id)
		got := int32(0)
		for gpu := first; gpu < end && got < take*g; gpu++ {
			if c.GPUUsed(gpu) == 0 || slices.Contains(own, gpu) {
				d.gpus = append(d.gpus, gpu)
				got++
			}
		}
		for range take {
			d.nodes = append(d.nodes, id)
		}
		k -= take
	}
	return true
}
