package sim_test

import (
	"context"
	"testing"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// runFail runs one 4 x 8-GPU gang (1,000 s of work) under fifo/first-fit on
// five 8-GPU nodes with checkpoints every 100 s, restore 20 s, and the given
// failure config; incident: node 1 fails at 250 s for an hour.
func runFail(t *testing.T, fc *sim.FailureConfig, inc sim.Incident, oneLeaf bool) *sim.Result {
	t.Helper()
	nodes := simtest.Nodes(5, 8) // leaves of 4 nodes: node 4 alone in leaf 1
	if oneLeaf {
		for i := range nodes {
			nodes[i].Leaf = 0
		}
	}
	pol, err := policies.New("fifo", nil)
	if err != nil {
		t.Fatal(err)
	}
	fc.Source = sim.NewIncidentList([]sim.Incident{inc})
	cfg := sim.Config{
		Cluster:            simtest.Cluster(t, nodes),
		Jobs:               []sim.JobSpec{simtest.MakeJob("big").GPUs(8).Replicas(4).Dur(1000).Obj()},
		Policy:             pol,
		CheckpointInterval: sim.Seconds(100),
		CheckpointRestore:  sim.Seconds(20),
		Failures:           fc,
	}
	return simtest.RunConfig(t, cfg)
}

func nodeFail(n sim.NodeID) sim.Incident {
	return sim.Incident{At: sim.Time(sim.Seconds(250)), Repair: sim.Hour, GPU: -1, Nodes: []sim.NodeID{n}, Cause: "test"}
}

// TestFailureRecoveryHandWorked: one failure of node 1 at t=250 s under each
// strategy. Restart keeps the checkpoint at 200 s: 50 s of work lost plus the
// 20 s restore, restarted at once on nodes 0, 2, 3, 4: ends at 250+20+800 =
// 1070 s, lost 70 s x 32 GPUs = 2,240 GPU-s. Fault-tolerant recovery moves
// replica 1 to node 4, pauses 30 s and keeps all work: ends at 1,030 s, lost
// 30 s x 32 = 960 GPU-s. The gang spans one leaf: a replacement in another
// leaf breaks its topology constraint, so recovery falls back to a restart.
func TestFailureRecoveryHandWorked(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		fc                   sim.FailureConfig
		inc                  sim.Incident
		end, lost, jobLost   float64
		recovered, fallbacks int64
		spares               int64
		nodes                []sim.NodeID
		otherLeaf            bool
	}{
		{"restart", sim.FailureConfig{Recovery: sim.RecoverRestart}, nodeFail(1), 1070, 2240, 70, 0, 0, 0, []sim.NodeID{0, 2, 3, 4}, false},
		{"restart-gpu", sim.FailureConfig{Recovery: sim.RecoverRestart}, sim.Incident{At: sim.Time(sim.Seconds(250)), Repair: sim.Hour, GPU: 13}, 1070, 2240, 70, 0, 0, 0, []sim.NodeID{0, 2, 3, 4}, false},
		{"restart-gpu-spare", sim.FailureConfig{Recovery: sim.RecoverRestart, Spares: []sim.NodeID{4}}, sim.Incident{At: sim.Time(sim.Seconds(250)), Repair: sim.Hour, GPU: 13}, 1070, 2240, 70, 0, 0, 1, []sim.NodeID{0, 2, 3, 4}, false},
		{"restart-spare", sim.FailureConfig{Recovery: sim.RecoverRestart, Spares: []sim.NodeID{4}}, nodeFail(1), 1070, 2240, 70, 0, 0, 1, []sim.NodeID{0, 2, 3, 4}, false},
		{"fault-tolerant-free", sim.FailureConfig{Recovery: sim.RecoverFaultTolerant, RebuildCost: 30 * sim.Second, UseFreeNodes: true}, nodeFail(1), 1030, 960, 30, 1, 0, 0, []sim.NodeID{0, 4, 2, 3}, false},
		{"fault-tolerant-spare", sim.FailureConfig{Recovery: sim.RecoverFaultTolerant, RebuildCost: 30 * sim.Second, Spares: []sim.NodeID{4}}, nodeFail(1), 1030, 960, 30, 1, 0, 1, []sim.NodeID{0, 4, 2, 3}, false},
		{"fault-tolerant-gpu", sim.FailureConfig{Recovery: sim.RecoverFaultTolerant, RebuildCost: 30 * sim.Second, UseFreeNodes: true}, sim.Incident{At: sim.Time(sim.Seconds(250)), Repair: sim.Hour, GPU: 13}, 1030, 960, 30, 1, 0, 0, []sim.NodeID{0, 4, 2, 3}, false},
		// no spare and no free node allowed: falls back to a restart
		{"fault-tolerant-fallback", sim.FailureConfig{Recovery: sim.RecoverFaultTolerant, RebuildCost: 30 * sim.Second}, nodeFail(1), 1070, 2240, 70, 0, 1, 0, []sim.NodeID{0, 2, 3, 4}, false},
		// the only free node is in another leaf: restart on it (node 4 serves)
		{"fault-tolerant-other-leaf", sim.FailureConfig{Recovery: sim.RecoverFaultTolerant, RebuildCost: 30 * sim.Second, UseFreeNodes: true}, nodeFail(1), 1070, 2240, 70, 0, 1, 0, []sim.NodeID{0, 2, 3, 4}, true},
		// the spare is in another leaf: restart, and fault-tolerant recovery
		// keeps its spares for gangs, so the job waits for the repair (t=3,850 s)
		{"fault-tolerant-spare-other-leaf", sim.FailureConfig{Recovery: sim.RecoverFaultTolerant, RebuildCost: 30 * sim.Second, Spares: []sim.NodeID{4}}, nodeFail(1), 4670, 2240, 70, 0, 1, 0, []sim.NodeID{0, 1, 2, 3}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runFail(t, &tc.fc, tc.inc, !tc.otherLeaf)
			j := &res.Jobs[0]
			st := res.Failures
			if j.State != sim.StateCompleted || j.End.Seconds() != tc.end {
				t.Errorf("state %s end %g, want completed %g", j.State, j.End.Seconds(), tc.end)
			}
			if st.LostGPUSeconds != tc.lost || st.JobLost[0].Seconds() != tc.jobLost {
				t.Errorf("lost %g GPU-s, job %g s; want %g, %g", st.LostGPUSeconds, st.JobLost[0].Seconds(), tc.lost, tc.jobLost)
			}
			if st.Interruptions != 1 || st.JobInterruptions[0] != 1 || st.Recovered != tc.recovered || st.Fallbacks != tc.fallbacks || st.SparesUsed != tc.spares {
				t.Errorf("stats %+v", *st)
			}
			if j.Preempted != 0 {
				t.Errorf("preemptions %d: a failure is not a preemption", j.Preempted)
			}
			if len(j.Nodes) != len(tc.nodes) {
				t.Fatalf("nodes %v", j.Nodes)
			}
			for i := range tc.nodes {
				if j.Nodes[i] != tc.nodes[i] {
					t.Errorf("nodes %v, want %v", j.Nodes, tc.nodes)
					break
				}
			}
			// work kept + lost = all wall time the job held: useful = 1000 s x 32
			if st.UsefulGPUSeconds != 32000 {
				t.Errorf("useful %g GPU-s, want 32000", st.UsefulGPUSeconds)
			}
			// the repair at 3,850 s happens only if the run lasts that long
			if wantRep := int64(0); tc.end > 3850 && st.Repairs != 1 || tc.end < 3850 && st.Repairs != wantRep || st.Incidents != 1 {
				t.Errorf("repairs %d incidents %d", st.Repairs, st.Incidents)
			}
			// node 1's 8 GPUs (or GPU 13) down from 250 s to the end or the repair
			down := 8.0
			if tc.inc.GPU >= 0 {
				down = 1
			}
			if want := down * (min(tc.end, 3850) - 250); st.DownGPUSeconds != want {
				t.Errorf("down %g GPU-s, want %g", st.DownGPUSeconds, want)
			}
		})
	}
}

