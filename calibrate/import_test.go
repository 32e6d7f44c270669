package calibrate

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
)

const gavelFile = "testdata/gavel/simulation_throughputs.json"

// Gavel's measured pairs reproduce in the imported matrix: for 20 pairs of
// single-GPU job types on a V100 (every 17th of the sorted pairs, so all model
// families appear), each member's factor is exactly its pair throughput divided
// by its alone ("null") throughput.
func TestImportGavelPairs(t *testing.T) {
	b, err := os.ReadFile(gavelFile)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ImportGavel(gavelFile, bytes.NewReader(b), ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Metadata.GPUModel != "V100" || m.Modes[0].Mode != ModeTimeslice || len(m.Workloads) != 26 || len(m.Modes[0].Groups) != 26*27/2 {
		t.Fatalf("matrix: model %q mode %s, %d workloads, %d groups", m.Metadata.GPUModel, m.Modes[0].Mode, len(m.Workloads), len(m.Modes[0].Groups))
	}
	var raw map[string]map[string]map[string]json.RawMessage
	json.Unmarshal(b, &raw)
	v100 := raw["v100"]
	type pair struct{ a, b string }
	var pairs []pair
	for ka, row := range v100 {
		ma := gavelKeyRE.FindStringSubmatch(ka)
		if ma[2] != "1" {
			continue
		}
		for kb := range row {
			if mb := gavelKeyRE.FindStringSubmatch(kb); kb != "null" && mb[2] == "1" && ka < kb {
				pairs = append(pairs, pair{ka, kb})
			}
		}
	}
	sort.Slice(pairs, func(i, j int) bool { return pairs[i].a+pairs[i].b < pairs[j].a+pairs[j].b })
	checked := 0
	for i := 0; i < len(pairs) && checked < 20; i += 17 {
		p := pairs[i]
		var alA, alB float64
		var v []float64
		json.Unmarshal(v100[p.a]["null"], &alA)
		json.Unmarshal(v100[p.b]["null"], &alB)
		json.Unmarshal(v100[p.a][p.b], &v)
		na := workloadName(gavelKeyRE.FindStringSubmatch(p.a)[1])
		nb := workloadName(gavelKeyRE.FindStringSubmatch(p.b)[1])
		fa, ok1 := m.Factor(ModeTimeslice, na, nb)
		fb, ok2 := m.Factor(ModeTimeslice, nb, na)
		if !ok1 || !ok2 || fa != v[0]/alA || fb != v[1]/alB {
			t.Errorf("%s + %s: factors %v, %v; want %v, %v", na, nb, fa, fb, v[0]/alA, v[1]/alB)
		}
		checked++
	}
	if checked != 20 {
		t.Fatalf("checked %d pairs", checked)
	}
	// Round trip through the file format.
	var buf bytes.Buffer
	if err := m.Write(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := ReadInterference("gavel.yaml", &buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, m) {
		t.Error("imported matrix does not round-trip")
	}
	// Other GPU types and modes.
	k80, err := ImportGavel(gavelFile, bytes.NewReader(b), ImportOptions{GPUType: "k80", Mode: ModeMPS, GPUModel: "K80-lab"})
	if err != nil || k80.Metadata.GPUModel != "K80-lab" || k80.Modes[0].Mode != ModeMPS {
		t.Fatalf("k80: %v %+v", err, k80.Metadata)
	}
}

func TestImportErrors(t *testing.T) {
	for name, c := range map[string]struct {
		format, in, want string
		o                ImportOptions
	}{
		"not json":        {"gavel", "a,b\n", "not a Gavel throughput file", ImportOptions{}},
		"no type":         {"gavel", `{"k80": {}}`, `no GPU type "v100" (the file has k80)`, ImportOptions{}},
		"bad key":         {"gavel", `{"v100": {"ResNet": {"null": 1}}}`, `job key "ResNet" is not`, ImportOptions{}},
		"bad pair":        {"gavel", `{"v100": {"('A', 1)": {"null": 1, "('B', 1)": [1]}, "('B', 1)": {"null": 2}}}`, "want [this, other]", ImportOptions{}},
		"mig mode":        {"gavel", `{}`, "filed under timeslice or mps", ImportOptions{Mode: "mig"}},
		"unknown format":  {"foo", ``, `unknown import format "foo"`, ImportOptions{}},
		"lucid header":    {"lucid", "a,b\n", "x.csv:1: not Lucid's colocate_info.csv", ImportOptions{}},
		"lucid bad amp":   {"lucid", "," + strings.Join(lucidColumns, ",") + "\n0,M,D,1,32,2,0.9,N,D,1,32,0,1,50,20,100\n", "x.csv:2: column amp1: want 0 or 1", ImportOptions{}},
		"lucid bad speed": {"lucid", "," + strings.Join(lucidColumns, ",") + "\n0,M,D,1,32,0,x,N,D,1,32,0,1,50,20,100\n", "x.csv:2: column speed1", ImportOptions{}},
		"lucid empty":     {"lucid", "," + strings.Join(lucidColumns, ",") + "\n", "no measured pairs", ImportOptions{}},
	} {
		_, err := ImportInterference(c.format, "x.csv", strings.NewReader(c.in), c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", name, err, c.want)
		}
	}
}

// Lucid's colocate_info.csv may not be copied here (non-commercial licence):
// the test reads gpusim's shared reference data and skips without it.
func TestImportLucid(t *testing.T) {
	// The repository's sibling shared/ (a checkout at X/main has X/shared).
	var f *os.File
	var err error
	path := ""
	for _, p := range []string{"../../shared/interference/lucid/colocate_info.csv", "../../../shared/interference/lucid/colocate_info.csv"} {
		if f, err = os.Open(p); err == nil {
			path = p
			break
		}
	}
	if f == nil {
		t.Skip("Lucid's colocate_info.csv not found in ../shared/interference/lucid (non-commercial data, not in the repository)")
	}
	defer f.Close()
	m, err := ImportLucid(path, f, ImportOptions{GPUModel: "A100-SXM-80GB"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Modes[0].Groups) != 1388 || m.Metadata.GPUModel != "A100-SXM-80GB" {
		t.Fatalf("%d groups, model %q", len(m.Modes[0].Groups), m.Metadata.GPUModel)
	}
	// Row 0: MobileNetV3/ImageNet bs32 (speed 0.983) with ResNet18/CIFAR-10 bs32 (1.034).
	f1, ok1 := m.Factor(ModeTimeslice, "MobileNetV3-ImageNet-g1-bs32", "ResNet18-CIFAR-10-g1-bs32")
	f2, ok2 := m.Factor(ModeTimeslice, "ResNet18-CIFAR-10-g1-bs32", "MobileNetV3-ImageNet-g1-bs32")
	if !ok1 || !ok2 || f1 != 0.983 || f2 != 1.034 {
		t.Errorf("row 0 factors %v %v", f1, f2)
	}
}

func TestWorkloadName(t *testing.T) {
	for in, want := range map[string]string{
		"ResNet-18 (batch size 16)":        "ResNet-18-bs16",
		"Transformer (batch size 128)":     "Transformer-bs128",
		"LM (batch size 80)":               "LM-bs80",
		"Recommendation (batch size 8192)": "Recommendation-bs8192",
		"CycleGAN":                         "CycleGAN",
		"MobileNetV3-ImageNet-g1-bs32-amp": "MobileNetV3-ImageNet-g1-bs32-amp",
		" weird / name (x) ":               "weird-name-x",
	} {
		if got := workloadName(in); got != want {
			t.Errorf("workloadName(%q) = %q, want %q", in, got, want)
		}
	}
}
