// Package coloc holds the small helpers the co-location policies (gandiva,
// antman, lucid) share: the jobs sharing each GPU, the device-level join test,
// and a whole-GPU placement that never co-locates.
package coloc

import (
	"slices"

	"github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/sim"
)

// Table lists, per GPU, the running jobs that share it (sharers in the engine's
// sense: 1-GPU jobs on a time-slicing, MPS or MIG GPU), oldest start first
// (ties: JobRef). Rebuild it at each scheduling point; Add and Remove keep it in
// step with the starts and stops of the same call.
type Table struct {
	jobs    [][]*sim.Job
	touched []sim.GPUID
}

// Build rebuilds the table from the running jobs.
func (t *Table) Build(v *sim.View) {
	c := v.Cluster()
	if t.jobs == nil {
		t.jobs = make([][]*sim.Job, c.NumGPUs())
	}
	for _, g := range t.touched {
		t.jobs[g] = t.jobs[g][:0]
	}
	t.touched = t.touched[:0]
	if !c.SharingOn() {
		return
	}
	for _, j := range v.Running() {
		if len(j.GPUs) == 1 && c.Sharers(j.GPUs[0]) > 0 {
			t.Add(j.GPUs[0], j)
		}
	}
	slices.Sort(t.touched)
	for _, g := range t.touched {
		slices.SortFunc(t.jobs[g], byStart)
	}
}

func byStart(a, b *sim.Job) int {
	if a.LastStart != b.LastStart {
		if a.LastStart < b.LastStart {
			return -1
		}
		return 1
	}
	return int(a.Ref - b.Ref)
}

// Add records j as a sharer of g (after the others: it started last).
func (t *Table) Add(g sim.GPUID, j *sim.Job) {
	if len(t.jobs[g]) == 0 {
		i, _ := slices.BinarySearch(t.touched, g)
		t.touched = slices.Insert(t.touched, i, g)
	}
	t.jobs[g] = append(t.jobs[g], j)
}

// Remove drops j from g's sharers.
func (t *Table) Remove(g sim.GPUID, j *sim.Job) {
	l := t.jobs[g]
	if i := slices.Index(l, j); i >= 0 {
		t.jobs[g] = slices.Delete(l, i, i+1)
	}
}

// On returns the sharers of GPU g (do not modify).
func (t *Table) On(g sim.GPUID) []*sim.Job {
	if t.jobs == nil {
		return nil
	}
	return t.jobs[g]
}

// GPUs returns the GPUs that had sharers when the table was built or got one
// since, in ascending order (some may have none left; do not modify).
func (t *Table) GPUs() []sim.GPUID { return t.touched }

// Util is a job's solo SM utilisation from the trace (`sm_util`), or unknown
// when the trace gives none.
func Util(s *sim.JobSpec, unknown float64) float64 {
	if s.SMUtil > 0 {
		return s.SMUtil
	}
	return unknown
}

// UtilSum is the summed solo utilisation of jobs.
func UtilSum(jobs []*sim.Job, unknown float64) float64 {
	u := 0.0
	for _, j := range jobs {
		u += Util(&j.Spec, unknown)
	}
	return u
}

// Shareable reports whether a job could share a GPU at all (a 1-GPU,
// 1-replica job that accepts a shared mode) in a cluster with sharing on.
func Shareable(c *sim.Cluster, s *sim.JobSpec) bool {
	return c.SharingOn() && s.Replicas == 1 && s.GPUsPerReplica == 1 && s.Accepts() != sim.AcceptExclusive
}

// HostOK reports whether node n has the CPU and memory for one replica of s.
func HostOK(c *sim.Cluster, n sim.NodeID, s *sim.JobSpec) bool {
	return c.NodeFreeCPU(n) >= s.CPUMilli && c.NodeFreeMemory(n) >= s.MemoryMiB
}

// CanJoin is the engine's test for s joining GPU g as a sharer now
// (Cluster.CanShare) plus the job's GPU model and its node's CPU and memory.
func CanJoin(c *sim.Cluster, s *sim.JobSpec, g sim.GPUID) bool {
	n := c.GPUNode(g)
	return s.AllowsModel(c.Node(n).GPUModel) && c.CanShare(s, g) && HostOK(c, n, s)
}

