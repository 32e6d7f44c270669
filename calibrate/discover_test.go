package calibrate

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

func TestDiscoverFakeDGX(t *testing.T) {
	p := fakeProbe(t)
	r, err := Discover(p, Host{Name: "dgx1", CPUs: 224, MemoryMiB: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if r.DriverVersion != "550.54.15" || r.CUDAVersion != "12.4" || len(r.GPUs) != 8 {
		t.Fatalf("report %+v", r)
	}
	g0, g7 := r.GPUs[0], r.GPUs[7]
	if g0.ActiveNVLinks != 18 || len(g0.NVLinkPeers) != 7 || g0.NVLinkPeers[0] != 1 {
		t.Errorf("GPU0 NVLink: %d active, peers %v", g0.ActiveNVLinks, g0.NVLinkPeers)
	}
	if !g7.MIGEnabled || len(g7.MIGInstances) != 3 {
		t.Errorf("GPU7 MIG: %+v", g7.DeviceInfo)
	}
	want := NodeTemplate{Name: "h100-80gb-hbm3-x8", GPUModel: "H100-80GB-HBM3", GPUs: 8, GPUMemoryMiB: 81559,
		CPUMilli: 224000, MemoryMiB: 2 << 20, NVLinkSize: 0, PCIeSize: 2, SocketSize: 4}
	if d := cmp.Diff(want, r.Template); d != "" {
		t.Errorf("template (-want +got):\n%s", d)
	}
	// The template YAML parses back into the pool-template schema.
	var b bytes.Buffer
	if err := WriteTemplate(&b, r.Template, "fake"); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := yaml.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"name", "gpuModel", "gpus", "gpuMemoryMiB", "cpuMilli", "memoryMiB", "nvlinkSize", "pcieSize", "socketSize"} {
		if _, ok := back[k]; !ok {
			t.Errorf("template lacks %s:\n%s", k, b.String())
		}
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil || !strings.Contains(text.String(), "MIG on, 3 instance(s)") || !strings.Contains(text.String(), "pcieSize 2") {
		t.Errorf("text: %v\n%s", err, text.String())
	}
}

// Without NVLink the matrix falls back to the PCIe common ancestor.
type noNVLink struct{ *Fake }

func (noNVLink) NVLinks(int) ([]NVLink, error) { return nil, nil }

// Direct GPU-GPU NVLink pairs (0-1, 2-3) and no switch.
type pairNVLink struct{ *Fake }

func (p pairNVLink) NVLinks(i int) ([]NVLink, error) {
	return []NVLink{{Link: 0, Active: true, PeerType: "gpu", PeerBusID: fakeBusID(i ^ 1)}, {Link: 1, Active: false}}, nil
}

func TestDiscoverTopology(t *testing.T) {
	f := fakeProbe(t)
	r, err := Discover(noNVLink{f}, Host{})
	if err != nil {
		t.Fatal(err)
	}
	row0 := []Link{LinkSelf, LinkPCIeSwitch, LinkNUMANode, LinkNUMANode, LinkSystem, LinkSystem, LinkSystem, LinkSystem}
	if d := cmp.Diff(row0, r.Topology[0]); d != "" {
		t.Errorf("row 0 (-want +got):\n%s", d)
	}
	if r.Template.NVLinkSize != 1 || r.Template.PCIeSize != 2 || r.Template.SocketSize != 4 {
		t.Errorf("template %+v", r.Template)
	}
	r, err = Discover(pairNVLink{f}, Host{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Topology[2][3] != LinkNVLink || r.Topology[1][2] != LinkNUMANode || r.Template.NVLinkSize != 2 {
		t.Errorf("pair NVLink: %v, template %+v", r.Topology, r.Template)
	}
	if r.GPUs[3].ActiveNVLinks != 1 || len(r.GPUs[3].NVLinkPeers) != 1 || r.GPUs[3].NVLinkPeers[0] != 2 {
		t.Errorf("GPU3 %+v", r.GPUs[3])
	}
}

func TestGroupSizeAndSlug(t *testing.T) {
	all := func(i, j int) bool { return true }
	none := func(i, j int) bool { return false }
	quads := func(i, j int) bool { return i/4 == j/4 }
	if groupSize(8, all) != 0 || groupSize(8, none) != 1 || groupSize(8, quads) != 4 || groupSize(0, all) != 0 || groupSize(6, func(i, j int) bool { return i/3 == j/3 }) != 3 {
		t.Error("groupSize")
	}
	for in, want := range map[string]string{"NVIDIA A100-SXM4-80GB": "A100-SXM4-80GB", "NVIDIA GeForce RTX 4090": "GeForce-RTX-4090", "": "unknown", "Tesla V100 (PCIe)": "Tesla-V100-PCIe"} {
		if got := ModelSlug(in); got != want {
			t.Errorf("ModelSlug(%q) = %q, want %q", in, got, want)
		}
	}
	if ThrottleNames(4|64|1024) != "sw_power_cap|hw_thermal_slowdown|0x400" || ThrottleNames(-1) != "" {
		t.Error(ThrottleNames(4 | 64 | 1024))
	}
}

func TestFakeMissingAndUninitialized(t *testing.T) {
	f := &Fake{GPUs: 2, MIGGPU: -1, Missing: true}
	if err := f.Init(); !errors.Is(err, ErrNVMLNotFound) || !strings.Contains(err.Error(), "NVML library not found") {
		t.Errorf("Init: %v", err)
	}
	if _, err := f.DeviceCount(); err == nil {
		t.Error("DeviceCount before Init succeeded")
	}
	if _, err := Discover(f, Host{}); err == nil {
		t.Error("Discover on an uninitialized probe succeeded")
	}
}

func TestTelemetry(t *testing.T) {
	p := fakeProbe(t)
	var rounds int
	s, err := Telemetry(context.Background(), p, TelemetryOptions{Interval: 20 * time.Millisecond, Duration: 110 * time.Millisecond,
		GPUs: []int{1, 3}, Progress: func(int, time.Time) { rounds++ }})
	if err != nil {
		t.Fatal(err)
	}
	if rounds < 3 || len(s) != 2*rounds || s[0].GPU != 1 || s[1].GPU != 3 || !s[0].Time.Equal(s[1].Time) {
		t.Errorf("%d rounds, %d samples: %+v", rounds, len(s), s[:2])
	}
	// Cancellation returns what was sampled, without error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s, err = Telemetry(ctx, p, TelemetryOptions{Interval: time.Second})
	if err != nil || len(s) != 8 {
		t.Errorf("cancelled: %d samples, %v", len(s), err)
	}
	if _, err := Telemetry(context.Background(), p, TelemetryOptions{Interval: time.Second, GPUs: []int{8}}); err == nil {
		t.Error("GPU 8 accepted")
	}
	if _, err := Telemetry(context.Background(), p, TelemetryOptions{}); err == nil {
		t.Error("zero interval accepted")
	}
	path := t.TempDir() + "/t.parquet"
	var b bytes.Buffer
	if err := WriteTelemetryParquet(&b, s); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := readParquetRows(t, path, SampleColumns(false)); n != 8 {
		t.Errorf("telemetry parquet rows %d", n)
	}
}

// Streaming: many rows become several row groups and all read back; Emit gets
// each round.
func TestSampleWriterRowGroups(t *testing.T) {
	path := t.TempDir() + "/s.parquet"
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	sw, err := NewSampleWriter(f, true)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2*rowGroupRows+17; i++ {
		if err := sw.Write(SampleRow{Cell: "c", Mode: ModeMPS, Group: "a+b", Repetition: 1, Phase: "measure",
			Sample: Sample{Time: time.Unix(int64(i), 0), GPU: i % 8, ThrottleReasons: -1}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if n := readParquetRows(t, path, SampleColumns(true)); n != 2*rowGroupRows+17 {
		t.Errorf("rows %d", n)
	}
	p := fakeProbe(t)
	var rounds [][]Sample
	out, err := Telemetry(context.Background(), p, TelemetryOptions{Interval: 5 * time.Millisecond, Duration: 12 * time.Millisecond,
		Emit: func(b []Sample) error { rounds = append(rounds, b); return nil }})
	if err != nil || len(out) != 0 || len(rounds) < 2 || len(rounds[0]) != 8 {
		t.Errorf("emit: %v, %d accumulated, %d rounds", err, len(out), len(rounds))
	}
}
