package kueuefid

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

// Lines of a v0.16.2 manager's log (fairshare-race), shortened: cycle 7's
// two heads, b2's finish and release, a non-JSON line, b1's admission (not
// an instant).
const managerLog = `{"level":"Level(-2)","ts":"2026-11-27T01:02:50.206537595Z","logger":"scheduler","msg":"Attempting to schedule workload","schedulingCycle":7,"workload":{"name":"b2","namespace":"default"}}
{"level":"Level(-2)","ts":"2026-11-27T01:02:50.207000000Z","logger":"scheduler","msg":"Attempting to schedule workload","schedulingCycle":7,"workload":{"name":"c2","namespace":"default"}}
I1127 01:02:50.3 some klog line
{"level":"Level(-2)","ts":"2026-11-27T01:02:49.213216228Z","logger":"workload-reconciler","msg":"Workload update event","workload":{"name":"b1","namespace":"default"},"queue":"b","status":"admitted","prevStatus":"pending","clusterQueue":"b"}
{"level":"Level(-2)","ts":"2026-11-27T01:02:51.000100000Z","logger":"workload-reconciler","msg":"Workload update event","workload":{"name":"b2","namespace":"default"},"queue":"b","status":"finished","prevStatus":"admitted"}
{"level":"Level(-2)","ts":"2026-11-27T01:02:52.500000000Z","logger":"workload-reconciler","msg":"Workload update event","workload":{"name":"b3","namespace":"default"},"queue":"b","status":"pending","prevStatus":"admitted"}
{"level":"Level(-2)","ts":"2026-11-27T01:02:50.100000000Z","logger":"scheduler","msg":"Attempting to schedule workload","schedulingCycle":6,"workload":{"name":"b1","namespace":"default"}}
{"level":"Level(-2)","ts":"2026-11-27T01:02:53.000000000Z","logger":"workload-reconciler","msg":"Workload update event","workload":{"name":"b2","namespace":"default"},"queue":"b","status":"finished"}
{"level":"Level(-6)","ts":"2026-11-27T01:02:51.000200000Z","logger":"scheduler","msg":"Found ClusterQueue","schedulingCycle":8,"clusterQueue":{"name":"b"},"workloads":["default/b2","default/b4"]}
{"level":"Level(-6)","ts":"2026-11-27T01:02:51.000150000Z","logger":"scheduler","msg":"Found ClusterQueue","schedulingCycle":8,"clusterQueue":{"name":"a"},"workloads":[]}
{"level":"Level(-2)","ts":"2026-11-27T01:02:51.000300000Z","logger":"scheduler","msg":"Attempting to schedule workload","schedulingCycle":8,"workload":{"name":"b6","namespace":"default"}}
{"level":"Level(-6)","ts":"2026-11-27T01:02:51.100000000Z","logger":"scheduler","msg":"Found ClusterQueue","schedulingCycle":9,"clusterQueue":{"name":"b"},"workloads":["default/b4"]}
`

func TestParseManagerLog(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 1, 2, 49, 200_000_000, time.UTC)
	cycles, seen, err := ParseManagerLog(strings.NewReader(managerLog), t0, 1)
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	// cycle 8 starts with its snapshot's first line; 9 logged only its snapshot
	if len(cycles) != 4 || cycles[0].N != 6 || !near(cycles[0].Start, 0.9) || cycles[1].N != 7 || !near(cycles[1].Start, 1.006537595) ||
		cycles[2].N != 8 || !near(cycles[2].Start, 1.80015) || cycles[3].N != 9 || !near(cycles[3].Start, 1.9) {
		t.Fatalf("cycles %+v", cycles)
	}
	// b2's finish was logged at 1.8001, but cycle 8's snapshot (1.80015)
	// still held b2: seen just after cycle 8's start. Cycle 9's did not.
	if len(seen) != 2 || seen[0] != (Seen{"b2", "finished", seen[0].At}) || !near(seen[0].At, 1.800151) ||
		seen[1].ID != "b3" || seen[1].Event != "released" || !near(seen[1].At, 3.3) {
		t.Fatalf("seen %+v", seen)
	}
	// scale 2: half the simulated seconds
	if cycles, _, _ = ParseManagerLog(strings.NewReader(managerLog), t0, 2); !near(cycles[0].Start, 0.45) {
		t.Fatalf("scale 2: %+v", cycles)
	}
	// round trip through the files
	dir := t.TempDir()
	var cb, sb bytes.Buffer
	if err := WriteCycles(&cb, cycles); err != nil {
		t.Fatal(err)
	}
	if err := WriteSeen(&sb, seen); err != nil {
		t.Fatal(err)
	}
	gc, err := ReadCycles(write(t, dir, "cycles.csv", cb.String()))
	if err != nil || len(gc) != 4 || gc[1].N != 7 || !near(gc[1].Start, 0.503269) {
		t.Fatalf("cycles.csv %q: %+v %v", cb.String(), gc, err)
	}
	gs, err := ReadSeen(write(t, dir, "seen.csv", sb.String()))
	if err != nil || len(gs) != 2 || gs[0].ID != "b2" || !near(gs[0].At, 1.800151) {
		t.Fatalf("seen.csv %q: %+v %v", sb.String(), gs, err)
	}
	if _, err := ReadSeen(write(t, dir, "bad.csv", "id,event,seen_s\nb1,started,1\n")); err == nil {
		t.Fatal("unknown event accepted")
	}
}
