package calibrate

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

func sampleMatrix() *InterferenceMatrix {
	return &InterferenceMatrix{
		APIVersion: APIVersion, Kind: InterferenceKind,
		Metadata: MatrixMetadata{Name: "lab", Host: "node1", GPUModel: "H100-80GB-HBM3", GPUName: "NVIDIA H100 80GB HBM3",
			GPUUUID: "GPU-1", DriverVersion: "550.54.15", CUDAVersion: "12.4", Created: "2026-01-02T03:04:05Z",
			WarmupSeconds: 10, MeasureSeconds: 30, Repetitions: 3},
		Workloads: []WorkloadProfile{
			{Name: "gemm", Class: "compute", Fingerprint: Fingerprint{SMUtilPct: 99.5, MemUtilPct: 31.25, MemUsedMiB: 5120, PCIeRxMBps: 1.5, PowerW: 650.1, SMClockMHz: 1980, Samples: 90}},
			{Name: "stream", Class: "memory", Fingerprint: Fingerprint{SMUtilPct: 60, MemUtilPct: 95.5, Samples: 90}},
		},
		Modes: []ModeResult{{
			Mode:  ModeTimeslice,
			Alone: []AloneResult{{Workload: "gemm", Throughput: Stat{Mean: 812.25, Stddev: 3.1, Repetitions: 3}}, {Workload: "stream", Throughput: Stat{Mean: 0.1 + 0.2, Repetitions: 1}}},
			Groups: []GroupResult{{Members: []MemberResult{
				{Workload: "gemm", Stat: Stat{Mean: 0.51, Stddev: 0.012, Repetitions: 3}},
				{Workload: "stream", Stat: Stat{Mean: 1.0 / 3, Stddev: 1e-9, Repetitions: 3}},
			}}},
		}, {Mode: ModeMPS, Alone: []AloneResult{}, Groups: []GroupResult{}}},
	}
}

func roundTrip(t *testing.T, m *InterferenceMatrix) *InterferenceMatrix {
	t.Helper()
	var b bytes.Buffer
	if err := m.Write(&b); err != nil {
		t.Fatal(err)
	}
	got, err := ReadInterference("rt.yaml", &b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	return got
}

func TestInterferenceRoundTrip(t *testing.T) {
	m := sampleMatrix()
	if d := cmp.Diff(m, roundTrip(t, m)); d != "" {
		t.Fatalf("round trip (-want +got):\n%s", d)
	}
	if f, ok := m.Factor(ModeTimeslice, "stream", "gemm"); !ok || f != 1.0/3 {
		t.Errorf("Factor(stream,gemm) = %v %v", f, ok)
	}
	if _, ok := m.Factor(ModeMPS, "gemm", "stream"); ok {
		t.Error("Factor under an unmeasured mode")
	}
}

// Property: any valid matrix round-trips exactly (floats included).
func TestInterferenceRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		num := rapid.Float64Range(0, 1e6)
		names := rapid.SliceOfNDistinct(rapid.StringMatching(`[a-z][a-z0-9_-]{0,8}`), 1, 4, rapid.ID[string]).Draw(rt, "names")
		m := &InterferenceMatrix{APIVersion: APIVersion, Kind: InterferenceKind,
			Metadata:  MatrixMetadata{Name: rapid.StringMatching(`[ -~]{0,12}`).Draw(rt, "name"), WarmupSeconds: num.Draw(rt, "w"), MeasureSeconds: num.Draw(rt, "m"), Repetitions: rapid.IntRange(0, 9).Draw(rt, "r")},
			Workloads: []WorkloadProfile{}, Modes: []ModeResult{}}
		stat := func(l string) Stat {
			return Stat{Mean: num.Draw(rt, l+"m"), Stddev: num.Draw(rt, l+"s"), Repetitions: rapid.IntRange(1, 20).Draw(rt, l+"r")}
		}
		for _, n := range names {
			m.Workloads = append(m.Workloads, WorkloadProfile{Name: n, Class: rapid.StringMatching(`[ -~é€]{0,12}`).Draw(rt, "class"),
				Fingerprint: Fingerprint{SMUtilPct: num.Draw(rt, "sm"), PowerW: num.Draw(rt, "pw"), Samples: rapid.IntRange(0, 100).Draw(rt, "ns")}})
		}
		for _, mode := range []string{ModeTimeslice, ModeMPS, ModeMIG}[:rapid.IntRange(0, 3).Draw(rt, "modes")] {
			mr := ModeResult{Mode: mode, Alone: []AloneResult{}, Groups: []GroupResult{}}
			for _, n := range names {
				mr.Alone = append(mr.Alone, AloneResult{Workload: n, Throughput: stat("a")})
			}
			for i := range names {
				for j := i; j < len(names); j++ {
					mr.Groups = append(mr.Groups, GroupResult{Members: []MemberResult{
						{Workload: names[i], Stat: stat("g")}, {Workload: names[j], Stat: stat("h")}}})
				}
			}
			m.Modes = append(m.Modes, mr)
		}
		var b bytes.Buffer
		if err := m.Write(&b); err != nil {
			rt.Fatal(err)
		}
		got, err := ReadInterference("p.yaml", &b)
		if err != nil {
			rt.Fatalf("%v\n%s", err, b.String())
		}
		if d := cmp.Diff(m, got); d != "" {
			rt.Fatalf("(-want +got):\n%s", d)
		}
	})
}

