package k8smanifest

import (
	"math"
	"reflect"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestParseQuantity(t *testing.T) {
	good := map[string]float64{"16": 16, "500m": 0.5, "64Gi": 64 << 30, "1e3": 1000, "1E3": 1000, "2E": 2e18, "1.5k": 1500, ".5": 0.5, "+3": 3, "100n": 100 * 1e-9}
	for s, want := range good {
		if v, err := parseQuantity(s); err != nil || math.Abs(v-want) > 1e-12*want {
			t.Errorf("%q: %v, %v (want %v)", s, v, err, want)
		}
	}
	for _, s := range []string{"", "x", "1Gb", "0x10", "Inf", "NaN", "-1", "1e", "1 Gi", "1e999"} {
		if v, err := parseQuantity(s); err == nil {
			t.Errorf("%q: %v, want an error", s, v)
		}
	}
}

// Unknown keys are found at any depth, in lists and maps of structs and in
// merged mappings; raw yaml.Node fields and plain maps accept anything.
func TestUnknownFields(t *testing.T) {
	src := `
base: &b {name: c, imagee: x}
spec:
  containers:
    - <<: *b
      resources: {limits: {a.b/c: "1"}, claimz: 1}
  tolerations: [{anything: goes}]
  nodeSelector: {x: y}
  bogus: 1
`
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(src), &n); err != nil {
		t.Fatal(err)
	}
	type doc struct {
		Base yaml.Node `yaml:"base"`
		Spec podSpec   `yaml:"spec"`
	}
	var got []string
	unknownFields(n.Content[0], reflect.TypeOf(&doc{}), "", func(line int, path string) {
		got = append(got, path+"@"+string(rune('0'+line)))
	})
	want := []string{"spec.containers[0].imagee@2", "spec.containers[0].resources.claimz@6", "spec.bogus@9"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
