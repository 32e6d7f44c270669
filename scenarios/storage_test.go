package scenarios

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Bad storage fields are reported at file:line: field, every one of them.
func TestStorageScenarioErrors(t *testing.T) {
	doc := minimal + `simulation:
  checkpointSaveCost: 60s
  checkpointOnSignal: true
storage:
  bandwidthGBps: 0
  scope: rack
  checkpointGB: -1
  perClassGB: {training: -2}
`
	mustErr(t, doc, nil,
		"s.yaml:12: simulation.checkpointSaveCost: must be 0 with storage:",
		"s.yaml:13: simulation.checkpointOnSignal: not supported with storage:",
		"s.yaml:15: storage.bandwidthGBps: required: a finite write bandwidth > 0",
		"s.yaml:16: storage.scope: want cluster, node, leaf or spine, got \"rack\"",
		"s.yaml:17: storage.checkpointGB: must be a finite size >= 0 in GB",
		"s.yaml:18: storage.perClassGB.training: must be a finite size >= 0 in GB",
		"s.yaml:14: storage: needs a checkpoint size",
		"s.yaml:14: storage: needs periodic checkpoints: set simulation.checkpointInterval",
	)
	mustErr(t, minimal+"simulation: {checkpointInterval: 1h}\nstorage: {bandwidthGBps: 10, checkpointGB: 5}\nfailures: {strategy: fault-tolerant}\n", nil,
		"s.yaml:13: failures.strategy: fault-tolerant recovery is not supported with storage:")
	mustErr(t, minimal+"simulation: {checkpointInterval: 1h}\nstorage: {bandwidthGBps: 10, checkpointGB: 5}\nfailures: {maintenance: {start: 1d, every: 7d, nodes: 1, duration: 1h}}\n", nil,
		"failures.maintenance.checkpoint: must be false with storage:")
	mustErr(t, minimal+"simulation: {checkpointInterval: 1h}\nstorage: {bandwidthGBps: 10, checkpointGB: 5, nope: 1}\n", nil,
		"s.yaml:12: storage.nope: unknown field")
	// a valid block with failures (restart) parses
	if _, err := Parse([]byte(minimal+"simulation: {checkpointInterval: 1h}\nstorage: {bandwidthGBps: 10, checkpointGB: 5, scope: leaf}\nfailures: {strategy: restart}\n"), "s.yaml", nil); err != nil {
		t.Error(err)
	}
}

// The example's checkpoint burst and its two fixes (docs/checkpoint-io.md):
// 52 jobs started together save together on one 100 GB/s storage, each save
// about 30x slower than alone on average; staggered checkpoints or a storage
// target per leaf cut the time spent saving.
func TestStorageBurstExample(t *testing.T) {
	run := func(sets ...string) *CheckpointIOOut {
		sc, err := Load("examples/checkpoint-io.yaml", sets)
		if err != nil {
			t.Fatal(err)
		}
		runs, err := Run(context.Background(), sc, RunOptions{NoLog: true})
		if err != nil {
			t.Fatal(err)
		}
		s := runs[0].Summary
		if s.CheckpointIO == nil || s.Jobs.Completed != 52 {
			t.Fatalf("%v: checkpoint_io %v, %d completed", sets, s.CheckpointIO, s.Jobs.Completed)
		}
		c := s.CheckpointIO
		t.Logf("%v: saves %d, %.0f GB, save hours %.3f (GPU-hours %.2f), slowdown mean %.2f max %.2f, peak %d/%d, makespan %.0f s",
			sets, c.Saves, c.GBWritten, c.SaveHours, c.SaveGPUHours, c.MeanSlowdown, c.MaxSlowdown, c.PeakConcurrent, c.PeakTotal, s.MakespanS)
		return &CheckpointIOOut{c.SaveHours, c.MeanSlowdown, c.MaxSlowdown, c.PeakConcurrent, s.MakespanS}
	}
	burst, stagger, leaf := run(), run("storage.stagger=true"), run("storage.scope=leaf")
	// all 52 at once: an 8-GPU job's 96 GB waits for 52 shares
	if burst.peak != 52 || burst.max != 52 || burst.mean < 20 {
		t.Errorf("burst: %+v", *burst)
	}
	if leaf.peak != 16 || leaf.max != 16 || leaf.hours > burst.hours/2 {
		t.Errorf("per-leaf: %+v (burst %+v)", *leaf, *burst)
	}
	if stagger.mean > 1.1 || stagger.hours > burst.hours/10 || stagger.makespan >= burst.makespan {
		t.Errorf("stagger: %+v (burst %+v)", *stagger, *burst)
	}
}