func TestReadInterferenceErrors(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"", "empty document"},
		{"apiVersion: gpusim/v1\nkind: InterferenceMatrix\n", `x.yaml:1: apiVersion: must be "gpusim/v1alpha1"`},
		{"apiVersion: gpusim/v1alpha1\nkind: InterferenceMatrix\nbogus: 1\n", `x.yaml:3: bogus: unknown field "bogus"`},
		{"apiVersion: gpusim/v1alpha1\nkind: InterferenceMatrix\nmetadata: {name: x}\nworkloads:\n  - name: a\nmodes:\n  - mode: timeslice\n    alone:\n      - workload: b\n        throughput: {mean: 1, stddev: 0, repetitions: 1}\n",
			`x.yaml:9: modes[0].alone[0].workload: unknown workload "b"`},
		{"apiVersion: gpusim/v1alpha1\nkind: InterferenceMatrix\nworkloads:\n  - name: a\nmodes:\n  - mode: mps\n    groups:\n      - members:\n          - {workload: a, mean: .nan, stddev: 0, repetitions: 1}\n          - {workload: a, mean: -1, stddev: 0, repetitions: 0}\n",
			"modes[0].groups[0].members[0].mean: must be a finite number >= 0"},
		{"apiVersion: gpusim/v1alpha1\nkind: InterferenceMatrix\nworkloads:\n  - name: a\nmodes:\n  - mode: mps\n    groups:\n      - members:\n          - {workload: a, mean: 1, stddev: 0, repetitions: 1}\n",
			"a group has at least 2 members"},
		{"apiVersion: gpusim/v1alpha1\nkind: InterferenceMatrix\nmodes:\n  - mode: gang\n", `unknown mode "gang"`},
		{"- [", "x.yaml"},
	} {
		_, err := ReadInterference("x.yaml", strings.NewReader(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("doc %q:\n got %v\nwant %q", tc.doc, err, tc.want)
		}
	}
	m := sampleMatrix()
	m.Modes[0].Groups[0].Members[0].Mean = math.Inf(1)
	if err := m.Write(&bytes.Buffer{}); err == nil {
		t.Error("Write accepted an infinite speed factor")
	}
}

