package reports

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

// TestCheckpointIOOutputs: a run with failures, power and checkpoint I/O has
// the three extra column groups in their fixed order, the CSV parses back,
// the streaming and row writers agree, and summary.json has checkpoint_io.
// j1 (100 s, a checkpoint every 40 s of 20 GB at 10 GB/s: 2 s saves) loses its
// node at 30 s before its first checkpoint and restarts at once from 0 on the
// other node (j2 finished at 10): work to 70, save to 72, work to 112, save to
// 114, work to 134.
func TestCheckpointIOOutputs(t *testing.T) {
	jobs := []sim.JobSpec{job("j1", 0, 100, 1, 4, sim.ClassTraining, "q1", "alice"), job("j2", 0, 10, 1, 4, sim.ClassTraining, "q1", "bob")}
	fc := &sim.FailureConfig{Source: sim.NewIncidentList([]sim.Incident{{At: sim.Time(30 * sim.Second), Repair: 5 * sim.Second, GPU: -1, Nodes: []sim.NodeID{0}}})}
	pc := &sim.PowerConfig{Models: map[string]sim.GPUPower{"a100": {IdleW: 50, MaxW: 300}}}
	sc := &sim.StorageConfig{BandwidthGBps: 10, SizeGB: func(*sim.JobSpec) float64 { return 20 }}
	e, err := sim.NewEngine(sim.Config{Cluster: testCluster(t, 2, 4), Jobs: jobs, Policy: fifo{}, Seed: 1, SampleInterval: 10 * sim.Second,
		CheckpointInterval: 40 * sim.Second, Failures: fc, Power: pc, Storage: sc})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rows := JobRows(res)
	if rows[0].End != 134 {
		t.Errorf("j1 ends at %v, want 134", rows[0].End)
	}
	var csvb bytes.Buffer
	if err := WriteJobsCSV(&csvb, rows); err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(csvb.String(), "\n")
	if !strings.HasSuffix(head, ",failure_lost_gpu_hours,energy_kwh,carbon_kg,peak_power_w,ckpt_saves,ckpt_gb,ckpt_save_s") {
		t.Errorf("header %q", head)
	}
	back, err := ParseJobsCSV("jobs.csv", strings.NewReader(csvb.String()))
	if err != nil {
		t.Fatal(err)
	}
	if c := back[0].Ckpt; c == nil || *c != (JobCkpt{Saves: 2, GB: 40, SaveS: 4}) || back[0].Fail == nil || back[0].Power == nil {
		t.Fatalf("j1 parsed back: ckpt %+v fail %+v power %+v", back[0].Ckpt, back[0].Fail, back[0].Power)
	}
	if c := back[1].Ckpt; c == nil || *c != (JobCkpt{}) {
		t.Errorf("j2 ckpt %+v, want zeros", c)
	}
	for name, pair := range map[string][2]func(io.Writer) error{
		"csv":     {func(w io.Writer) error { return writeJobsCSVOf(w, res) }, func(w io.Writer) error { return WriteJobsCSV(w, rows) }},
		"parquet": {func(w io.Writer) error { return writeJobsParquetOf(w, res) }, func(w io.Writer) error { return WriteJobsParquet(w, rows) }},
	} {
		if got, want := writeBytes(t, pair[0]), writeBytes(t, pair[1]); !bytes.Equal(got, want) {
			t.Errorf("%s: streaming writer differs", name)
		}
	}
	s := Summarize(res, Provenance{}, 0).CheckpointIO
	if s == nil || s.Saves != 2 || s.GBWritten != 40 || s.Pools != 1 || s.MeanSlowdown != 1 || s.PeakConcurrent != 1 || s.SaveGPUHours != round(4*4.0/3600) {
		t.Errorf("checkpoint_io %+v", s)
	}
	if Summarize(smallResult(t), Provenance{}, 0).CheckpointIO != nil {
		t.Error("a run without storage has a checkpoint_io block")
	}
}
