package calibrate

import (
	"math"
	"os"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// handMatrix: on V100 timeslice, a|b measured at 0.6/0.7, a|a at 0.5/0.5, the
// triple a,b,c at 0.3/0.4/0.2; b|c measured at 0.8/0.9 on A100 mps (gpuModel on
// the mode entry overrides metadata's).
func handMatrix() *InterferenceMatrix {
	ms := func(w string, f float64) MemberResult {
		return MemberResult{Workload: w, Stat: Stat{Mean: f, Repetitions: 1}}
	}
	return &InterferenceMatrix{
		APIVersion: APIVersion, Kind: InterferenceKind,
		Metadata:  MatrixMetadata{Name: "hand", GPUModel: "V100"},
		Workloads: []WorkloadProfile{{Name: "a"}, {Name: "b"}, {Name: "c"}},
		Modes: []ModeResult{
			{Mode: ModeTimeslice, Groups: []GroupResult{
				{Members: []MemberResult{ms("a", 0.6), ms("b", 0.7)}},
				{Members: []MemberResult{ms("a", 0.5), ms("a", 0.5)}},
				{Members: []MemberResult{ms("b", 0.4), ms("a", 0.3), ms("c", 0.2)}},
			}},
			{Mode: ModeMPS, GPUModel: "A100", Groups: []GroupResult{
				{Members: []MemberResult{ms("c", 0.9), ms("b", 0.8)}},
			}},
		},
	}
}

func mustTable(t *testing.T, fb FallbackModel, ms ...*InterferenceMatrix) *Table {
	t.Helper()
	tb, err := NewTable(fb, ms...)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func ids(t *testing.T, tb *Table, names ...string) []int32 {
	t.Helper()
	out := make([]int32, len(names))
	for i, n := range names {
		id, ok := tb.WorkloadID(n)
		if !ok {
			id = -1
		}
		out[i] = id
	}
	return out
}

func TestTableMeasured(t *testing.T) {
	tb := mustTable(t, FallbackModel{}, roundTrip(t, handMatrix()))
	cases := []struct {
		model, mode string
		ws          []string
		want        []float64
	}{
		{"V100", ModeTimeslice, []string{"a"}, []float64{1}},
		{"V100", ModeTimeslice, []string{"a", "b"}, []float64{0.6, 0.7}},
		{"v100", ModeTimeslice, []string{"b", "a"}, []float64{0.7, 0.6}},
		{"Tesla-V100-SXM2-16GB", ModeTimeslice, []string{"b", "a"}, []float64{0.7, 0.6}},
		{"V100-SXM2-16GB", ModeTimeslice, []string{"b", "a"}, []float64{0.7, 0.6}},
		{"V100", ModeTimeslice, []string{"a", "a"}, []float64{0.5, 0.5}},
		{"V100", ModeTimeslice, []string{"c", "a", "b"}, []float64{0.2, 0.3, 0.4}},
		{"a100-sxm4-80gb", ModeMPS, []string{"b", "c"}, []float64{0.8, 0.9}},
	}
	for _, c := range cases {
		out := make([]float64, len(c.ws))
		if !tb.Factors(c.model, c.mode, ids(t, tb, c.ws...), nil, out) {
			if c.model != "Tesla-V100-SXM2-16GB" {
				t.Errorf("%s %s %v: not measured", c.model, c.mode, c.ws)
			}
			continue
		}
		if c.model == "Tesla-V100-SXM2-16GB" {
			t.Errorf("Tesla-V100-SXM2-16GB must not match V100 (first token differs)")
		}
		for i := range out {
			if out[i] != c.want[i] {
				t.Errorf("%s %s %v: out = %v, want %v", c.model, c.mode, c.ws, out, c.want)
				break
			}
		}
	}
	if got := tb.Stats(); got.Timeslice.Measured != 5 || got.MPS.Measured != 1 || got.Timeslice.Fallback != 1 {
		t.Errorf("stats = %+v", got)
	}
}

func TestTableFallback(t *testing.T) {
	m := roundTrip(t, handMatrix())
	// Default 0 → mean of measured V100 timeslice pair factors: (0.6+0.7+0.5+0.5)/4 = 0.575.
	tb := mustTable(t, FallbackModel{}, m)
	out := make([]float64, 2)
	if tb.Factors("V100", ModeTimeslice, ids(t, tb, "b", "c"), nil, out) {
		t.Fatal("b|c on V100 timeslice is not measured")
	}
	if out[0] != 0.575 || out[1] != 0.575 {
		t.Errorf("default from the measured mean: %v, want 0.575", out)
	}
	// Unknown model: mean over all models, mode mps: (0.8+0.9)/2 = 0.85.
	tb.Factors("H100", ModeMPS, ids(t, tb, "a", "b"), nil, out)
	f8, f9 := 0.8, 0.9 // float64 arithmetic, as the table does it
	if want := (f8 + f9) / 2; out[0] != want || out[1] != want {
		t.Errorf("unknown model mps default: %v, want 0.85", out)
	}
	// No mig measurements at all → 0.5.
	tb.Factors("V100", ModeMIG, ids(t, tb, "a", "b"), nil, out)
	if out[0] != 0.5 {
		t.Errorf("mig default: %v, want 0.5", out)
	}

	// Utilisation model with a 10 % switch overhead on timeslice fallbacks only.
	tb = mustTable(t, FallbackModel{Default: 0.4, UseUtilisation: true, SwitchOverhead: 0.1}, m)
	// Σu = 0.3+0.5 = 0.8 ≤ 1 → 1, ×0.9 = 0.9.
	tb.Factors("V100", ModeTimeslice, ids(t, tb, "b", "c"), []float64{0.3, 0.5}, out)
	if out[0] != 0.9 || out[1] != 0.9 {
		t.Errorf("util fit: %v, want 0.9 0.9", out)
	}
	// Σu = 0.75+0.5 = 1.25 → 0.8 (mps: no switch overhead).
	tb.Factors("V100", ModeMPS, ids(t, tb, "b", "c"), []float64{0.75, 0.5}, out)
	if out[0] != 0.8 || out[1] != 0.8 {
		t.Errorf("util over: %v, want 0.8 0.8", out)
	}
	// One utilisation unknown → Default 0.4 (×0.9 in timeslice).
	tb.Factors("V100", ModeTimeslice, ids(t, tb, "b", "c"), []float64{0.75, -1}, out)
	d, oh := 0.4, 0.1
	if want := d * (1 - oh); out[0] != want || out[1] != want {
		t.Errorf("default: %v, want 0.36", out)
	}
	// Measured pairs stay exact even with an overhead configured.
	if !tb.Factors("V100", ModeTimeslice, ids(t, tb, "a", "b"), []float64{0.9, 0.9}, out) || out[0] != 0.6 || out[1] != 0.7 {
		t.Errorf("measured with overhead: %v", out)
	}
	// Unknown workload names fall back too.
	tb.Factors("V100", ModeMPS, []int32{-1, 0}, nil, out)
	if out[0] != 0.4 || out[1] != 0.4 {
		t.Errorf("unknown workload: %v", out)
	}
}

func TestTableComposition(t *testing.T) {
	tb := mustTable(t, FallbackModel{Default: 0.5}, roundTrip(t, handMatrix()))
	out := make([]float64, 3)
	// a,a,b on V100 timeslice: pairs a|a = 0.5, a|b = 0.6 (a), 0.7 (b), all measured.
	// a: 1/(1 + (1/0.5-1) + (1/0.6-1)) = 1/(1+1+2/3) = 3/8.
	// b: 1/(1 + 2·(1/0.7-1)) = 1/(1+6/7) = 7/13.
	if tb.Factors("V100", ModeTimeslice, ids(t, tb, "a", "b", "a"), nil, out) {
		t.Error("a,a,b is composed, not measured")
	}
	want := []float64{1 / (1 + (1/0.5 - 1) + (1/0.6 - 1)), 1 / (1 + 2*(1/0.7-1)), 1 / (1 + (1/0.5 - 1) + (1/0.6 - 1))}
	for i := range want {
		if math.Abs(out[i]-want[i]) > 1e-15 {
			t.Errorf("composed %v, want %v", out, want)
		}
	}
	if math.Abs(out[0]-3.0/8) > 1e-12 || math.Abs(out[1]-7.0/13) > 1e-12 {
		t.Errorf("composed %v, want 3/8, 7/13", out)
	}
	if s := tb.Stats(); s.Timeslice.Composed != 1 {
		t.Errorf("stats %+v", s)
	}
	// Pure time-slicing pairs at 0.5 (the default) compose to 1/3.
	tb.Factors("H100", ModeTimeslice, ids(t, tb, "a", "b", "c"), nil, out)
	for _, f := range out {
		if math.Abs(f-1.0/3) > 1e-15 {
			t.Errorf("three-way default: %v, want 1/3", out)
		}
	}
}

func TestTableErrors(t *testing.T) {
	m := handMatrix()
	if _, err := NewTable(FallbackModel{SwitchOverhead: 1}, m); err == nil {
		t.Error("switch overhead 1 accepted")
	}
	if _, err := NewTable(FallbackModel{Default: math.NaN()}, m); err == nil {
		t.Error("NaN default accepted")
	}
	if _, err := NewTable(FallbackModel{}, m, m); err == nil || !strings.Contains(err.Error(), "measured twice") {
		t.Errorf("same matrix twice: %v", err)
	}
	bad := handMatrix()
	bad.Modes[0].Groups[0].Members[0].Mean = -1
	if _, err := NewTable(FallbackModel{}, bad); err == nil || !strings.Contains(err.Error(), "modes[0].groups[0].members[0].mean") {
		t.Errorf("negative factor: %v", err)
	}
}

// TestTableOrderIndependent (rapid): any permutation of a group gives each
// member the same factor, bit for bit.
func TestTableOrderIndependent(t *testing.T) {
	tb := mustTable(t, FallbackModel{UseUtilisation: true, SwitchOverhead: 0.05}, handMatrix())
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(t, "n")
		ws := make([]int32, n)
		solo := make([]float64, n)
		for i := range ws {
			ws[i] = rapid.Int32Range(-1, 2).Draw(t, "w")
			solo[i] = []float64{-1, 0.2, 0.5, 0.9}[rapid.IntRange(0, 3).Draw(t, "u")]
		}
		mode := rapid.SampledFrom([]string{ModeTimeslice, ModeMPS, ModeMIG}).Draw(t, "mode")
		model := rapid.SampledFrom([]string{"V100", "A100", "H100"}).Draw(t, "model")
		out := make([]float64, n)
		m1 := tb.Factors(model, mode, ws, solo, out)
		perm := rapid.Permutation(seq(n)).Draw(t, "perm")
		ws2, solo2, out2 := make([]int32, n), make([]float64, n), make([]float64, n)
		for i, p := range perm {
			ws2[i], solo2[i] = ws[p], solo[p]
		}
		m2 := tb.Factors(model, mode, ws2, solo2, out2)
		if m1 != m2 {
			t.Fatalf("measured %v vs %v", m1, m2)
		}
		for i, p := range perm {
			if math.Float64bits(out2[i]) != math.Float64bits(out[p]) {
				t.Fatalf("member %d: %v vs %v (perm %v)", p, out[p], out2[i], perm)
			}
			if !(out[p] >= 0 && out[p] <= 1) {
				t.Fatalf("factor %v out of [0,1]", out[p])
			}
		}
	})
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func TestFactorsAllocFree(t *testing.T) {
	tb := mustTable(t, FallbackModel{UseUtilisation: true}, handMatrix())
	ws, solo, out := []int32{0, 1, 2}, []float64{0.5, 0.6, -1}, make([]float64, 3)
	if a := testing.AllocsPerRun(100, func() {
		tb.Factors("V100", ModeTimeslice, ws, solo, out)
		tb.Factors("V100", ModeTimeslice, ws[:2], solo[:2], out[:2])
		tb.Factors("A100-SXM4-80GB", ModeMPS, ws[1:], solo[1:], out[1:])
		tb.Factors("H100", ModeMPS, ws, solo, out)
	}); a != 0 {
		t.Errorf("Factors allocates %v times per run", a)
	}
}

// BenchmarkFactors: one lookup per op for a measured pair, a measured triple,
// a composed triple (measured pairs) and a fallback pair (utilisation model),
// on the embedded Gavel matrix (976 pairs) plus the hand matrix.
func BenchmarkFactors(b *testing.B) {
	f, err := os.Open(gavelFile)
	if err != nil {
		b.Fatal(err)
	}
	g, _, err := ImportGavel(gavelFile, f, ImportOptions{})
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	tb, err := NewTable(FallbackModel{UseUtilisation: true, SwitchOverhead: 0.05}, handMatrix(), g)
	if err != nil {
		b.Fatal(err)
	}
	id := func(n string) int32 { x, _ := tb.WorkloadID(n); return x }
	r18, r50 := id("ResNet-18_bs16"), id("ResNet-50_bs32")
	a, bb, c := id("a"), id("b"), id("c")
	for _, bc := range []struct {
		name, model string
		ws          []int32
	}{
		{"pair-measured", "V100", []int32{r50, r18}},
		{"triple-measured", "V100", []int32{c, a, bb}},
		{"triple-composed", "V100", []int32{r50, r18, r18}},
		{"pair-fallback", "H100-80GB", []int32{r50, r18}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			solo, out := []float64{0.5, 0.6, 0.7}[:len(bc.ws)], make([]float64, len(bc.ws))
			b.ReportAllocs()
			for b.Loop() {
				tb.Factors(bc.model, ModeTimeslice, bc.ws, solo, out)
			}
		})
	}
}