// CheckpointIOOut is what TestStorageBurstExample compares.
type CheckpointIOOut struct {
	hours, mean, max float64
	peak             int
	makespan         float64
}

// With storage on, the example gives byte-identical outputs twice and under
// GOMAXPROCS=1.
func TestStorageDeterminism(t *testing.T) {
	d := t.TempDir()
	run := func(dir string, sets ...string) {
		sc, err := Load("examples/checkpoint-io.yaml", sets)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Run(context.Background(), sc, RunOptions{OutDir: dir}); err != nil {
			t.Fatal(err)
		}
	}
	sets := []string{"storage.stagger=true", "simulation.checkpointInterval=7m"}
	run(filepath.Join(d, "a"), sets...)
	run(filepath.Join(d, "b"), sets...)
	prev := runtime.GOMAXPROCS(1)
	run(filepath.Join(d, "c"), sets...)
	runtime.GOMAXPROCS(prev)
	files := []string{"jobs.csv", "jobs.parquet", "events.parquet", "timeseries.parquet"}
	sameFiles(t, filepath.Join(d, "a", "fifo"), filepath.Join(d, "b", "fifo"), files...)
	sameFiles(t, filepath.Join(d, "a", "fifo"), filepath.Join(d, "c", "fifo"), files...)
	strip := func(dir string) string {
		b, err := os.ReadFile(filepath.Join(dir, "fifo", "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var keep []string
		for _, l := range strings.Split(string(b), "\n") {
			if !strings.Contains(l, "wall_seconds") && !strings.Contains(l, "events_per_second") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	if a, c := strip(filepath.Join(d, "a")), strip(filepath.Join(d, "c")); a != c || !strings.Contains(a, `"checkpoint_io"`) {
		t.Errorf("summary.json differs or lacks checkpoint_io")
	}
	b, err := os.ReadFile(filepath.Join(d, "a", "fifo", "jobs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if head, _, _ := strings.Cut(string(b), "\n"); !strings.HasSuffix(head, ",overhead_s,ckpt_saves,ckpt_gb,ckpt_save_s") {
		t.Errorf("jobs.csv header %q lacks the checkpoint columns", head)
	}
}

// Checkpoint I/O with failures (restart recovery) and preemptions: every job
// completes, keeps its whole work, and its overhead (restores and saves) is
// part of its waste.
func TestStorageWithFailures(t *testing.T) {
	doc := `apiVersion: gpusim/v1alpha1
kind: Scenario
name: t
simulation: {checkpointInterval: 20m, checkpointRestoreCost: 2m}
cluster:
  pools:
    - {name: a, template: dgx-h100, nodes: 8}
  fabric: {nodesPerLeaf: 4}
workload:
  synthetic: {jobs: 200, load: 0.9}
storage: {bandwidthGBps: 5, perGPUGB: 12, scope: leaf}
failures: {strategy: restart, gpu: {mtbf: 200h}, node: {mtbf: 100h}}
policies:
  - name: easy-backfill
`
	sc, err := Parse([]byte(doc), "s.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := Run(context.Background(), sc, RunOptions{NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	s := runs[0].Summary
	if s.Jobs.Completed != 200 || s.Failures == nil || s.Failures.Interruptions == 0 || s.CheckpointIO == nil || s.CheckpointIO.Saves == 0 {
		t.Fatalf("completed %d, failures %+v, checkpoint_io %+v", s.Jobs.Completed, s.Failures, s.CheckpointIO)
	}
	t.Logf("interruptions %d, checkpoint_io %+v", s.Failures.Interruptions, *s.CheckpointIO)
	for i := range runs[0].Result.Jobs {
		j := &runs[0].Result.Jobs[i]
		if j.Done != j.Spec.Duration || j.Overhead > j.Wasted || j.Overhead < 0 {
			t.Fatalf("job %s: done %s of %s, wasted %s, overhead %s", j.Spec.ID, j.Done, j.Spec.Duration, j.Wasted, j.Overhead)
		}
	}
}
