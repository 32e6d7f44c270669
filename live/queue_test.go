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

func TestParseQueueJob(t *testing.T) {
	s, argv, err := ParseQueueJob("q/train.yaml", []byte("gpus: 2\nreplicas: 1\nduration_s: 30\nwalltime_s: 60\nuser: ann\nclass: training\ncommand: [python, t.py, '{gpus}']\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.ID != "train" || s.GPUsPerReplica != 2 || s.Duration != 30*sim.Second || s.Walltime != 60*sim.Second || s.User != "ann" || s.Class != sim.JobClass("training") || len(argv) != 3 {
		t.Errorf("parsed %+v %v", s, argv)
	}
	// JSON is YAML; every problem at its line.
	_, _, err = ParseQueueJob("q/bad.json", []byte("{\n\"gpus\": -1,\n\"replicas\": -2,\n\"duration_s\": -5\n}\n"))
	for _, want := range []string{"q/bad.json:2: gpus: must be >= 0", "q/bad.json:3: replicas: must be >= 1", "q/bad.json:4: duration_s: must be in"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	_, _, err = ParseQueueJob("q/typo.yaml", []byte("gpus: 1\ngpsu: 2\n"))
	if err == nil || !strings.Contains(err.Error(), "q/typo.yaml:2: ") || !strings.Contains(err.Error(), "gpsu") {
		t.Errorf("unknown field: %v", err)
	}
	_, _, err = ParseQueueJob("q/x.yaml", []byte("id: ../etc\ngpus: 1\n"))
	if err == nil || !strings.Contains(err.Error(), "q/x.yaml:1: id:") {
		t.Errorf("path id: %v", err)
	}
	if _, _, err = ParseQueueJob("q/y.yaml", []byte("gpus: [1\n")); err == nil {
		t.Error("malformed YAML accepted")
	}
}

// TestQueueDirectory: a live run takes jobs dropped in its queue directory
// while it runs (one with its own failing command, one invalid, one too big
// for the machine), ends after RequestStop, and a replay of its journal
// rebuilds the submitted jobs.
func TestQueueDirectory(t *testing.T) {
	state, queue := t.TempDir(), t.TempDir()
	jobs := []sim.JobSpec{simtest.MakeJob("trace0").GPUs(1).Dur(20).At(0).Obj()}
	opts := Options{StateDir: state, Scale: 200, Grace: 50 * time.Millisecond, QueueDir: queue,
		Local: LocalOptions{Devices: devices(7)}, Policy: "fifo", Scenario: "queue", ScenarioSHA256: "x"}
	r, err := NewRunner(labConfig(t, "fifo", jobs), opts)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"a.yaml":    "gpus: 4\nduration_s: 40\n",
		"b.json":    `{"id": "b", "gpus": 2, "duration_s": 10, "command": ["sh", "-c", "exit 3"]}`,
		"c.yaml":    "gpus: 1\nduraton_s: 5\n",
		"d.yaml":    "gpus: 8\nduration_s: 5\n",
		"notes.txt": "ignored",
	}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(queue, n), []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	go func() {
		// Once the files are taken, ask the run to end.
		for {
			if _, err := os.Stat(filepath.Join(queue, "a.yaml")); os.IsNotExist(err) {
				if _, err := os.Stat(filepath.Join(queue, "d.yaml")); os.IsNotExist(err) {
					break
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		_ = RequestStop(state)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, _, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]sim.JobState{}
	for i := range res.Jobs {
		states[string(res.Jobs[i].Spec.ID)] = res.Jobs[i].State
	}
	if len(states) != 3 || states["trace0"] != sim.StateCompleted || states["a"] != sim.StateCompleted || states["b"] != sim.StateKilled {
		t.Fatalf("job states %v", states)
	}
	for _, n := range []string{"a.yaml", "b.json"} {
		if _, err := os.Stat(filepath.Join(queue, "accepted", n)); err != nil {
			t.Errorf("%s not moved to accepted/: %v", n, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(queue, "rejected", "c.yaml.error")); err != nil || !strings.Contains(string(b), "c.yaml:2: ") {
		t.Errorf("c.yaml rejection: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(queue, "rejected", "d.yaml.error")); err != nil || !strings.Contains(string(b), "can never run on this machine") {
		t.Errorf("d.yaml rejection: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(queue, "notes.txt")); err != nil {
		t.Errorf("notes.txt should stay: %v", err)
	}
	// The finished journal replays to the same jobs, starting nothing.
	r2, err := NewRunner(labConfig(t, "fifo", jobs), opts)
	if err != nil {
		t.Fatal(err)
	}
	res2, st, err := r2.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Resumed || len(res2.Jobs) != 3 || res2.Jobs[2].State != res.Jobs[2].State || res2.Jobs[2].End != res.Jobs[2].End {
		t.Errorf("replay: resumed %v, %d jobs", st.Resumed, len(res2.Jobs))
	}
}
