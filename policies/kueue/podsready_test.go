package kueue

import (
	"slices"
	"testing"

	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

func withConfig(manifests, config string) string { return manifests + "---\n" + config }

// waitForPodsReady on one 8-GPU node with a 16-GPU quota: A (8 GPUs) runs until
// 2000 s, B (8 GPUs) is admitted at 0 but cannot be placed, so its pods are never
// ready.
//
// v1beta1 (timeout 5 min): B is evicted at 300 and requeued after 60 s (360),
// evicted at 660, requeued after 120 s (780), evicted at 1080, back after 240 s
// (1320), evicted at 1620, back after 480 s (2100): B starts at 2100 although A
// finished at 2000 (4 requeues).
//
// v1beta2 (timeout 30 min): evicted at 1800, back at 1860, placed when A ends:
// B starts at 2000 (1 requeue).
func TestPodsReadyTimeoutBackoffAndDefaults(t *testing.T) {
	for _, tc := range []struct {
		config         string
		start          float64
		requeues       int32
		blockAdmission bool
	}{
		{"apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\nwaitForPodsReady: {enable: true}\n", 2100, 4, true},
		{"apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nwaitForPodsReady: {}\n", 2000, 1, false},
		{"", 2000, 0, false}, // no Configuration: B waits for capacity, admitted
	} {
		k := newKueue(t, withConfig(oneQueue, tc.config), 0)
		if c := k.m.Config; tc.config != "" && c.WaitForPodsReady.BlockAdmission != tc.blockAdmission {
			t.Errorf("blockAdmission default %v, want %v", c.WaitForPodsReady.BlockAdmission, tc.blockAdmission)
		}
		res := Run(t, Nodes(1, 8), k,
			MakeJob("A").Queue("q").GPUs(8).Dur(2000).Obj(),
			MakeJob("B").Queue("q").GPUs(8).Dur(10).Obj())
		st := Starts(res)
		if st["A"] != 0 || st["B"] != tc.start {
			t.Errorf("%q: starts %v, want B at %v\n%s", tc.config, st, tc.start, Schedule(res))
		}
		if ws, _ := k.WorkloadState(1); ws.Requeues != tc.requeues || ws.InBackoff || ws.Deactivated {
			t.Errorf("%q: B state %+v, want %d requeues, no backoff", tc.config, ws, tc.requeues)
		}
	}
}

// backoffLimitCount: 1 — B is requeued once (timeout at 300, back at 360) and
// deactivated at its second timeout (660): it never starts and is reported.
func TestPodsReadyBackoffLimitDeactivates(t *testing.T) {
	k := newKueue(t, withConfig(oneQueue, `apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
waitForPodsReady: {enable: true, requeuingStrategy: {backoffLimitCount: 1}}
`), 0)
	res := Run(t, Nodes(1, 8), k,
		MakeJob("A").Queue("q").GPUs(8).Dur(2000).Obj(),
		MakeJob("B").Queue("q").GPUs(8).Dur(10).Obj())
	if st := Starts(res); st["B"] != -1 {
		t.Errorf("B started at %v; a deactivated workload never runs", st["B"])
	}
	if d := k.Deactivated(); !slices.Equal(d, []sim.JobID{"B"}) || k.wls[1].requeues != 1 {
		t.Errorf("deactivated %v after %d requeues, want [B] after 1", d, k.wls[1].requeues)
	}
}

// requeuingStrategy.timestamp with a zero backoff: A (8 GPUs) runs until 1000 s
// on an 8-GPU node; B (0 s) and C (10 s) both need the node and fit the 16-GPU
// quota one at a time. B is admitted first and times out at 300 (timeout 5 min).
// Eviction: B is re-timestamped 300 and queues behind C (created at 10), so C is
// admitted at 300, times out at 600, then B at 600 and C at 900 — C holds the
// quota when A ends: C starts at 1000, B when C ends (1100).
// Creation: B keeps its place ahead of C and is re-admitted at every timeout:
// B starts at 1000, C at 1100.
func TestPodsReadyRequeueTimestamp(t *testing.T) {
	for _, tc := range []struct {
		ts   string
		b, c float64
	}{{"Eviction", 1100, 1000}, {"Creation", 1000, 1100}} {
		k := newKueue(t, withConfig(oneQueue, `apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
waitForPodsReady: {timeout: 5m, requeuingStrategy: {timestamp: `+tc.ts+`, backoffBaseSeconds: 0}}
`), 0)
		res := Run(t, Nodes(1, 8), k,
			MakeJob("A").Queue("q").GPUs(8).Dur(1000).Obj(),
			MakeJob("B").Queue("q").GPUs(8).Dur(100).Obj(),
			MakeJob("C").Queue("q").GPUs(8).At(10).Dur(100).Obj())
		if st := Starts(res); st["B"] != tc.b || st["C"] != tc.c {
			t.Errorf("%s: starts %v, want B %v C %v\n%s", tc.ts, st, tc.b, tc.c, Schedule(res))
		}
	}
}

// blockAdmission: on one 8-GPU node with a 16-GPU quota, A (6 GPUs) runs until
// 100 s; B (4 GPUs, t=1) is admitted but cannot be placed. Without blockAdmission
// C (2 GPUs, t=2) is admitted and starts at 2 on the free GPUs; with it, no
// workload is admitted while B is not ready: C waits until B starts at 100.
func TestPodsReadyBlockAdmission(t *testing.T) {
	for _, tc := range []struct {
		block string
		c     float64
	}{{"false", 2}, {"true", 100}} {
		k := newKueue(t, withConfig(oneQueue, "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nwaitForPodsReady: {blockAdmission: "+tc.block+"}\n"), 0)
		res := Run(t, Nodes(1, 8), k,
			MakeJob("A").Queue("q").GPUs(6).Dur(100).Obj(),
			MakeJob("B").Queue("q").GPUs(4).At(1).Dur(100).Obj(),
			MakeJob("C").Queue("q").GPUs(2).At(2).Dur(100).Obj())
		if st := Starts(res); st["B"] != 100 || st["C"] != tc.c {
			t.Errorf("blockAdmission %s: starts %v, want B 100 C %v\n%s", tc.block, st, tc.c, Schedule(res))
		}
	}
}
