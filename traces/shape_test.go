package traces

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

// TestSplitShapeByHand: the documented split rule on 8-GPU nodes.
func TestSplitShapeByHand(t *testing.T) {
	for _, c := range []struct {
		reps, per, cpu      int64
		wantR, wantG, wantL int32
		wantCPU             int64
	}{
		{5, 4, 1000, 3, 8, 4, 1667}, // 20 GPUs as 5 x 4 (gangShape): 8+8+4, 5000 mCPU over 3 replicas
		{2, 8, 0, 2, 8, 0, 0},       // 16: 8+8
		{4, 1, 500, 1, 4, 0, 2000},  // 4 one-GPU replicas: one replica of 4
		{1, 7, 0, 1, 7, 0, 0},       // 7: unchanged
		{32, 1, 0, 4, 8, 0, 0},      // 32 one-GPU replicas: 4 x 8
		{9, 1, 0, 2, 8, 1, 0},       // 9: 8+1
	} {
		j := sim.JobSpec{ID: "j", Replicas: int32(c.reps), GPUsPerReplica: int32(c.per), GPUMilli: sim.WholeGPU, CPUMilli: c.cpu, MemoryMiB: 3 * c.cpu}
		total := j.TotalGPUs()
		SplitShape(&j, 8)
		if j.Replicas != c.wantR || j.GPUsPerReplica != c.wantG || j.LastReplicaGPUs != c.wantL || j.CPUMilli != c.wantCPU || j.MemoryMiB != ceilDiv(3*c.cpu*c.reps, int64(c.wantR)) {
			t.Errorf("%d x %d: got %d x %d last %d, cpu %d mem %d; want %d x %d last %d, cpu %d", c.reps, c.per,
				j.Replicas, j.GPUsPerReplica, j.LastReplicaGPUs, j.CPUMilli, j.MemoryMiB, c.wantR, c.wantG, c.wantL, c.wantCPU)
		}
		if j.TotalGPUs() != total {
			t.Errorf("%d x %d: total %d -> %d", c.reps, c.per, total, j.TotalGPUs())
		}
		if err := j.Validate(); err != nil {
			t.Errorf("%d x %d: %v", c.reps, c.per, err)
		}
	}
	frac := sim.JobSpec{ID: "f", Replicas: 1, GPUsPerReplica: 1, GPUMilli: 500}
	SplitShape(&frac, 8)
	if frac.Replicas != 1 || frac.GPUsPerReplica != 1 || frac.GPUMilli != 500 {
		t.Errorf("fractional job reshaped: %+v", frac)
	}
}

// TestTraceSourceShape: shape split through TraceSource (nodeGPUs or the
// cluster's node size from Options), and its field errors.
func TestTraceSourceShape(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "vc.csv")
	csv := "vc,job_seq,arrival_time_s,num_gpus,duration_s\nv,0,0,20,10\nv,1,1,4,10\n"
	if err := os.WriteFile(path, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	src := TraceSource{Format: FormatPhillyGavel, Path: path}
	jobs, _, err := src.Load(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	if jobs[0].Replicas != 5 || jobs[0].GPUsPerReplica != 4 || jobs[0].Unequal() {
		t.Fatalf("importer shape: %d x %d last %d", jobs[0].Replicas, jobs[0].GPUsPerReplica, jobs[0].LastReplicaGPUs)
	}
	src.Shape = ShapeSplit
	if _, _, err := src.Load(dir, 1); err == nil || !strings.Contains(err.Error(), "nodeGPUs") {
		t.Fatalf("split without a node size: %v", err)
	}
	src.Options.NodeGPUs = 8
	jobs, _, err = src.Load(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	if jobs[0].Replicas != 3 || jobs[0].GPUsPerReplica != 8 || jobs[0].LastReplicaGPUs != 4 || jobs[1].Replicas != 1 || jobs[1].GPUsPerReplica != 4 {
		t.Fatalf("split: %+v / %+v", jobs[0], jobs[1])
	}
	src.NodeGPUs = 16
	if jobs, _, err = src.Load(dir, 1); err != nil || jobs[0].Replicas != 2 || jobs[0].GPUsPerReplica != 16 || jobs[0].LastReplicaGPUs != 4 {
		t.Fatalf("nodeGPUs 16: %v %+v", err, jobs)
	}
	for _, c := range []struct {
		shape string
		gpus  int32
		field string
	}{{"halves", 0, "shape"}, {"split", -1, "nodeGPUs"}, {"", 8, "nodeGPUs"}} {
		bad := TraceSource{Format: FormatPhillyGavel, Path: path, Shape: c.shape, NodeGPUs: c.gpus}
		fe := bad.Validate()
		if len(fe) != 1 || fe[0].Path != c.field {
			t.Errorf("shape %q nodeGPUs %d: %v, want one error on %s", c.shape, c.gpus, fe, c.field)
		}
	}
}
