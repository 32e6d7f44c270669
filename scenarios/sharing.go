package scenarios

import (
	"fmt"
	"sort"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
)

// PoolSharing is a pool's device-level GPU sharing (`cluster.pools[].sharing`,
// docs/sharing.md "Scenario fields"): how each GPU of the pool's nodes is shared.
type PoolSharing struct {
	// Mode is exclusive (default), timeslice, mps or mig.
	Mode string `yaml:"mode"`
	// Clients is the most jobs one GPU holds (the device plugin's replicas;
	// default 4, at most 48 as for MPS); not used by mig.
	Clients int32 `yaml:"clients"`
	// MIGProfiles is each GPU's initial MIG layout (mode mig): profile names
	// placed in order at their first valid start (e.g. [3g.40gb, 2g.20gb, 1g.10gb]).
	MIGProfiles []string `yaml:"migProfiles"`
	// MIGReconfigureCost is how long a policy's reconfiguration of one GPU's
	// layout makes it unusable (default 0).
	MIGReconfigureCost policies.Dur `yaml:"migReconfigureCost"`
	// MIGSpeed is an optional measured speed factor per MIG profile (instance
	// throughput / whole-GPU throughput); others run at compute slices / 7.
	MIGSpeed map[string]float64 `yaml:"migSpeed"`
}

// InterferenceSpec is the scenario block `interference:`: where co-located jobs'
// speed factors come from. Without path, every co-location uses the fallback.
type InterferenceSpec struct {
	// Path is a calibrate InterferenceMatrix (gpusim/v1alpha1), relative to the
	// scenario file.
	Path string `yaml:"path"`
	// Default is the fallback factor of each job of an unmeasured pair (0 = the
	// mean of the measured pairs of the same GPU model and mode, or 0.5 without
	// any); see calibrate.FallbackModel.
	Default float64 `yaml:"default"`
	// UseUtilisation: an unmeasured pair's factors come from the jobs' solo SM
	// utilisations (sm_util) when both are known.
	UseUtilisation bool `yaml:"useUtilisation"`
	// SwitchOverhead is the fraction of a time-sliced GPU lost to context switches
	// in the fallback only (a measured factor already includes it); in [0, 1).
	SwitchOverhead float64 `yaml:"switchOverhead"`
}

// SharingDefault is one class's entry of `sharingDefaults:` (docs/sharing.md,
// "Scenario fields"): values for the sharing fields of that class's jobs where
// the trace or generator left them unset (sharing exclusive, 0, "").
type SharingDefault struct {
	Sharing    string  `yaml:"sharing"`
	GPUMemMiB  int64   `yaml:"gpuMemMiB"`
	MIGProfile string  `yaml:"migProfile"`
	SMUtil     float64 `yaml:"smUtil"`
	Workload   string  `yaml:"workload"`
}

func (s *Scenario) validateSharingDefaults(fe *sim.FieldErrors) {
	classes := make([]string, 0, len(s.SharingDefaults))
	for cls := range s.SharingDefaults {
		classes = append(classes, cls)
	}
	sort.Strings(classes)
	for _, cls := range classes {
		d := s.SharingDefaults[cls]
		path := "sharingDefaults." + cls
		if _, err := sim.ParseClass(cls); err != nil || cls == "" {
			fe.Add(path, "unknown job class %q", cls)
		}
		if _, err := sim.ParseJobSharing(d.Sharing); err != nil {
			fe.Add(path+".sharing", "%v", err)
		}
		if d.GPUMemMiB < 0 {
			fe.Add(path+".gpuMemMiB", "must be >= 0")
		}
		if !(d.SMUtil >= 0 && d.SMUtil <= 1) {
			fe.Add(path+".smUtil", "must be in [0, 1]")
		}
	}
}

// applySharingDefaults fills unset sharing fields of jobs from their class's
// entry; a job the result makes invalid (e.g. a shareable gang) is an error
// naming the job and the entry.
func (s *Scenario) applySharingDefaults(jobs []sim.JobSpec) error {
	if len(s.SharingDefaults) == 0 {
		return nil
	}
	for i := range jobs {
		j := &jobs[i]
		d, ok := s.SharingDefaults[string(j.Class)]
		if !ok {
			continue
		}
		if j.Sharing == sim.AcceptExclusive && d.Sharing != "" {
			j.Sharing, _ = sim.ParseJobSharing(d.Sharing) // validated
			if j.Sharing != sim.AcceptExclusive && (j.Replicas != 1 || j.GPUsPerReplica != 1) {
				j.Sharing = sim.AcceptExclusive // gangs and CPU jobs keep their GPUs to themselves
			}
		}
		if j.GPUMemMiB == 0 {
			j.GPUMemMiB = d.GPUMemMiB
		}
		if j.MIGProfile == "" && j.Sharing != sim.AcceptExclusive {
			j.MIGProfile = d.MIGProfile
		}
		if j.SMUtil == 0 {
			j.SMUtil = d.SMUtil
		}
		if j.Workload == "" {
			j.Workload = d.Workload
		}
		if err := j.Validate(); err != nil {
			return s.fieldErr("sharingDefaults."+string(j.Class), fmt.Errorf("job %q: %w", j.ID, err))
		}
	}
	return nil
}