// TestMultiModelFormat: one file holds several GPU models; a mode may repeat
// for different models but not for the same one (case-insensitive), and the
// error names file:line:field.
func TestMultiModelFormat(t *testing.T) {
	m := handMatrix()
	m.Modes = append(m.Modes, ModeResult{Mode: ModeTimeslice, GPUModel: "K80"})
	got := roundTrip(t, m)
	if got.ModeGPUModel(0) != "V100" || got.ModeGPUModel(1) != "A100" || got.ModeGPUModel(2) != "K80" {
		t.Errorf("models %q %q %q", got.ModeGPUModel(0), got.ModeGPUModel(1), got.ModeGPUModel(2))
	}
	doc := "apiVersion: gpusim/v1alpha1\nkind: InterferenceMatrix\nmetadata: {name: x, gpuModel: v100}\nmodes:\n- mode: mps\n- mode: mps\n  gpuModel: V100\n"
	_, err := ReadInterference("m.yaml", strings.NewReader(doc))
	if err == nil || !strings.Contains(err.Error(), `m.yaml:6: modes[1].mode: duplicate mode "mps" for GPU model "V100"`) {
		t.Errorf("err = %v", err)
	}
}

// TestTableWildcardModel: an entry with no GPU model applies to every model the
// table does not name; a named model still wins.
func TestTableWildcardModel(t *testing.T) {
	wild := handMatrix()
	wild.Metadata.GPUModel = ""
	wild.Modes = wild.Modes[:1] // timeslice, no model
	v := handMatrix()
	v.Metadata.Name = "v"
	v.Workloads = []WorkloadProfile{{Name: "a"}, {Name: "b"}}
	v.Modes = []ModeResult{{Mode: ModeTimeslice, Groups: []GroupResult{{Members: []MemberResult{
		{Workload: "a", Stat: Stat{Mean: 0.9, Repetitions: 1}}, {Workload: "b", Stat: Stat{Mean: 0.8, Repetitions: 1}}}}}}}
	tb := mustTable(t, FallbackModel{}, wild, v)
	out := make([]float64, 2)
	ab := ids(t, tb, "a", "b")
	if !tb.Factors("H100-80GB", ModeTimeslice, ab, nil, out) || out[0] != 0.6 || out[1] != 0.7 {
		t.Errorf("wildcard: %v", out)
	}
	if !tb.Factors("v100", ModeTimeslice, ab, nil, out) || out[0] != 0.9 || out[1] != 0.8 {
		t.Errorf("named model: %v", out)
	}
	if got := tb.GPUModels(); len(got) != 2 || got[0] != "" || got[1] != "V100" {
		t.Errorf("models %q", got)
	}
}

