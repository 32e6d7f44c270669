package kueuefid

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The manager's instants. A recording made with them also holds
//
//	cycles.csv  the start of each of Kueue's scheduling cycles (see Cycle)
//	seen.csv    when the manager saw each Workload finish or give its quota
//	            back after an eviction (see Seen)
//
// both on the recording's simulated clock (seconds from T0 / time scale),
// read by the recorder from the manager's JSON log at --zap-log-level=2
// (ParseManagerLog). The replay test plays them when cycles.csv is there
// (policies/kueue/fidelity_test.go).

// Cycle is a scheduling cycle of Kueue's scheduler (pkg/scheduler/
// scheduler.go Scheduler.schedule): its schedulingCycle number and Start,
// the first line the cycle logged. At --zap-log-level=6 that is the dump of
// the cache's snapshot it just took (s.cache.Snapshot, then
// logSnapshotIfVerbose in pkg/scheduler/logging.go: a "Found ClusterQueue"
// line per ClusterQueue, with the Workloads holding its quota); at 2 to 5,
// its first "Attempting to schedule workload" line (one per head it
// tries), logged after the snapshot and the heads' nomination. A cycle that
// found no heads logs nothing (queues.Heads blocks until there are some).
type Cycle struct {
	N     int
	Start float64 // simulated seconds from T0
}

// Seen is when the manager's workload controller saw a Workload's status
// change (pkg/controller/core/workload_controller.go
// WorkloadReconciler.Update, the V(2) "Workload update event" line it logs
// before it removes the Workload from the cache): Event "finished" (status
// finished) or "released" (pending again after quotaReserved or admitted:
// the driver cleared an evicted Workload's admission). The line comes
// before the removal, and a cycle's first line after its snapshot, so when
// a cycle that starts at or after At still had the Workload in its
// snapshot (level 6), At is moved to 1 us after that cycle's Start: the
// cycle did not see it.
type Seen struct {
	ID    string
	Event string
	At    float64 // simulated seconds from T0
}

// logLine is the part of a manager log line (zap JSON) that
// ParseManagerLog reads.
type logLine struct {
	TS       time.Time `json:"ts"`
	Msg      string    `json:"msg"`
	Cycle    int       `json:"schedulingCycle"`
	Workload struct {
		Name string `json:"name"`
	} `json:"workload"`
	Status     string   `json:"status"`
	PrevStatus string   `json:"prevStatus"`
	Workloads  []string `json:"workloads"` // "Found ClusterQueue": namespace/name
}

// ParseManagerLog reads the cycles and the seen finishes and releases from
// a Kueue manager's log (zap JSON lines, --zap-log-level=2 or more; other
// lines are skipped). t0 and scale put the log's wall-clock times on the
// recording's simulated clock. Cycles are in cycle order, Seen in log order.
func ParseManagerLog(r io.Reader, t0 time.Time, scale float64) ([]Cycle, []Seen, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	sim := func(ts time.Time) float64 { return ts.Sub(t0).Seconds() / scale }
	start := map[int]time.Time{}
	held := map[int]map[string]bool{} // the Workloads in each cycle's snapshot
	var seen []Seen
	for sc.Scan() {
		b := sc.Bytes()
		if len(b) == 0 || b[0] != '{' {
			continue
		}
		var l logLine
		if json.Unmarshal(b, &l) != nil {
			continue
		}
		switch l.Msg {
		case "Attempting to schedule workload", "Found ClusterQueue", "Found cohort":
			if l.Cycle <= 0 {
				continue
			}
			if t, ok := start[l.Cycle]; !ok || l.TS.Before(t) {
				start[l.Cycle] = l.TS
			}
			if l.Msg == "Found ClusterQueue" {
				if held[l.Cycle] == nil {
					held[l.Cycle] = map[string]bool{}
				}
				for _, w := range l.Workloads {
					if _, name, ok := strings.Cut(w, "/"); ok {
						held[l.Cycle][name] = true
					}
				}
			}
		case "Workload update event":
			switch {
			case l.Status == "finished" && l.PrevStatus != "" && l.PrevStatus != "finished":
				seen = append(seen, Seen{ID: l.Workload.Name, Event: "finished", At: sim(l.TS)})
			case l.Status == "pending" && (l.PrevStatus == "admitted" || l.PrevStatus == "quotaReserved"):
				seen = append(seen, Seen{ID: l.Workload.Name, Event: "released", At: sim(l.TS)})
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	cycles := make([]Cycle, 0, len(start))
	for n, t := range start {
		cycles = append(cycles, Cycle{N: n, Start: sim(t)})
	}
	slices.SortFunc(cycles, func(a, b Cycle) int { return a.N - b.N })
	for i := range seen {
		for _, c := range cycles {
			if c.Start >= seen[i].At && held[c.N][seen[i].ID] {
				seen[i].At = c.Start + 1e-6
			}
		}
	}
	return cycles, seen, nil
}

// fmtMicro formats simulated seconds to the microsecond: the race these
// files resolve is one millisecond wide.
func fmtMicro(v float64) string { return strconv.FormatFloat(v, 'f', 6, 64) }

// WriteCycles writes cycles.csv.
func WriteCycles(w io.Writer, cycles []Cycle) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"cycle", "start_s"}); err != nil {
		return err
	}
	for _, c := range cycles {
		if err := cw.Write([]string{strconv.Itoa(c.N), fmtMicro(c.Start)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// ReadCycles reads cycles.csv.
func ReadCycles(path string) ([]Cycle, error) {
	col, rows, err := readCSV(path, []string{"cycle", "start_s"})
	if err != nil {
		return nil, err
	}
	out := make([]Cycle, 0, len(rows))
	for i, r := range rows {
		n, err1 := strconv.Atoi(r[col["cycle"]])
		s, err2 := strconv.ParseFloat(r[col["start_s"]], 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("kueuefid: %s:%d: bad row %q", path, i+2, r)
		}
		out = append(out, Cycle{N: n, Start: s})
	}
	return out, nil
}

// WriteSeen writes seen.csv.
func WriteSeen(w io.Writer, seen []Seen) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"id", "event", "seen_s"}); err != nil {
		return err
	}
	for _, s := range seen {
		if err := cw.Write([]string{s.ID, s.Event, fmtMicro(s.At)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// ReadSeen reads seen.csv.
func ReadSeen(path string) ([]Seen, error) {
	col, rows, err := readCSV(path, []string{"id", "event", "seen_s"})
	if err != nil {
		return nil, err
	}
	out := make([]Seen, 0, len(rows))
	for i, r := range rows {
		at, err := strconv.ParseFloat(r[col["seen_s"]], 64)
		ev := r[col["event"]]
		if err != nil || (ev != "finished" && ev != "released") {
			return nil, fmt.Errorf("kueuefid: %s:%d: bad row %q", path, i+2, r)
		}
		out = append(out, Seen{ID: r[col["id"]], Event: ev, At: at})
	}
	return out, nil
}