// TestFailurePlannedCheckpointAndSpareRefill: maintenance on node 0 at 250 s
// with a 10 s save and a 20 s restore: the job checkpoints in the notice (its
// work at 240 s wall: checkpoints saved at 100-110 s and 210-220 s, so 220 s
// of work) and loses only the save and the restore (30 s x 8 GPUs). The
// repaired node refills the empty spare pool.
func TestFailurePlannedCheckpointAndSpareRefill(t *testing.T) {
	pol, err := policies.New("fifo", nil)
	if err != nil {
		t.Fatal(err)
	}
	nodes := simtest.Nodes(3, 8)
	fc := &sim.FailureConfig{Recovery: sim.RecoverRestart, PlannedCheckpoint: true, Spares: []sim.NodeID{2},
		Source: sim.NewIncidentList([]sim.Incident{{At: sim.Time(250 * sim.Second), Repair: 100 * sim.Second, GPU: -1, Nodes: []sim.NodeID{0}, Planned: true}})}
	cfg := sim.Config{Cluster: simtest.Cluster(t, nodes), Policy: pol, Failures: fc,
		Jobs:               []sim.JobSpec{simtest.MakeJob("a").GPUs(8).Dur(1000).Obj()},
		CheckpointInterval: 100 * sim.Second, CheckpointSave: 10 * sim.Second, CheckpointRestore: 20 * sim.Second}
	res := simtest.RunConfig(t, cfg)
	st, j := res.Failures, &res.Jobs[0]
	if st.PlannedInterrupt != 1 || st.Interruptions != 0 || st.PlannedIncidents != 1 {
		t.Errorf("stats %+v", *st)
	}
	if st.LostGPUSeconds != 240 || st.JobLost[0] != 30*sim.Second {
		t.Errorf("lost %g GPU-s, job %v; want 240, 30s", st.LostGPUSeconds, st.JobLost[0])
	}
	// restarted at 250 s with 220 s of work: 20 + 780 + 7 saves (300..900) = 870 s
	if j.End != sim.Time(1120*sim.Second) || j.State != sim.StateCompleted {
		t.Errorf("end %v state %s, want 1120 s completed", j.End, j.State)
	}
	// the spare (node 2) replaced node 0 at once, node 0 became the spare at 350 s
	if st.SparesUsed != 1 || j.Nodes[0] != 1 && j.Nodes[0] != 2 {
		t.Errorf("spares used %d, nodes %v", st.SparesUsed, j.Nodes)
	}
	if c := res.Cluster; c.NodeFreeGPUs(0) != 0 {
		t.Errorf("node 0 has %d free GPUs, want 0 (held as the refilled spare)", c.NodeFreeGPUs(0))
	}
}