// TestTableRoundTripSameAnswers: a Table built from a matrix and one built from
// its written-and-read copy answer every pair and triple identically.
func TestTableRoundTripSameAnswers(t *testing.T) {
	for _, m := range []*InterferenceMatrix{handMatrix(), sampleMatrix()} {
		fb := FallbackModel{UseUtilisation: true, SwitchOverhead: 0.1}
		t1, t2 := mustTable(t, fb, m), mustTable(t, fb, roundTrip(t, m))
		n := int32(len(m.Workloads))
		for _, model := range []string{"V100", m.Metadata.GPUModel, "other"} {
			for _, mode := range []string{ModeTimeslice, ModeMPS, ModeMIG} {
				for a := int32(-1); a < n; a++ {
					for b := a; b < n; b++ {
						for c := int32(-2); c < n; c++ {
							ws := []int32{a, b, c}
							if c == -2 {
								ws = ws[:2]
							}
							solo := []float64{0.5, -1, 0.7}[:len(ws)]
							o1, o2 := make([]float64, len(ws)), make([]float64, len(ws))
							m1, m2 := t1.Factors(model, mode, ws, solo, o1), t2.Factors(model, mode, ws, solo, o2)
							if m1 != m2 || !slicesEqual(o1, o2) {
								t.Fatalf("%s %s %v: %v %v vs %v %v", model, mode, ws, m1, o1, m2, o2)
							}
						}
					}
				}
			}
		}
	}
}