// FuzzReadInterference: the reader never panics, and whatever it accepts
// round-trips.
func FuzzReadInterference(f *testing.F) {
	var b bytes.Buffer
	if err := sampleMatrix().Write(&b); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Add([]byte("apiVersion: gpusim/v1alpha1\nkind: InterferenceMatrix\nmodes: [{mode: mig, groups: [{members: []}]}]\n"))
	f.Add([]byte("{a: *b}"))
	f.Add([]byte("apiVersion: gpusim/v1alpha1\nkind: InterferenceMatrix\nmetadata: {name: x, gpuModel: V100}\nworkloads: [{name: a}]\nmodes:\n- {mode: timeslice, groups: [{members: [{workload: a, mean: 0.5, repetitions: 1}, {workload: a, mean: 0.5, repetitions: 1}]}]}\n- {mode: timeslice, gpuModel: K80, alone: [], groups: []}\n"))
	f.Add([]byte("apiVersion: gpusim/v1alpha1\nkind: InterferenceMatrix\nmetadata: {name: x}\nmodes:\n- {mode: mps, gpuModel: p100}\n- {mode: mps, gpuModel: P100}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ReadInterference("fuzz.yaml", bytes.NewReader(data))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := m.Write(&out); err != nil {
			t.Fatalf("accepted matrix does not write: %v", err)
		}
		m2, err := ReadInterference("fuzz2.yaml", &out)
		if err != nil {
			t.Fatalf("re-read: %v\n%s", err, out.String())
		}
		if d := cmp.Diff(m, m2); d != "" {
			t.Fatalf("round trip (-first +second):\n%s", d)
		}
	})
}

func TestBuildMatrix(t *testing.T) {
	p, err := ParsePlan("p.yaml", []byte(`apiVersion: gpusim/v1alpha1
kind: CalibrationPlan
measure: 1s
groupSizes: [2, 3]
workloads:
  - {name: a, command: x}
  - {name: b, command: x}
`))
	if err != nil {
		t.Fatal(err)
	}
	ok := func(members []string, rep int, tp ...float64) CellResult {
		c := Cell{Mode: ModeTimeslice, Members: members, Repetition: rep}
		return CellResult{Cell: c, ID: c.ID(), Status: "ok", Throughput: tp}
	}
	cells := []CellResult{
		ok([]string{"a"}, 1, 100), ok([]string{"a"}, 2, 300), // mean 200
		ok([]string{"b"}, 1, 10),
		ok([]string{"a", "b"}, 1, 100, 5), ok([]string{"a", "b"}, 2, 50, 5),
		{Cell: Cell{Mode: ModeTimeslice, Members: []string{"b", "b"}, Repetition: 1}, ID: "x", Status: "failed"},
		ok([]string{"a", "a", "b"}, 1, 20, 40, 1),
	}
	m := BuildMatrix(p, cells, MatrixMetadata{Name: "t"})
	mr := m.Modes[0]
	want := []GroupResult{
		{Members: []MemberResult{{Workload: "a", Stat: Stat{Mean: 0.375, Stddev: math.Sqrt(0.03125), Repetitions: 2}}, {Workload: "b", Stat: Stat{Mean: 0.5, Repetitions: 2}}}},
		{Members: []MemberResult{{Workload: "a", Stat: Stat{Mean: 0.1, Repetitions: 1}}, {Workload: "a", Stat: Stat{Mean: 0.2, Repetitions: 1}}, {Workload: "b", Stat: Stat{Mean: 0.1, Repetitions: 1}}}},
	}
	if d := cmp.Diff(want, mr.Groups, cmp.Comparer(func(x, y float64) bool { return math.Abs(x-y) < 1e-12 })); d != "" {
		t.Errorf("groups (-want +got):\n%s", d)
	}
	if mr.Alone[0].Throughput.Mean != 200 || mr.Alone[0].Throughput.Repetitions != 2 {
		t.Errorf("alone %+v", mr.Alone)
	}
	names, grid := PairGrid(m, ModeTimeslice)
	if names[0] != "a" || grid[0][1] != 0.375 || grid[1][0] != 0.5 || !math.IsNaN(grid[1][1]) || !math.IsNaN(grid[0][0]) {
		t.Errorf("pair grid %v %v", names, grid)
	}
	var png bytes.Buffer
	if err := WriteHeatmap(&png, "t", names, grid); err != nil || !bytes.HasPrefix(png.Bytes(), []byte("\x89PNG")) {
		t.Errorf("heatmap: %v", err)
	}
}
