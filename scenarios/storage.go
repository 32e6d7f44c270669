package scenarios

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/gpusim/gpusim/sim"
)

// StorageSpec is the scenario block `storage:` (docs/checkpoint-io.md):
// periodic checkpoints are written to storage whose bandwidth the saves in
// flight share, so a save takes its size over its share of the bandwidth
// instead of simulation.checkpointSaveCost. Without it nothing of checkpoint
// I/O runs and every output is as before.
type StorageSpec struct {
	// BandwidthGBps is the write bandwidth of one storage pool in GB/s
	// (10^9 bytes/s); > 0.
	BandwidthGBps float64 `yaml:"bandwidthGBps"`
	// Scope is cluster (default: one pool for the whole cluster) or a topology
	// level (node, leaf, spine): one pool of BandwidthGBps per domain of that
	// level, e.g. leaf = a storage target per rack.
	Scope string `yaml:"scope"`
	// CheckpointGB is the checkpoint size of a job not sized by PerClassGB or
	// PerGPUGB.
	CheckpointGB float64 `yaml:"checkpointGB"`
	// PerGPUGB, when > 0, sizes a job's checkpoint as PerGPUGB × its GPUs
	// (replicas × GPUs per replica): a sharded checkpoint, each GPU writing its
	// shard of the model and optimizer state.
	PerGPUGB float64 `yaml:"perGPUGB"`
	// PerClassGB sizes the checkpoints of the jobs of a class (first rule).
	PerClassGB map[string]float64 `yaml:"perClassGB"`
	// Stagger shifts each job's checkpoints by its own offset within the
	// interval (from the seed and the job ID), so that jobs started together
	// do not save together.
	Stagger bool `yaml:"stagger"`
}

// StorageScopes are the values of storage.scope.
var StorageScopes = []string{"cluster", "node", "leaf", "spine"}

func (s *Scenario) validateStorage() sim.FieldErrors {
	var fe sim.FieldErrors
	st := s.Storage
	if st == nil {
		return fe
	}
	if !(st.BandwidthGBps > 0) || math.IsInf(st.BandwidthGBps, 0) {
		fe.Add("storage.bandwidthGBps", "required: a finite write bandwidth > 0 in GB/s")
	}
	if st.Scope != "" && !slices.Contains(StorageScopes, st.Scope) {
		fe.Add("storage.scope", "want cluster, node, leaf or spine, got %q", st.Scope)
	}
	size := false
	check := func(path string, v float64) {
		if !(v >= 0) || math.IsInf(v, 0) {
			fe.Add(path, "must be a finite size >= 0 in GB")
		}
		size = size || v > 0
	}
	check("storage.checkpointGB", st.CheckpointGB)
	check("storage.perGPUGB", st.PerGPUGB)
	for _, c := range slices.Sorted(maps.Keys(st.PerClassGB)) {
		check("storage.perClassGB."+c, st.PerClassGB[c])
	}
	if !size {
		fe.Add("storage", "needs a checkpoint size: checkpointGB, perGPUGB or perClassGB")
	}
	sm := &s.Simulation
	if sm.CheckpointInterval <= 0 {
		fe.Add("storage", "needs periodic checkpoints: set simulation.checkpointInterval")
	}
	if sm.CheckpointSaveCost > 0 {
		fe.Add("simulation.checkpointSaveCost", "must be 0 with storage: (a save takes its checkpoint size over its share of the storage bandwidth)")
	}
	if sm.CheckpointOnSignal {
		fe.Add("simulation.checkpointOnSignal", "not supported with storage: yet")
	}
	if s.sharingOn() {
		fe.Add("storage", "checkpoint I/O does not support device-level GPU sharing (cluster.pools[].sharing / interference) yet")
	}
	if s.Telemetry != nil {
		// a straggler episode cuts a running job into segments, which the
		// storage phases (restore, work, save) do not follow yet
		fe.Add("storage", "checkpoint I/O does not support telemetry: (stragglers) yet")
	}
	if f := s.Failures; f != nil {
		if f.Recovery.Strategy == "fault-tolerant" {
			fe.Add("failures.strategy", "fault-tolerant recovery is not supported with storage: yet (use restart)")
		}
		if m := f.Maintenance; m != nil && (m.Checkpoint == nil || *m.Checkpoint) {
			fe.Add("failures.maintenance.checkpoint", "must be false with storage: (a drain checkpoint through shared storage is not modelled yet)")
		}
	}
	for i := range s.Policies {
		if r := s.Policies[i].Recovery; r != nil && r.Strategy == "fault-tolerant" {
			fe.Add(fmt.Sprintf("policies[%d].recovery.strategy", i), "fault-tolerant recovery is not supported with storage: yet (use restart)")
		}
	}
	return fe
}

// StorageConfig returns the engine's checkpoint storage model, or nil without
// a storage block (then every output is as without it).
func (s *Scenario) StorageConfig() *sim.StorageConfig {
	st := s.Storage
	if st == nil {
		return nil
	}
	sc := &sim.StorageConfig{BandwidthGBps: st.BandwidthGBps, Stagger: st.Stagger}
	if st.Scope != "" && st.Scope != "cluster" {
		l, err := sim.ParseLevel(st.Scope)
		if err == nil {
			sc.PerDomain, sc.Level = true, l
		}
	}
	perClass, perGPU, def := st.PerClassGB, st.PerGPUGB, st.CheckpointGB
	sc.SizeGB = func(j *sim.JobSpec) float64 {
		if v, ok := perClass[string(j.Class)]; ok {
			return v
		}
		if perGPU > 0 {
			return perGPU * float64(j.TotalGPUs())
		}
		return def
	}
	return sc
}