func slicesEqual(a, b []float64) bool {
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return len(a) == len(b)
}

// TestTableComposeAboveOne: pair factors above 1 add no slowdown when composing
// (four co-runners at 1.5 would otherwise give 1/(1-4/3) < 0).
func TestTableComposeAboveOne(t *testing.T) {
	m := handMatrix()
	m.Modes[0].Groups[1].Members[0].Mean, m.Modes[0].Groups[1].Members[1].Mean = 1.5, 1.5 // a|a
	tb := mustTable(t, FallbackModel{}, m)
	out := make([]float64, 5)
	a, _ := tb.WorkloadID("a")
	tb.Factors("V100", ModeTimeslice, []int32{a, a, a, a, a}, nil, out)
	for _, f := range out {
		if f != 1 {
			t.Fatalf("a×5 with a|a = 1.5: %v, want 1", out)
		}
	}
	// Solo utilisation above 1 counts as 1: 1 + 0.5 → 1/1.5.
	tb = mustTable(t, FallbackModel{UseUtilisation: true}, m)
	tb.Factors("V100", ModeMPS, []int32{a, -1}, []float64{7, 0.5}, out[:2])
	if want := 1 / 1.5; out[0] != want || out[1] != want {
		t.Errorf("util 7: %v", out[:2])
	}
}