// TestFailureFaultTolerantWalltime: a fault-tolerant recovery continues the
// run's walltime (the gang never left its allocation): with a 1,020 s limit the
// gang of TestFailureRecoveryHandWorked (which needs until 1,030 s) times out
// at 1,020 s; with 1,100 s it completes at 1,030 s.
func TestFailureFaultTolerantWalltime(t *testing.T) {
	for _, tc := range []struct {
		wall  float64
		state sim.JobState
		end   float64
	}{{1020, sim.StateTimeout, 1020}, {1100, sim.StateCompleted, 1030}} {
		pol, err := policies.New("fifo", nil)
		if err != nil {
			t.Fatal(err)
		}
		nodes := simtest.Nodes(5, 8)
		for i := range nodes {
			nodes[i].Leaf = 0
		}
		fc := &sim.FailureConfig{Recovery: sim.RecoverFaultTolerant, RebuildCost: 30 * sim.Second, UseFreeNodes: true,
			Source: sim.NewIncidentList([]sim.Incident{nodeFail(1)})}
		e, err := sim.NewEngine(sim.Config{Cluster: simtest.Cluster(t, nodes), Policy: pol, Failures: fc, EnforceWalltime: true,
			Jobs: []sim.JobSpec{simtest.MakeJob("big").GPUs(8).Replicas(4).Dur(1000).Wall(tc.wall).Obj()}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if j := &res.Jobs[0]; j.State != tc.state || j.End.Seconds() != tc.end {
			t.Errorf("walltime %g: %s at %g, want %s at %g", tc.wall, j.State, j.End.Seconds(), tc.state, tc.end)
		}
	}
}
