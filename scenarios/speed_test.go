package scenarios

import (
	"context"
	"testing"
)

func TestSpeedModelBlock(t *testing.T) {
	y := minimal + "speedModel:\n  enabled: true\n  links:\n    leaf: {gbps: 40, latencyUs: 5}\n"
	sc, err := Parse([]byte(y), "s.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := sc.Speed()
	if err != nil || m == nil {
		t.Fatalf("speed model %v, %v", m, err)
	}
	runs, err := Run(context.Background(), sc, RunOptions{NoLog: true})
	if err != nil || runs[0].Summary.Jobs.Completed == 0 {
		t.Fatalf("run: %v", err)
	}
	// Disabled or absent: no model.
	for _, y := range []string{minimal, minimal + "speedModel: {enabled: false}\n"} {
		sc, err := Parse([]byte(y), "s.yaml", nil)
		if err != nil {
			t.Fatal(err)
		}
		if m, err := sc.Speed(); m != nil || err != nil {
			t.Fatalf("want no model, got %v %v", m, err)
		}
	}
	// Errors name the field and line.
	mustErr(t, minimal+"speedModel:\n  enabled: true\n  links:\n    leaf: {gbps: -1}\n", nil, "s.yaml:14: speedModel.links.leaf.gbps: must be a finite number > 0")
	mustErr(t, minimal+"speedModel:\n  enabled: true\n  classes:\n    bogus: {computeS: 1}\n", nil, "speedModel.classes.bogus: unknown class")
	mustErr(t, minimal+"speedModel:\n  enabled: true\n  linkz: {}\n", nil, "unknown field")
}
