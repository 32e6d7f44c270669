package volcano

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

// sessionOffset moves the session grid: with period 1 s and offset 0.4 s,
// sessions run at 0.4, 1.4, 2.4 s, ... A job arriving at 0 starts at 0.4 s
// (not 0), one arriving at 0.5 s at 1.4 s, and GPUs freed at 1.6 s (the first
// job ran 1.2 s) are used at 2.4 s. With period 1.5 s the sessions are 0.4,
// 1.9, 3.4 s: the waiting job starts at 1.9 s.
func TestSessionOffset(t *testing.T) {
	v := newVolcano(t, `sessionOffset: 400ms`)
	res := Run(t, Nodes(1, 8), v,
		MakeJob("full").GPUs(6).At(0).Dur(1.2).Obj(),
		MakeJob("a").GPUs(2).At(0.5).Dur(10).Obj(),
		MakeJob("b").GPUs(6).At(0.5).Dur(1).Obj(),
	)
	wantStarts(t, res, map[string]float64{"full": 0.4, "a": 1.4, "b": 2.4})

	v = newVolcano(t, "sessionOffset: 400ms\nschedulePeriod: 1500ms")
	res = Run(t, Nodes(1, 8), v,
		MakeJob("full").GPUs(6).At(0).Dur(1.2).Obj(),
		MakeJob("b").GPUs(6).At(0.5).Dur(1).Obj(),
	)
	wantStarts(t, res, map[string]float64{"full": 0.4, "b": 1.9})

	// the default (0) is the grid at multiples of the period
	v = newVolcano(t, `sessionOffset: 0s`)
	res = Run(t, Nodes(1, 8), v, MakeJob("c").At(1.3).Obj())
	wantStarts(t, res, map[string]float64{"c": 2})

	var doc yaml.Node
	if err := yaml.Unmarshal([]byte("sessionOffset: -1s"), &doc); err != nil {
		t.Fatal(err)
	}
	p, err := ParamsFromYAML(doc.Content[0])
	if err == nil {
		_, err = New(p)
	}
	if err == nil || !strings.Contains(err.Error(), "line 1: sessionOffset") {
		t.Errorf("negative sessionOffset: %v", err)
	}
}

// The fidelity replay's hook: sessions exactly at the given instants (a real
// scheduler's logged sessions), then the grid again. Sessions at 0.25, 0.7
// and 2.1 s: "full" (at 0) starts at 0.25 s and ends at 1.45 s; "a" (at 0.5)
// starts at 0.7 s; "b" waits for full's GPUs and starts at 2.1 s; "c" (at 2.5,
// after the list) starts on the grid at 3 s.
func TestReplaySessions(t *testing.T) {
	v := newVolcano(t, ``)
	v.replaySessions = []sim.Time{sim.Time(sim.Seconds(0.25)), sim.Time(sim.Seconds(0.7)), sim.Time(sim.Seconds(2.1))}
	res := Run(t, Nodes(1, 8), v,
		MakeJob("full").GPUs(6).At(0).Dur(1.2).Obj(),
		MakeJob("a").GPUs(2).At(0.5).Dur(10).Obj(),
		MakeJob("b").GPUs(6).At(0.5).Dur(1).Obj(),
		MakeJob("c").GPUs(0).CPU(1000).At(2.5).Dur(1).Obj(),
	)
	wantStarts(t, res, map[string]float64{"full": 0.25, "a": 0.7, "b": 2.1, "c": 3})
}
