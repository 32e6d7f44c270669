package scenarios

import (
	_ "embed"
)

//go:embed examples/demo.yaml
var demoYAML []byte

// DemoYAML returns the embedded demo scenario's text.
func DemoYAML() []byte { return append([]byte(nil), demoYAML...) }

// Demo parses the embedded demo scenario (no external files) with overrides.
func Demo(sets []string) (*Scenario, error) {
	return Parse(demoYAML, "", sets)
}
