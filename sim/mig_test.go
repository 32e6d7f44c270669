package sim_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

// fakeMIG is a small A100-80GB-like geometry for engine tests (the real tables
// live in package sim/mig): 8 memory slices; profile -> compute slices, memory
// slices, allowed starts.
type fakeMIG struct{}

var fakeProfiles = []struct {
	name    string
	compute int
	mem     int
	starts  []int
}{
	{"1g.10gb", 1, 1, []int{0, 1, 2, 3, 4, 5, 6}},
	{"2g.20gb", 2, 2, []int{0, 2, 4}},
	{"3g.40gb", 3, 4, []int{0, 4}},
	{"4g.40gb", 4, 4, []int{0}},
	{"7g.80gb", 7, 8, []int{0}},
}

func (fakeMIG) Profile(name string) (int, bool) {
	for i, p := range fakeProfiles {
		if p.name == name {
			return i, true
		}
	}
	return 0, false
}
func (fakeMIG) ProfileName(p int) string { return fakeProfiles[p].name }
func (fakeMIG) ComputeSlices(p int) int  { return fakeProfiles[p].compute }
func (fakeMIG) MemoryMiB(p int) int64    { return int64(fakeProfiles[p].mem) * 10240 }
func (fakeMIG) Place(l sim.MIGLayout, p int) (sim.MIGLayout, int, bool) {
	pr := fakeProfiles[p]
	for _, s := range pr.starts {
		mask := uint8((1<<pr.mem - 1) << s)
		if l.Used&mask == 0 {
			l.Used |= mask
			return l, s, true
		}
	}
	return l, 0, false
}

func migLookup(model string) (sim.MIGGeometry, bool) { return fakeMIG{}, model == "a100" }

func migNodes(profiles ...string) []sim.NodeSpec {
	return []sim.NodeSpec{{Name: "m0", GPUModel: "a100", GPUs: 1, GPUMemMiB: 81920, CPUMilli: 64000, MemoryMiB: 1 << 20,
		Sharing: sim.ShareMIG, MIGProfiles: profiles, MIGReconfigureCost: 10 * sim.Second}}
}

// migPolicy starts each pending job on GPU 0 when an instance fits; when the head
// job fits no instance of the current layout, it stops starting jobs (drain),
// and once the GPU is empty reconfigures it to the head's profile alone. It also
// records the errors of a premature reconfiguration and a whole-GPU start.
type migPolicy struct{ errs []error }

func (p *migPolicy) Name() string { return "mig" }

func (p *migPolicy) Schedule(v *sim.View, pl *sim.Plan) error {
	c := v.Cluster()
	for j := v.PendingHead(); j != nil; {
		next := v.NextPending(j)
		if j.Spec.Sharing == sim.AcceptExclusive {
			p.errs = append(p.errs, pl.AddStart(j.Ref, []sim.NodeID{0}, []sim.GPUID{0}))
			return nil
		}
		if c.CanShare(&j.Spec, 0) {
			if err := pl.AddStart(j.Ref, []sim.NodeID{0}, []sim.GPUID{0}); err != nil {
				return err
			}
			j = next
			continue
		}
		if c.MIGReconfiguring(0) {
			return nil
		}
		if c.Sharers(0) > 0 {
			p.errs = append(p.errs, pl.AddReconfigure(0, []string{j.Spec.MIGProfile}))
			return nil // drain
		}
		return pl.AddReconfigure(0, []string{j.Spec.MIGProfile})
	}
	return nil
}