// sharingOn reports whether the scenario configures device-level sharing: an
// interference block or a pool whose GPUs are not exclusive.
func (s *Scenario) sharingOn() bool {
	if s.Interference != nil {
		return true
	}
	for _, p := range s.Cluster.Pools {
		if p.Sharing != nil && p.Sharing.Mode != "" && p.Sharing.Mode != "exclusive" {
			return true
		}
	}
	return false
}

// validateSharing checks the pools' sharing blocks and the interference block.
func (s *Scenario) validateSharing() sim.FieldErrors {
	var fe sim.FieldErrors
	s.validateSharingDefaults(&fe)
	for i, p := range s.Cluster.Pools {
		if p.Sharing == nil {
			continue
		}
		path := fmt.Sprintf("cluster.pools[%d].sharing", i)
		m, err := sim.ParseSharingMode(p.Sharing.Mode)
		switch {
		case err != nil:
			fe.Add(path+".mode", "%v", err)
		case m == sim.ShareMIG && migLookup == nil:
			fe.Add(path+".mode", "mig needs the MIG geometry tables (package sim/mig), not in this build")
		case m == sim.ShareMIG && len(p.Sharing.MIGProfiles) == 0:
			fe.Add(path+".migProfiles", "mode mig needs the GPUs' initial layout (profile names)")
		case m != sim.ShareMIG && len(p.Sharing.MIGProfiles) > 0:
			fe.Add(path+".migProfiles", "only for mode mig")
		}
		if p.Sharing.MIGReconfigureCost < 0 {
			fe.Add(path+".migReconfigureCost", "must be >= 0")
		}
		if p.Sharing.Clients < 0 || p.Sharing.Clients > 48 {
			fe.Add(path+".clients", "must be in 0..48 (0 = default %d)", sim.DefaultSharingClients)
		}
	}
	if in := s.Interference; in != nil {
		if !(in.Default >= 0 && in.Default <= 1) {
			fe.Add("interference.default", "must be in [0, 1] (0 = the mean of the measured pairs, or 0.5)")
		}
		if !(in.SwitchOverhead >= 0 && in.SwitchOverhead < 1) {
			fe.Add("interference.switchOverhead", "must be in [0, 1)")
		}
		if in.Path != "" && !interferenceLoaderSet() {
			fe.Add("interference.path", "reading a measured matrix is not available in this build")
		}
	}
	return fe
}

// poolSharing applies a pool's sharing block to one of its nodes.
func poolSharing(p PoolSpec, n *sim.NodeSpec) {
	if p.Sharing == nil {
		return
	}
	n.Sharing, _ = sim.ParseSharingMode(p.Sharing.Mode) // validated
	n.SharingClients = p.Sharing.Clients
	n.MIGProfiles = arrangeMIG(n.GPUModel, p.Sharing.MIGProfiles)
	n.MIGReconfigureCost = sim.Duration(p.Sharing.MIGReconfigureCost)
	n.MIGSpeed = p.Sharing.MIGSpeed
}

// migLookup gives MIG geometries (set by the sim/mig adapter; nil in a build
// without it, where mode mig is a validation error).
var migLookup sim.MIGLookup

// enableMIG sets up the MIG layouts of the scenario cluster's MIG-mode GPUs
// (so that feasibility checks see them); errors name the pools.
func (s *Scenario) enableMIG(c *sim.Cluster) error {
	if migLookup == nil {
		return nil
	}
	if err := c.EnableMIG(migLookup); err != nil {
		return s.fieldErr("cluster.pools", err)
	}
	return nil
}

// SharingConfig returns the engine's sharing settings, or nil when the scenario
// configures no sharing (then every output is as without the feature).
func (s *Scenario) SharingConfig() (*sim.SharingConfig, error) {
	if !s.sharingOn() {
		return nil, nil
	}
	cfg := &sim.SharingConfig{MIG: migLookup}
	in := s.Interference
	if in == nil {
		in = &InterferenceSpec{} // calibrate's fallback: 0.5 per pair, composed for more
	}
	cfg.SwitchOverhead = in.SwitchOverhead
	if in.Path != "" {
		t, err := loadInterference(s.Resolve(in.Path), *in)
		if err != nil {
			return nil, s.fieldErr("interference.path", err)
		}
		cfg.Interference = t
		return cfg, nil
	}
	// no matrix: calibrate's fallback model for every co-location
	t, err := newTableInterference(*in)
	if err != nil {
		return nil, s.fieldErr("interference", err)
	}
	cfg.Interference = t
	return cfg, nil
}

// loadInterference reads a measured matrix into an Interference (set by the
// calibrate adapter, interference.go).
var loadInterference func(path string, spec InterferenceSpec) (sim.Interference, error)

func interferenceLoaderSet() bool { return loadInterference != nil }
