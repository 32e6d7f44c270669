package calibrate

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const gavelFile = "testdata/gavel/simulation_throughputs.json"

func importGavelFile(t *testing.T, o ImportOptions) (*InterferenceMatrix, ImportReport) {
	t.Helper()
	f, err := os.Open(gavelFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, rep, err := ImportGavel(gavelFile, f, o)
	if err != nil {
		t.Fatal(err)
	}
	return m, rep
}

// TestGavelPairsReproduce is the acceptance check "Gavel's measured pairs
// reproduce": 20 pairs picked deterministically (every k-th of the sorted list
// of feasible single-GPU pairs, over k80/p100/v100) from the embedded JSON, read
// here independently with encoding/json; Table.Factors must return exactly
// pair value / null value for each member, in either member order.
func TestGavelPairsReproduce(t *testing.T) {
	raw, err := os.ReadFile(gavelFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]map[string]map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	type pair struct {
		gpu, a, b string
		fa, fb    float64
	}
	key := regexp.MustCompile(`^\('(.+)', 1\)$`)
	var pairs []pair
	for _, gpu := range []string{"k80", "p100", "v100"} {
		for ka, entries := range doc[gpu] {
			ma := key.FindStringSubmatch(ka)
			if ma == nil {
				continue
			}
			var nullA float64
			if err := json.Unmarshal(entries["null"], &nullA); err != nil {
				t.Fatal(err)
			}
			for kb, v := range entries {
				mb := key.FindStringSubmatch(kb)
				if mb == nil || ma[1] > mb[1] {
					continue
				}
				var nullB float64
				if err := json.Unmarshal(doc[gpu][kb]["null"], &nullB); err != nil {
					t.Fatal(err)
				}
				var tp [2]float64
				if err := json.Unmarshal(v, &tp); err != nil {
					t.Fatal(err)
				}
				if tp[0] == 0 || tp[1] == 0 {
					continue
				}
				pairs = append(pairs, pair{gpu, ma[1], mb[1], tp[0] / nullA, tp[1] / nullB})
			}
		}
	}
	sort.Slice(pairs, func(i, j int) bool {
		x, y := pairs[i], pairs[j]
		return x.gpu+"\x00"+x.a+"\x00"+x.b < y.gpu+"\x00"+y.a+"\x00"+y.b
	})
	if len(pairs) < 20 {
		t.Fatalf("only %d feasible pairs", len(pairs))
	}
	m, _ := importGavelFile(t, ImportOptions{})
	tb := mustTable(t, FallbackModel{SwitchOverhead: 0.2}, roundTrip(t, m))
	step := len(pairs) / 20
	seen := 0
	for i := 0; i < 20; i++ {
		p := pairs[i*step]
		wa, oka := tb.WorkloadID(GavelWorkloadName(p.a))
		wb, okb := tb.WorkloadID(GavelWorkloadName(p.b))
		if !oka || !okb {
			t.Fatalf("%v: workloads not in the table", p)
		}
		out := make([]float64, 2)
		if !tb.Factors(strings.ToUpper(p.gpu), ModeTimeslice, []int32{wa, wb}, nil, out) {
			t.Errorf("%v: not measured", p)
		}
		if out[0] != p.fa || out[1] != p.fb {
			t.Errorf("%s %q|%q: factors %v, want exactly %v %v", p.gpu, p.a, p.b, out, p.fa, p.fb)
		}
		tb.Factors(p.gpu, ModeTimeslice, []int32{wb, wa}, nil, out)
		if out[1] != p.fa || out[0] != p.fb {
			t.Errorf("%s %q|%q reversed: factors %v", p.gpu, p.a, p.b, out)
		}
		if p.fa != 1 || p.fb != 1 {
			seen++
		}
	}
	if seen == 0 {
		t.Error("all 20 picked pairs have factor 1: the check would not catch a wrong lookup")
	}
	t.Logf("%d feasible pairs, every %d-th checked", len(pairs), step)
}

func TestGavelImportShape(t *testing.T) {
	m, rep := importGavelFile(t, ImportOptions{})
	if len(m.Modes) != 3 || m.ModeGPUModel(0) != "K80" || m.ModeGPUModel(1) != "P100" || m.ModeGPUModel(2) != "V100" {
		t.Fatalf("modes: %+v", len(m.Modes))
	}
	if rep.Workloads != 26 || rep.SkippedModels != 3 || rep.Pairs == 0 || rep.SkippedZero == 0 || rep.SkippedScale == 0 {
		t.Errorf("report %+v", rep)
	}
	if m.Workloads[0].Name != "A3C" || m.Workloads[len(m.Workloads)-1].Name != "Transformer_bs64" {
		t.Errorf("workloads %v … %v", m.Workloads[0].Name, m.Workloads[len(m.Workloads)-1].Name)
	}
	one, rep1 := importGavelFile(t, ImportOptions{GPUModel: "V100", Mode: ModeMPS})
	if len(one.Modes) != 1 || one.Modes[0].GPUModel != "V100" || one.Modes[0].Mode != ModeMPS || rep1.SkippedModels != 5 {
		t.Errorf("--gpu-model V100: %d modes, report %+v", len(one.Modes), rep1)
	}
	// Deterministic bytes.
	var b1, b2 bytes.Buffer
	if err := m.Write(&b1); err != nil {
		t.Fatal(err)
	}
	m2, _ := importGavelFile(t, ImportOptions{})
	if err := m2.Write(&b2); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b1.Bytes(), b2.Bytes()) {
		t.Error("two imports differ")
	}
	if d := cmp.Diff(m, roundTrip(t, m)); d != "" {
		t.Errorf("round trip: %s", d)
	}
}

func TestGavelImportErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"{\"v100\": {\n\"('A', 1)\": {\"null\": -1}}}", "g.json:2: v100.('A', 1).null: isolated throughput must be >= 0"},
		{"{\"v100\": {\n\"A\": {}}}", "g.json:2: v100.A: job key must look like"},
		{"{\"v100\": {\"('A', 1)\": {\"null\": 1,\n \"('B', 1)\": [1]}}}", "g.json:2: v100.('A', 1).('B', 1): pair value must be"},
		{"{\"v100\": {\"('A', 1)\": {\n\"('A', 1)\": [1, 1]}}}", "v100.('A', 1): no \"null\""},
		{"{\"v100\": [1]}", "g.json:1: v100: want an object"},
		{"{\"v100\": {\n\n\"('A', 1)\": {\"null\": 1,}}}", "g.json:3:"},
		{"{\"k80\": {}}", "no GPU type imported"},
		{"", "g.json:1:"},
	} {
		_, _, err := ImportGavel("g.json", strings.NewReader(c.in), ImportOptions{GPUModel: "V100"})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want %q", c.in, err, c.want)
		}
	}
}

// FuzzImportGavel: the importer never panics, and whatever it accepts writes
// and reads back as a valid matrix that NewTable accepts.
func FuzzImportGavel(f *testing.F) {
	f.Add([]byte(`{"v100": {"('A (batch size 2)', 1)": {"null": 2, "('A (batch size 2)', 1)": [1, 1], "('B', 1)": [0.5, 3]}, "('B', 1)": {"null": 4}, "('B', 2)": {"null": 4}}}`))
	f.Add([]byte(`{"k80": {"('A', 1)": {"null": 0, "('A', 1)": [0, 0]}}, "k80_unconsolidated": {}}`))
	f.Add([]byte(`{"v100": {"('a b', 1)": {"null": 1}, "('a_b', 1)": {"null": 1}}}`))
	f.Add([]byte(`{"v100": {"('A', 1)": {"null": 1e400}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, _, err := ImportGavel("f.json", bytes.NewReader(data), ImportOptions{})
		if err != nil {
			return
		}
		if _, err := NewTable(FallbackModel{}, roundTrip(t, m)); err != nil {
			t.Fatalf("NewTable: %v", err)
		}
	})
}
