package calibrate

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParsePlanDefaultsAndCells(t *testing.T) {
	p, err := ParsePlan("p.yaml", []byte(`apiVersion: gpusim/v1alpha1
kind: CalibrationPlan
measure: 2s
groupSizes: [3, 2]
repetitions: 1
modes: [mps, timeslice]
workloads:
  - {name: a, command: "echo hi"}
  - {name: b, command: [prog, --x], progress: {regex: 'tput=(\d+)'}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if p.Timeout != 2*time.Second*2+2*time.Minute || p.StopGrace != 5*time.Second || p.SampleInterval != time.Second || p.Name != "calibration" {
		t.Errorf("defaults: %+v", p)
	}
	if d := cmp.Diff([]string{"/bin/sh", "-c", "echo hi"}, []string(p.Workloads[0].Command)); d != "" {
		t.Error(d)
	}
	if p.cellCount() != 18 {
		t.Errorf("cellCount %v, want 18", p.cellCount())
	}
	var ids []string
	for _, c := range p.Cells() {
		ids = append(ids, c.ID())
	}
	want := []string{
		"mps/a/r1", "mps/b/r1", "mps/a+a/r1", "mps/a+b/r1", "mps/b+b/r1",
		"mps/a+a+a/r1", "mps/a+a+b/r1", "mps/a+b+b/r1", "mps/b+b+b/r1",
	}
	if d := cmp.Diff(want, ids[:9]); d != "" || len(ids) != 18 || ids[9] != "timeslice/a/r1" {
		t.Errorf("cells %v\n%s", ids, d)
	}
	// Adding repetitions keeps the hash (a run can be extended), changing the
	// measurement does not.
	h := p.Hash()
	p.Repetitions = 5
	if p.Hash() != h {
		t.Error("repetitions changed the plan hash")
	}
	p.Workloads[0].Command = Command{"other"}
	if p.Hash() == h {
		t.Error("command change kept the plan hash")
	}
}

func TestParsePlanErrors(t *testing.T) {
	doc := `apiVersion: gpusim/v1alpha1
kind: CalibrationPlan
modes: [timeslice, gang]
groupSizes: [2, 4]
warmup: 5s
measure: 10s
timeout: 10s
workloads:
  - name: gemm
    command: python gemm.py
  - name: gemm
    command: []
    progress:
      regex: 'no group'
  - name: "bad name"
    command: x
    progress: {regex: '(['}
`
	_, err := ParsePlan("lab.yaml", []byte(doc))
	if err == nil {
		t.Fatal("want errors")
	}
	for _, want := range []string{
		`lab.yaml:3: modes[1]: unknown mode "gang"`,
		`lab.yaml:4: groupSizes[1]: must be 1 (alone), 2 (pairs) or 3 (triples), got 4`,
		`lab.yaml:7: timeout: must be longer than warmup+measure (15s), got 10s`,
		`lab.yaml:11: workloads[1].name: duplicate workload "gemm"`,
		`lab.yaml:12: workloads[1].command: required`,
		`lab.yaml:14: workloads[1].progress.regex: needs a capture group`,
		`lab.yaml:15: workloads[2].name: must match`,
		`lab.yaml:17: workloads[2].progress.regex: error parsing regexp`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
	for _, tc := range []struct{ doc, want string }{
		{"", "empty plan"},
		{"apiVersion: gpusim/v1alpha1\nkind: CalibrationPlan\nmeasure: 1s\nworkloads: [{name: a, command: x}]\nbogus: 1\n", `p.yaml:5: bogus: unknown field "bogus"`},
		{"apiVersion: gpusim/v1alpha1\nkind: CalibrationPlan\nmeasure: soon\n", "p.yaml"},
		{"apiVersion: gpusim/v1alpha1\nkind: CalibrationPlan\nmeasure: 1s\nworkloads: [{name: a, command: {x: 1}}]\n", "command must be a string or a list"},
		{"kind: Other\n", `kind: must be "CalibrationPlan"`},
		{"apiVersion: gpusim/v1alpha1\nkind: CalibrationPlan\nmeasure: 1s\nrepetitions: 1000000\nworkloads: [{name: a, command: x}]\n", "more than 100000"},
	} {
		_, err := ParsePlan("p.yaml", []byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.doc, err, tc.want)
		}
	}
}

func TestParseProgress(t *testing.T) {
	for _, tc := range []struct {
		line string
		v    float64
		ok   bool
	}{
		{"gpusim-progress items=12", 12, true},
		{"  gpusim-progress items=3.5 p50_ms=1.2 p99_ms=4", 3.5, true},
		{"gpusim-progress p50_ms=1 items=7", 7, true},
		{"gpusim-progress items=-1", 0, false},
		{"gpusim-progress items=NaN", 0, false},
		{"gpusim-progress", 0, false},
		{"loss=0.3 items=5", 0, false},
	} {
		v, ok := parseProgress(tc.line, nil)
		if v != tc.v || ok != tc.ok {
			t.Errorf("%q: got %v %v", tc.line, v, ok)
		}
	}
	re := regexp.MustCompile(`rate=(\S+)`)
	for line, want := range map[string]bool{"rate=12.5": true, "rate=inf": false, "rate=-3": false, "rate=x": false, "nope": false} {
		if _, ok := parseProgress(line, re); ok != want {
			t.Errorf("regex %q: ok=%v", line, ok)
		}
	}
}

// The shipped example plan must stay valid.
func TestExamplePlanParses(t *testing.T) {
	p, err := LoadPlan(filepath.Join("workloads", "plan.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Workloads) != 5 {
		t.Errorf("example plan has %d workloads, want the 5 reference workloads", len(p.Workloads))
	}
}

// FuzzParsePlan: the plan parser never panics, and a parsed plan's cells are
// well formed.
func FuzzParsePlan(f *testing.F) {
	f.Add([]byte("apiVersion: gpusim/v1alpha1\nkind: CalibrationPlan\nmeasure: 1s\nworkloads: [{name: a, command: x}]\n"))
	f.Add([]byte("apiVersion: gpusim/v1alpha1\nkind: CalibrationPlan\nmeasure: 1s\ngroupSizes: [3]\nmodes: [mig, mps]\nworkloads: [{name: a, command: [x, y], progress: {regex: 'a(b)'}}, {name: b, command: z}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePlan("fuzz.yaml", data)
		if err != nil {
			return
		}
		for _, c := range p.Cells() {
			if len(c.Members) < 1 || len(c.Members) > 3 || p.workload(c.Members[0]) == nil {
				t.Fatalf("bad cell %+v", c)
			}
		}
		_ = p.Hash()
	})
}
