package yamlmsg

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

type inner struct {
	N  int64   `yaml:"n"`
	F  float64 `yaml:"f"`
	On bool    `yaml:"on"`
}

type doc struct {
	Seed  uint64            `yaml:"seed"`
	Name  string            `yaml:"name"`
	List  []string          `yaml:"list"`
	Map   map[string]string `yaml:"map"`
	Inner inner             `yaml:"inner"`
	Items []inner           `yaml:"items"`
}

// Every yaml.v3 problem comes back, at its line and field, in the user's terms.
func TestProblems(t *testing.T) {
	src := "seed: -1\nname: [a]\nlist: {a: 1}\nmap: [x]\ninner: 3\nitems:\n  - {n: x, f: y, on: maybe}\n  - {n: 1, n: 2}\nextra: !custom 1\n"
	var node yaml.Node
	if err := yaml.Unmarshal([]byte(src), &node); err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(strings.NewReader(src))
	dec.KnownFields(true)
	var d doc
	err := dec.Decode(&d)
	var got []string
	for _, p := range Problems(&node, err) {
		got = append(got, p.String())
	}
	want := []string{
		`line 1: seed: want a whole number >= 0, got -1`,
		`line 2: name: want a string, got a list`,
		`line 3: list: want a list, got a mapping`,
		`line 4: map: want a mapping, got a list`,
		`line 5: inner: want a mapping, got 3`,
		`line 7: items[0].n: want a whole number, got "x"`,
		`line 7: items[0].f: want a number, got "y"`,
		`line 7: items[0].on: want true or false, got "maybe"`,
		`line 8: items[1].n: key "n" already defined at line 8`,
		`line 9: extra: unknown field "extra"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestLineOf(t *testing.T) {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte("a:\n  b:\n    - x\n    - {c: 1,\n       d: 2}\ne: 3\n"), &n); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{"a": 1, "a.b": 2, "a.b[1]": 4, "a.b[1].d": 5, "a.b[7]": 2, "a.zz": 1, "e": 6, "a.b[1].d.deeper": 5} {
		if got := LineOf(n.Content[0], path); got != want {
			t.Errorf("LineOf(%q) = %d, want %d", path, got, want)
		}
	}
}
