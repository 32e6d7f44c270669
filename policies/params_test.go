package policies

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/sim"
)

type mergeParams struct {
	Placement string         `yaml:"placement"`
	Window    Dur            `yaml:"window"`
	Queues    []mergeQueue   `yaml:"queues"`
	Extra     map[string]int `yaml:"extra"`
}

type mergeQueue struct {
	Name   string `yaml:"name"`
	Weight int    `yaml:"weight"`
}

// YAML merge keys (<<: *anchor) are accepted and their keys checked like any other.
func TestParamsMergeKeys(t *testing.T) {
	doc := func(s string) *yaml.Node {
		var d yaml.Node
		if err := yaml.Unmarshal([]byte(s), &d); err != nil {
			t.Fatal(err)
		}
		m := d.Content[0]
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == "p" {
				return m.Content[i+1]
			}
		}
		t.Fatal("no p")
		return nil
	}
	var p mergeParams
	n := doc("base: &b {placement: spread, window: 1h}\nq: &q {weight: 3}\np:\n  <<: *b\n  queues: [{<<: *q, name: a}]\n")
	if err := DecodeParams(n, &p); err != nil {
		t.Fatal(err)
	}
	if p.Placement != "spread" || p.Window != Dur(3600e6) || len(p.Queues) != 1 || p.Queues[0].Weight != 3 || p.Queues[0].Name != "a" {
		t.Errorf("decoded %+v", p)
	}
	if errs := CheckFields(n, &p); len(errs) > 0 {
		t.Errorf("CheckFields: %v", errs)
	}
	// a misspelt key inside a merged mapping is still an error, at the top level
	// (DecodeParams) and nested (CheckFields)
	bad := "base: &b {placment: spread}\np:\n  <<: *b\n"
	if err := DecodeParams(doc(bad), &mergeParams{}); err == nil || !strings.Contains(err.Error(), `unknown parameter "placment"`) {
		t.Errorf("%q: err = %v", bad, err)
	}
	bad = "q: &q {wieght: 3}\np:\n  queues: [{<<: *q, name: a}]\n"
	if errs := CheckFields(doc(bad), &mergeParams{}); len(errs) != 1 || !strings.Contains(errs[0].Error(), "queues[0].wieght: unknown field") {
		t.Errorf("%q: errs = %v", bad, errs)
	}
}

func TestParseQuantity(t *testing.T) {
	for in, want := range map[string]float64{"16": 16, "500m": 0.5, "64Gi": 64 << 30, "1.5": 1.5, "2e3": 2000, " 4k ": 4000} {
		if got, err := ParseQuantity(in); err != nil || got != want {
			t.Errorf("ParseQuantity(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "abc", "NaN", "1Zi"} {
		if _, err := ParseQuantity(bad); err == nil {
			t.Errorf("ParseQuantity(%q): no error", bad)
		}
	}
}

// A mapping that merges itself (found by FuzzManifests: `&a {<<: *a}` overflowed
// the stack in CheckFields) is reported, not walked forever; yaml.v3 rejects it
// when decoding.
func TestSelfMergeTerminates(t *testing.T) {
	for _, in := range []string{"&a {<<: *a}", "p: &a {window: 1h, <<: *a}", "p: &a {queues: [{<<: *a}]}"} {
		var d yaml.Node
		if err := yaml.Unmarshal([]byte(in), &d); err != nil {
			continue
		}
		_ = CheckFields(&d, &mergeParams{})
		if err := DecodeParams(d.Content[0], &mergeParams{}); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// yaml.v3 type errors are told in the user's terms, with the field path and
// line of each, every one of them.
func TestDecodeParamsEveryProblem(t *testing.T) {
	var d yaml.Node
	if err := yaml.Unmarshal([]byte("placement: [a]\nwindow: soon\nqueues:\n  - {name: a, weight: x, wieght: 2}\nbogus: 1\n"), &d); err != nil {
		t.Fatal(err)
	}
	err := DecodeParams(d.Content[0], &mergeParams{})
	want := []string{
		`line 5: bogus: unknown parameter "bogus" (known: placement, window, queues, extra)`,
		`line 4: queues[0].wieght: unknown field`,
		`line 1: placement: want a string, got a list`,
		`line 2: window: invalid duration "soon" (want e.g. 90s, 24h, 30d or a number of seconds)`,
		`line 4: queues[0].weight: want a whole number, got "x"`,
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("got\n%v\nwant\n%s", err, strings.Join(want, "\n"))
	}
}

func TestParseDurDays(t *testing.T) {
	for in, want := range map[string]sim.Duration{
		"30d":    sim.Seconds(30 * 86400),
		"1.5d":   sim.Seconds(1.5 * 86400),
		"2d12h":  sim.Seconds(2.5 * 86400),
		"0d":     0,
		"90s":    sim.Seconds(90),
		"3600":   sim.Seconds(3600),
		"1h30m":  sim.Seconds(5400),
		"1d0.5h": sim.Seconds(86400 + 1800),
	} {
		got, err := ParseDur(in)
		if err != nil || got != want {
			t.Errorf("ParseDur(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"d", "-1d", "1dd", "1d-2h", "xd", "1e3d", "30days", "1d2"} {
		if _, err := ParseDur(bad); err == nil {
			t.Errorf("ParseDur(%q) accepted", bad)
		}
	}
}