// PlaceWhole places j on whole free GPUs with pl as if it were an exclusive
// job (the built-in placers would otherwise co-locate a shareable job). The
// started job may still be joined by sharers later when its GPU is in a shared
// mode and it accepts that mode.
func PlaceWhole(c *sim.Cluster, pl placement.Placer, j *sim.Job, out *placement.Placement) bool {
	if j.Spec.Accepts() == sim.AcceptExclusive || !c.SharingOn() {
		return pl.Place(c, j, out) // nothing to co-locate with (FGD milli-GPU shares stay as the placer does them)
	}
	cp := *j
	cp.Spec.Sharing = sim.AcceptExclusive
	if cp.Spec.GPUsPerReplica > 0 {
		cp.Spec.GPUMilli = sim.WholeGPU
	}
	return pl.Place(c, &cp, out)
}

// Memo remembers, within one scheduling point, the smallest demand
// (utilisation, GPU memory, node CPU and memory, for one accepted sharing mode)
// that found no GPU to join, so that later jobs needing at least as much in
// every dimension skip the scan. Reset it whenever a GPU gains room for
// sharers (a sharer started alone on a free GPU, or a job left a shared GPU).
type Memo struct {
	u        float64
	gmem     int64
	cpu, mem int64
	acc      sim.JobSharing
	valid    bool
}

// Reset forgets the remembered failure.
func (m *Memo) Reset() { m.valid = false }

// Skip reports whether a job with utilisation u and spec s cannot join any
// GPU, given the remembered failure (jobs restricted to GPU models are never
// skipped).
func (m *Memo) Skip(s *sim.JobSpec, u float64) bool {
	return m.valid && len(s.GPUModels) == 0 && s.Accepts() == m.acc && u >= m.u &&
		s.GPUMemMiB >= m.gmem && s.CPUMilli >= m.cpu && s.MemoryMiB >= m.mem
}

// Fail records that a job with utilisation u and spec s found no GPU to join.
func (m *Memo) Fail(s *sim.JobSpec, u float64) {
	if len(s.GPUModels) > 0 {
		return
	}
	if !m.valid || s.Accepts() == m.acc && u <= m.u && s.GPUMemMiB <= m.gmem && s.CPUMilli <= m.cpu && s.MemoryMiB <= m.mem {
		m.u, m.gmem, m.cpu, m.mem, m.acc, m.valid = u, s.GPUMemMiB, s.CPUMilli, s.MemoryMiB, s.Accepts(), true
	}
}

// WholeMemo remembers, within one scheduling point, the smallest gang that
// PlaceWhole could not place, so that later jobs needing at least as much in
// every dimension (GPUs per replica, replicas, GPU share, CPU, memory; no GPU
// model restriction) skip the search. Valid while free capacity only shrinks:
// Reset it after anything frees resources (a preemption, a migration).
type WholeMemo struct {
	gpr, reps, milli, cpu, mem int64
	valid                      bool
}

// Reset forgets the remembered failure.
func (m *WholeMemo) Reset() { m.valid = false }

func (m *WholeMemo) dominates(s *sim.JobSpec) bool {
	return int64(s.GPUsPerReplica) >= m.gpr && int64(s.Replicas) >= m.reps && int64(s.GPUMilli) >= m.milli &&
		s.CPUMilli >= m.cpu && s.MemoryMiB >= m.mem
}

// Place is PlaceWhole with the memo: it skips jobs that need at least as much
// as a remembered failure and remembers new, smaller failures.
func (m *WholeMemo) Place(c *sim.Cluster, pl placement.Placer, j *sim.Job, out *placement.Placement) bool {
	s := &j.Spec
	plain := len(s.GPUModels) == 0 && s.GPUsPerReplica > 0
	if plain && m.valid && m.dominates(s) {
		return false
	}
	if PlaceWhole(c, pl, j, out) {
		return true
	}
	if plain && (!m.valid || !m.dominates(s) && int64(s.GPUsPerReplica) <= m.gpr && int64(s.Replicas) <= m.reps &&
		int64(s.GPUMilli) <= m.milli && s.CPUMilli <= m.cpu && s.MemoryMiB <= m.mem) {
		m.gpr, m.reps, m.milli, m.cpu, m.mem, m.valid = int64(s.GPUsPerReplica), int64(s.Replicas), int64(s.GPUMilli), s.CPUMilli, s.MemoryMiB, true
	}
	return false
}
