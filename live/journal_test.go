package live

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

func TestJournalTornTailAndErrors(t *testing.T) {
	dir := t.TempDir()
	j, err := OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []Record{{Rec: RecHeader, Version: 1, Policy: "fifo"}, {Rec: RecLaunch, Job: "a", GPUs: []int{0}}} {
		if err := j.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	path := filepath.Join(dir, JournalFile)
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("journal mode %v, want 0600", st.Mode().Perm())
	}
	// A crash in the middle of a write leaves a line without its newline.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"rec":"start","job":"a","pi`)
	f.Close()
	j, err = OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(j.Records()); n != 2 || j.Records()[1].Job != "a" {
		t.Fatalf("records after a torn tail: %+v", j.Records())
	}
	if err := j.Append(Record{Rec: RecEnd, Job: "a", Outcome: "completed"}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	b, _ := os.ReadFile(path)
	if strings.Contains(string(b), `"pi`) || strings.Count(string(b), "\n") != 3 {
		t.Fatalf("torn tail not truncated before appending:\n%s", b)
	}
	// Any other malformed line is an error naming the file and line.
	os.WriteFile(path, append(b, []byte("{\"rec\":\"end\",\"bogus\":1}\n")...), 0o600)
	if _, err := OpenJournal(dir); err == nil || !strings.Contains(err.Error(), JournalFile+":4: ") || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("unknown field: %v", err)
	}
	os.WriteFile(path, append(b, []byte("{\"t_us\":1}\n")...), 0o600)
	if _, err := OpenJournal(dir); err == nil || !strings.Contains(err.Error(), JournalFile+":4: rec: missing record kind") {
		t.Fatalf("missing rec: %v", err)
	}
}

// TestReplayStopModes: a journal whose stops are a policy kill and a lease end
// replays them as such: the killed job stays killed (never launched again),
// the leased one keeps its work and its next run gets only the remaining
// duration in {duration}.
func TestReplayStopModes(t *testing.T) {
	state, work := t.TempDir(), t.TempDir()
	jobs := []sim.JobSpec{
		simtest.MakeJob("a").GPUs(1).Dur(30).At(0).Obj(),
		simtest.MakeJob("b").GPUs(1).Dur(30).At(0).Obj(),
	}
	j, err := OpenJournal(state)
	if err != nil {
		t.Fatal(err)
	}
	// The epoch is now: the replayed stops at t=10 s lie in the past.
	for _, r := range []Record{
		{Rec: RecHeader, Version: JournalVersion, Policy: "fifo", Scenario: "modes", ScenarioSHA256: "x", Scale: 100, EpochUnixNano: time.Now().UnixNano(), Jobs: 2},
		{Rec: RecLaunch, Job: "a", Nodes: []int{0}, GPUs: []int{0}},
		{Rec: RecStart, Job: "a", Nodes: []int{0}, GPUs: []int{0}},
		{Rec: RecLaunch, Job: "b", Nodes: []int{0}, GPUs: []int{1}},
		{Rec: RecStart, Job: "b", Nodes: []int{0}, GPUs: []int{1}},
		{Rec: RecStop, TimeUS: 10e6, Job: "a", Mode: "lease", Reason: "round end"},
		{Rec: RecStop, TimeUS: 10e6, Job: "b", Mode: "kill", Reason: "policy"},
	} {
		if err := j.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	r, err := NewRunner(labConfig(t, "fifo", jobs), Options{StateDir: state, WorkDir: work, Scale: 100,
		Local:  LocalOptions{Devices: devices(7), Command: []string{"sh", "-c", "echo {duration} > {id}.{run}.dur"}},
		Policy: "fifo", Scenario: "modes", ScenarioSHA256: "x"})
	if err != nil {
		t.Fatal(err)
	}
	res, _, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	a, b := &res.Jobs[0], &res.Jobs[1]
	if a.State != sim.StateCompleted || a.Preempted != 1 || b.State != sim.StateKilled || b.End != sim.Time(10*sim.Second) {
		t.Fatalf("a %s (preempted %d), b %s at %v", a.State, a.Preempted, b.State, b.End)
	}
	if d, err := os.ReadFile(filepath.Join(work, "a.1.dur")); err != nil || strings.TrimSpace(string(d)) != "0.200" {
		t.Errorf("a's second run got {duration} %q (%v), want 0.200 (20 s left at scale 100)", d, err)
	}
	if _, err := os.Stat(filepath.Join(work, "b.1.dur")); err == nil {
		t.Error("killed job b ran again")
	}
}
