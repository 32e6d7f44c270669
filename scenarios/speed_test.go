package scenarios

import (
	"context"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/sim"
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
	// The fabric's oversubscription sets the spine link: a gang across two
	// leaves (each could hold it) slows down more at 4:1 than at 1:1; an explicit
	// spine link wins.
	slow := func(extra string) float64 {
		t.Helper()
		y := strings.Replace(minimal, "nodes: 2}", "nodes: 4}\n  fabric: {nodesPerLeaf: 2"+extra+"}", 1) + "speedModel: {enabled: true}\n"
		if strings.Contains(extra, "spine") {
			y = strings.Replace(minimal, "nodes: 2}", "nodes: 4}\n  fabric: {nodesPerLeaf: 2, oversubscription: 4}", 1) +
				"speedModel: {enabled: true, links: {spine: {gbps: 50, latencyUs: 8}}}\n"
		}
		sc, err := Parse([]byte(y), "s.yaml", nil)
		if err != nil {
			t.Fatal(err)
		}
		m, err := sc.Speed()
		if err != nil {
			t.Fatal(err)
		}
		nodes, _ := sc.Nodes()
		c, err := sim.NewCluster(nodes)
		if err != nil {
			t.Fatal(err)
		}
		j := &sim.Job{Spec: sim.JobSpec{Class: sim.ClassTraining, Replicas: 2, GPUsPerReplica: 8, GPUMilli: 1000},
			Nodes: []sim.NodeID{0, 2}, GPUs: []sim.GPUID{0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23}}
		return 1 / m.Speed(c, j)
	}
	s1, s4, explicit := slow(""), slow(", oversubscription: 4"), slow("spine")
	if !(s1 >= 1 && s4 > s1 && explicit < s4) {
		t.Errorf("slowdown 1:1 %.4f, 4:1 %.4f, explicit spine %.4f", s1, s4, explicit)
	}
	// Errors name the field and line.
	mustErr(t, minimal+"speedModel:\n  enabled: true\n  links:\n    leaf: {gbps: -1}\n", nil, "s.yaml:14: speedModel.links.leaf.gbps: must be a finite number > 0")
	mustErr(t, minimal+"speedModel:\n  enabled: true\n  classes:\n    bogus: {computeS: 1}\n", nil, "speedModel.classes.bogus: unknown class")
	mustErr(t, minimal+"speedModel:\n  enabled: true\n  linkz: {}\n", nil, "unknown field")
}