// A runs 30 s of work on a 3g.40gb instance (speed 3/7): it ends at 70 s. B asks
// for 7g.80gb at 5 s: the layout [3g.40gb, 3g.40gb] has none, the GPU must drain
// (a reconfiguration while A runs is a PlanError), is reconfigured at 70 s, is
// unusable for 10 s, and B runs 20 s at full speed: 80 s .. 100 s.
func TestMIGReconfigureWaitsForDrain(t *testing.T) {
	c, err := sim.NewCluster(migNodes("3g.40gb", "3g.40gb"))
	if err != nil {
		t.Fatal(err)
	}
	a := shareJob("A", 30, "")
	a.Sharing, a.MIGProfile = sim.AcceptMIG, "3g.40gb"
	b := shareJob("B", 20, "")
	b.Sharing, b.MIGProfile, b.Submit = sim.AcceptMIG, "7g.80gb", sim.Time(5*sim.Second)
	pol := &migPolicy{}
	e, err := sim.NewEngine(sim.Config{Cluster: c, Jobs: []sim.JobSpec{a, b}, Policy: pol,
		Sharing: &sim.SharingConfig{MIG: migLookup}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(t.Context())
	var pe *sim.PlanError
	if err == nil || !errors.As(err, &pe) || !strings.Contains(err.Error(), "drain it before reconfiguring") {
		t.Fatalf("err = %v, want the premature reconfiguration refused", err)
	}
	_ = res
	// The same without the premature attempt.
	pol2 := &drainingMIG{}
	e, _ = sim.NewEngine(sim.Config{Cluster: c, Jobs: []sim.JobSpec{a, b}, Policy: pol2, Sharing: &sim.SharingConfig{MIG: migLookup}})
	res, err = e.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ja, jb := jobByID(t, res, "A"), jobByID(t, res, "B")
	if us(ja.End) != 70_000_000 || us(jb.FirstStart) != 80_000_000 || us(jb.End) != 100_000_000 {
		t.Errorf("A ends %d; B runs %d..%d µs; want 70 s; 80..100 s", us(ja.End), us(jb.FirstStart), us(jb.End))
	}
	if ja.MinSpeed() != 3.0/7 || jb.MinSpeed() != 1 {
		t.Errorf("speeds A %v B %v, want 3/7, 1", ja.MinSpeed(), jb.MinSpeed())
	}
	if res.Sharing.MIGReconfigurations != 1 {
		t.Errorf("%d reconfigurations, want 1", res.Sharing.MIGReconfigurations)
	}
}

// drainingMIG is migPolicy without the premature reconfiguration.
type drainingMIG struct{}

func (drainingMIG) Name() string { return "mig-drain" }
func (drainingMIG) Schedule(v *sim.View, pl *sim.Plan) error {
	c := v.Cluster()
	for j := v.PendingHead(); j != nil; {
		next := v.NextPending(j)
		if c.CanShare(&j.Spec, 0) {
			if err := pl.AddStart(j.Ref, []sim.NodeID{0}, []sim.GPUID{0}); err != nil {
				return err
			}
			j = next
			continue
		}
		if c.MIGReconfiguring(0) || c.Sharers(0) > 0 {
			return nil // wait for the drain / the reconfiguration
		}
		return pl.AddReconfigure(0, []string{j.Spec.MIGProfile})
	}
	return nil
}

// A job without a profile takes the free instance with the least memory that
// holds its gpu_mem_mib: 15 GiB -> 2g.20gb (speed 2/7), not 1g.10gb or 4g.40gb;
// two instances run side by side without slowing each other.
func TestMIGSmallestFittingInstance(t *testing.T) {
	c, _ := sim.NewCluster(migNodes("4g.40gb", "2g.20gb", "1g.10gb"))
	a := shareJob("A", 20, "")
	a.Sharing, a.GPUMemMiB = sim.AcceptMIG, 15000
	b := shareJob("B", 10, "")
	b.Sharing, b.GPUMemMiB = sim.AcceptAny, 30000
	res := runShare(t, sim.Config{Cluster: c, Jobs: []sim.JobSpec{a, b}, Policy: drainingMIG{}, Sharing: &sim.SharingConfig{MIG: migLookup}})
	// A: 20 s at 2/7 = 70 s; B: 4g.40gb, 10 s at 4/7 = 17.5 s
	if ja, jb := jobByID(t, res, "A"), jobByID(t, res, "B"); us(ja.End) != 70_000_000 || us(jb.End) != 17_500_000 {
		t.Errorf("A ends %d, B %d µs; want 70 s, 17.5 s", us(ja.End), us(jb.End))
	}
	if res.Sharing.InterferenceLossGPUSeconds != 0 {
		t.Errorf("MIG instances lost %v GPU-s to interference", res.Sharing.InterferenceLossGPUSeconds)
	}
}

// A whole-GPU job cannot use a MIG-mode GPU, and a layout that breaks the
// placement table is an error.
func TestMIGErrors(t *testing.T) {
	c, _ := sim.NewCluster(migNodes("3g.40gb", "4g.40gb"))
	if _, err := sim.NewEngine(sim.Config{Cluster: c, Jobs: []sim.JobSpec{shareJob("A", 1, "")}, Policy: drainingMIG{}, Sharing: &sim.SharingConfig{MIG: migLookup}}); err == nil || !strings.Contains(err.Error(), "4g.40gb does not fit") {
		t.Errorf("err = %v, want the invalid layout named", err)
	}
	c, _ = sim.NewCluster(migNodes("7g.80gb"))
	x := shareJob("X", 1, "")
	x.Sharing = sim.AcceptExclusive
	pol := &migPolicy{}
	e, err := sim.NewEngine(sim.Config{Cluster: c, Jobs: []sim.JobSpec{x}, Policy: pol, Sharing: &sim.SharingConfig{MIG: migLookup}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(t.Context()); err == nil || !strings.Contains(err.Error(), "is in MIG mode") {
		t.Errorf("err = %v, want a whole-GPU start on a MIG GPU refused", err)
	}
	if err := c.Feasible(&x); err == nil {
		t.Error("a whole-GPU job is feasible on a MIG-only cluster")
	}
}

// Seven 1g.10gb instances hold seven jobs, each at 1/7 of the GPU.
func TestMIGSevenInstances(t *testing.T) {
	c, _ := sim.NewCluster(migNodes("1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"))
	var jobs []sim.JobSpec
	for i := range 8 {
		j := shareJob(string(rune('A'+i)), 1, "")
		j.Sharing = sim.AcceptMIG
		jobs = append(jobs, j)
	}
	res := runShare(t, sim.Config{Cluster: c, Jobs: jobs, Policy: drainingMIG{}, Sharing: &sim.SharingConfig{MIG: migLookup}})
	// 1 s of work at 1/7: 7 s; the eighth job waits for an instance
	for i := range 7 {
		if j := &res.Jobs[i]; us(j.End) != 7_000_000 {
			t.Errorf("%s ends at %d µs, want 7 s", j.Spec.ID, us(j.End))
		}
	}
	if j := &res.Jobs[7]; us(j.FirstStart) != 7_000_000 || us(j.End) != 14_000_000 {
		t.Errorf("H runs %d..%d µs, want 7..14 s", us(j.FirstStart), us(j.End))
	}
}

// A measured per-profile speed replaces the compute-slice share: 3g.40gb at 0.5
// (instead of 3/7): 30 s of work end at 60 s.
func TestMIGMeasuredProfileSpeed(t *testing.T) {
	nodes := migNodes("3g.40gb", "3g.40gb")
	nodes[0].MIGSpeed = map[string]float64{"3g.40gb": 0.5}
	c, _ := sim.NewCluster(nodes)
	a := shareJob("A", 30, "")
	a.Sharing, a.MIGProfile = sim.AcceptMIG, "3g.40gb"
	res := runShare(t, sim.Config{Cluster: c, Jobs: []sim.JobSpec{a}, Policy: drainingMIG{}, Sharing: &sim.SharingConfig{MIG: migLookup}})
	if j := &res.Jobs[0]; us(j.End) != 60_000_000 {
		t.Errorf("A ends at %d µs, want 60 s", us(j.End))
	}
	nodes[0].MIGSpeed = map[string]float64{"5g.50gb": 0.5}
	c, _ = sim.NewCluster(nodes)
	if _, err := sim.NewEngine(sim.Config{Cluster: c, Jobs: []sim.JobSpec{a}, Policy: drainingMIG{}, Sharing: &sim.SharingConfig{MIG: migLookup}}); err == nil || !strings.Contains(err.Error(), "migSpeed 5g.50gb") {
		t.Errorf("err = %v, want the unknown profile named", err)
	}
}

// Starting a MIG job where no instance fits is a PlanError naming the profile.
func TestMIGNoInstancePlanError(t *testing.T) {
	c, _ := sim.NewCluster(migNodes("1g.10gb"))
	a := shareJob("A", 1, "")
	a.Sharing, a.MIGProfile = sim.AcceptMIG, "3g.40gb"
	e, _ := sim.NewEngine(sim.Config{Cluster: c, Jobs: []sim.JobSpec{a}, Policy: force{}, Sharing: &sim.SharingConfig{MIG: migLookup}})
	if _, err := e.Run(t.Context()); err == nil || !strings.Contains(err.Error(), `no free instance for the job (mig_profile "3g.40gb"`) {
		t.Errorf("err = %v", err)
	}
}
