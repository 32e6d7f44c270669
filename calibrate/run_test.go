package calibrate

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
)

type fixture struct {
	dir, pids, locks, out string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	d := t.TempDir()
	f := fixture{dir: d, pids: filepath.Join(d, "pids"), locks: filepath.Join(d, "locks"), out: filepath.Join(d, "out")}
	for _, p := range []string{f.pids, f.locks} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if live := livePIDs(t, f.pids); len(live) > 0 {
			t.Errorf("fake workload processes still running: %v", live)
		}
	})
	return f
}

// plan renders a plan whose workloads run this test binary as fake workloads.
// body holds the plan fields besides apiVersion/kind/env; workloads lines use
// "FAKE:<mode>" as command, replaced by the binary.
func (f fixture) plan(t *testing.T, body string) *Plan {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf("apiVersion: gpusim/v1alpha1\nkind: CalibrationPlan\nenv:\n  FAKE_PIDS: %s\n  FAKE_LOCK_DIR: %s\n%s",
		f.pids, f.locks, strings.ReplaceAll(body, "FAKE_EXE", exe))
	p, err := ParsePlan("test-plan.yaml", []byte(text))
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, text)
	}
	return p
}

func fakeProbe(t *testing.T) *Fake {
	t.Helper()
	p := NewFake()
	if err := p.Init(); err != nil {
		t.Fatal(err)
	}
	return p
}

const bucketWorkloads = `workloads:
  - name: a
    class: token-bucket
    command: [FAKE_EXE]
    env: {GPUSIM_CAL_FAKE: bucket, FAKE_HOLD_MS: "10", FAKE_GAP_MS: "2"}
  - name: b
    class: token-bucket
    command: [FAKE_EXE]
    env: {GPUSIM_CAL_FAKE: bucket, FAKE_HOLD_MS: "10", FAKE_GAP_MS: "2"}
`

func journalIDs(t *testing.T, dir string) map[string][]string {
	t.Helper()
	fh, err := os.Open(filepath.Join(dir, JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	ids := map[string][]string{}
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<24)
	for first := true; sc.Scan(); first = false {
		if first {
			continue
		}
		var r CellResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("journal line: %v", err)
		}
		ids[r.ID] = append(ids[r.ID], r.Status)
	}
	return ids
}

// Two token-bucket workloads sharing one lock: co-located members must get the
// known fraction (hold+gap)/(2*hold) = 0.6 of their alone throughput.
func TestRunEndToEndKnownSlowdown(t *testing.T) {
	f := newFixture(t)
	p := f.plan(t, `name: e2e
modes: [timeslice]
groupSizes: [2]
warmup: 100ms
measure: 500ms
repetitions: 2
timeout: 10s
stopGrace: 1s
sampleInterval: 50ms
`+bucketWorkloads)
	var log strings.Builder
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sum, err := Run(context.Background(), RunOptions{Probe: fakeProbe(t), Plan: p, OutDir: f.out,
		Log: &log, Host: "lab1", Created: created, Fake: true})
	t.Log(log.String())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Cells != 10 || sum.Measured != 10 || sum.Skipped != 0 {
		t.Fatalf("summary %+v", sum)
	}
	m, err := LoadInterference(filepath.Join(f.out, InterferenceFile))
	if err != nil {
		t.Fatal(err)
	}
	if m.Metadata.Created != "2026-01-02T03:04:05Z" || m.Metadata.Host != "lab1" || !m.Metadata.Fake || m.Metadata.GPUModel != "H100-80GB-HBM3" {
		t.Errorf("metadata %+v", m.Metadata)
	}
	const want = 12.0 / 20.0
	mr := m.Modes[0]
	if len(mr.Alone) != 2 || len(mr.Groups) != 3 {
		t.Fatalf("mode result %+v", mr)
	}
	for _, a := range mr.Alone {
		// Alone: one item per hold+gap = 12ms -> ~83/s (sleep overshoot lowers it).
		if a.Throughput.Mean < 50 || a.Throughput.Mean > 90 || a.Throughput.Repetitions != 2 {
			t.Errorf("alone %s throughput %+v, want ~83/s over 2 reps", a.Workload, a.Throughput)
		}
	}
	for _, g := range mr.Groups {
		sumF := 0.0
		for _, mb := range g.Members {
			sumF += mb.Mean
			if math.Abs(mb.Mean-want) > 0.15 || mb.Repetitions != 2 {
				t.Errorf("group %v member %s: factor %+v, want %.2f±0.15", g.Members, mb.Workload, mb.Stat, want)
			}
		}
		// Whatever the lock's fairness, the pair shares one bucket.
		if math.Abs(sumF-2*want) > 0.15 {
			t.Errorf("group %v: factors sum to %.3f, want %.2f", g.Members, sumF, 2*want)
		}
	}
	if fa, ok := m.Factor(ModeTimeslice, "a", "b"); !ok || math.Abs(fa-want) > 0.15 {
		t.Errorf("Factor(a,b) = %v %v", fa, ok)
	}
	for _, w := range m.Workloads {
		if w.Fingerprint.Samples == 0 || w.Fingerprint.SMUtilPct <= 0 || w.Fingerprint.PowerW <= 0 {
			t.Errorf("workload %s fingerprint %+v: want samples from the fake NVML", w.Name, w.Fingerprint)
		}
	}
	for _, name := range []string{SamplesFile, "heatmap-timeslice.png", JournalFile} {
		if st, err := os.Stat(filepath.Join(f.out, name)); err != nil || st.Size() == 0 {
			t.Errorf("output %s: %v", name, err)
		}
	}
	// samples.parquet holds every journaled sample with the cell columns.
	rows := readParquetRows(t, filepath.Join(f.out, SamplesFile), SampleColumns(true))
	var want0 int
	j, err := OpenJournal(filepath.Join(f.out, JournalFile), p.Hash())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range j.Done {
		want0 += len(r.Samples)
	}
	j.Close()
	if rows != want0 || rows == 0 {
		t.Errorf("samples.parquet has %d rows, journal %d samples", rows, want0)
	}
	// A re-run measures nothing and rewrites identical results.
	before, _ := os.ReadFile(filepath.Join(f.out, InterferenceFile))
	sum, err = Run(context.Background(), RunOptions{Probe: fakeProbe(t), Plan: p, OutDir: f.out, Host: "lab1", Created: created, Fake: true})
	if err != nil || sum.Measured != 0 || sum.Skipped != 10 {
		t.Fatalf("re-run: %+v %v", sum, err)
	}
	after, _ := os.ReadFile(filepath.Join(f.out, InterferenceFile))
	if string(before) != string(after) {
		t.Error("re-run changed interference.yaml")
	}
}

func readParquetRows(t *testing.T, path string, cols []string) int {
	t.Helper()
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fr, err := pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{}, memory.NewGoAllocator())
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	var got []string
	for _, f := range tbl.Schema().Fields() {
		got = append(got, f.Name)
	}
	if strings.Join(got, ",") != strings.Join(cols, ",") {
		t.Errorf("parquet columns %v, want %v", got, cols)
	}
	return int(tbl.NumRows())
}

// Interrupt a run in the middle of a cell, then resume: finished cells are not
// measured again, the interrupted cell is, and no process is left behind.
func TestRunInterruptAndResume(t *testing.T) {
	f := newFixture(t)
	p := f.plan(t, `modes: [timeslice]
groupSizes: [2]
warmup: 50ms
measure: 300ms
repetitions: 2
timeout: 10s
stopGrace: 1s
sampleInterval: 50ms
workloads:
  - name: a
    command: [FAKE_EXE]
    env: {GPUSIM_CAL_FAKE: bucket, FAKE_HOLD_MS: "5", FAKE_GAP_MS: "1"}
`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	_, err := Run(ctx, RunOptions{Probe: fakeProbe(t), Plan: p, OutDir: f.out,
		AfterCell: func(CellResult) {
			// Cancel 150ms into the second cell.
			once.Do(func() { time.AfterFunc(150*time.Millisecond, cancel) })
		}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: got %v, want context.Canceled", err)
	}
	if live := livePIDs(t, f.pids); len(live) > 0 {
		t.Fatalf("processes left after interrupt: %v", live)
	}
	ids := journalIDs(t, f.out)
	if len(ids) != 1 || len(ids["timeslice/a/r1"]) != 1 {
		t.Fatalf("journal after interrupt: %v, want only timeslice/a/r1", ids)
	}
	if _, err := os.Stat(filepath.Join(f.out, InterferenceFile)); err == nil {
		t.Error("interrupted run wrote interference.yaml")
	}
	// A torn last line (crash mid-write) must not break the resume.
	jf, _ := os.OpenFile(filepath.Join(f.out, JournalFile), os.O_WRONLY|os.O_APPEND, 0)
	jf.WriteString(`{"id":"timeslice/a+a/r1","sta`)
	jf.Close()

	var log strings.Builder
	sum, err := Run(context.Background(), RunOptions{Probe: fakeProbe(t), Plan: p, OutDir: f.out, Log: &log})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if sum.Skipped != 1 || sum.Measured != 3 {
		t.Errorf("resume summary %+v, want 1 skipped, 3 measured", sum)
	}
	ids = journalIDs(t, f.out) // strict: the torn line was dropped
	for _, c := range p.Cells() {
		if st := ids[c.ID()]; len(st) != 1 || st[0] != "ok" {
			t.Errorf("cell %s journaled %v, want exactly one ok", c.ID(), st)
		}
	}
	// A concurrent run on the same directory is refused.
	lk, _ := os.OpenFile(filepath.Join(f.out, ".lock"), os.O_RDWR, 0)
	if err := syscall.Flock(int(lk.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), RunOptions{Probe: fakeProbe(t), Plan: p, OutDir: f.out}); err == nil ||
		!strings.Contains(err.Error(), "in use by another") {
		t.Errorf("concurrent run: got %v", err)
	}
	lk.Close()
	// A different plan must not resume this journal.
	p2 := *p
	p2.Measure = time.Second
	if _, err := Run(context.Background(), RunOptions{Probe: fakeProbe(t), Plan: &p2, OutDir: f.out}); err == nil ||
		!strings.Contains(err.Error(), "different plan") {
		t.Errorf("changed plan: got %v", err)
	}
}

// A workload that never reports progress and ignores SIGTERM (with a child that
// does the same) fails its cell on timeout; its whole process group is killed.
func TestRunTimeoutKillsProcessGroup(t *testing.T) {
	f := newFixture(t)
	p := f.plan(t, `modes: [timeslice]
groupSizes: [1]
warmup: 0s
measure: 100ms
repetitions: 1
timeout: 600ms
stopGrace: 100ms
sampleInterval: 50ms
workloads:
  - name: hang
    command: [FAKE_EXE]
    env: {GPUSIM_CAL_FAKE: hang}
  - name: crash
    command: [FAKE_EXE]
    env: {GPUSIM_CAL_FAKE: crash}
  - name: nosuch
    command: [/nonexistent/workload]
`)
	start := time.Now()
	sum, err := Run(context.Background(), RunOptions{Probe: fakeProbe(t), Plan: p, OutDir: f.out})
	if err == nil || !strings.Contains(err.Error(), "3 cell(s) failed") {
		t.Fatalf("got %v, want 3 failed cells", err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("took %s", d)
	}
	if len(sum.Failed) != 3 {
		t.Errorf("failed %v", sum.Failed)
	}
	ents, _ := os.ReadDir(f.pids)
	if len(ents) < 3 { // hang, its sleeper child, crash
		t.Errorf("only %d fake processes recorded", len(ents))
	}
	if live := livePIDs(t, f.pids); len(live) > 0 {
		t.Fatalf("processes left after timeout: %v", live)
	}
	b, _ := os.ReadFile(filepath.Join(f.out, JournalFile))
	for _, want := range []string{"timeout after 600ms", "exited before reporting progress", "/nonexistent/workload"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("journal lacks %q:\n%s", want, b)
		}
	}
	// Failed cells are retried by the next run (and fail again).
	sum, _ = Run(context.Background(), RunOptions{Probe: fakeProbe(t), Plan: p, OutDir: f.out})
	if sum.Measured != 3 {
		t.Errorf("retry measured %d cells, want 3", sum.Measured)
	}
}

// mps mode starts a private control daemon once for the mode's cells and stops
// it; regex progress works.
func TestRunMPSWithFakeDaemon(t *testing.T) {
	f := newFixture(t)
	ctl := filepath.Join(f.dir, "mps-control")
	calls := filepath.Join(f.dir, "mps-calls")
	script := fmt.Sprintf("#!/bin/sh\nin=''\n[ \"$1\" = -d ] || read in\necho \"$* $in pipe=${CUDA_MPS_PIPE_DIRECTORY:+set}\" >> %s\n", calls)
	if err := os.WriteFile(ctl, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p := f.plan(t, fmt.Sprintf(`modes: [mps]
groupSizes: [2]
warmup: 50ms
measure: 300ms
repetitions: 1
timeout: 10s
stopGrace: 1s
sampleInterval: 50ms
mps: {controlCommand: %s}
workloads:
  - name: r
    command: [FAKE_EXE]
    env: {GPUSIM_CAL_FAKE: regex, FAKE_RATE: "42.5"}
    progress: {regex: 'rate=([0-9.]+)'}
`, ctl))
	sum, err := Run(context.Background(), RunOptions{Probe: fakeProbe(t), Plan: p, OutDir: f.out})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Measured != 2 {
		t.Errorf("summary %+v", sum)
	}
	b, _ := os.ReadFile(calls)
	if got := string(b); got != "-d  pipe=set\n quit pipe=set\n" {
		t.Errorf("MPS control calls %q", got)
	}
	m, err := LoadInterference(filepath.Join(f.out, InterferenceFile))
	if err != nil {
		t.Fatal(err)
	}
	if a := m.Modes[0].Alone[0].Throughput.Mean; a != 42.5 {
		t.Errorf("regex throughput %v, want 42.5", a)
	}
	if g := m.Modes[0].Groups[0].Members[0].Mean; g != 1 {
		t.Errorf("regex factor %v, want 1", g)
	}
}

// mig mode puts every member on its own existing MIG instance: the fake bucket is
// per device, so members do not interfere.
func TestRunMIGIsolated(t *testing.T) {
	f := newFixture(t)
	p := f.plan(t, `gpu: 7
modes: [mig]
groupSizes: [2]
warmup: 50ms
measure: 300ms
repetitions: 1
timeout: 10s
stopGrace: 1s
sampleInterval: 50ms
workloads:
  - name: a
    command: [FAKE_EXE]
    env: {GPUSIM_CAL_FAKE: bucket, FAKE_HOLD_MS: "5", FAKE_GAP_MS: "1"}
`)
	if _, err := Run(context.Background(), RunOptions{Probe: fakeProbe(t), Plan: p, OutDir: f.out}); err != nil {
		t.Fatal(err)
	}
	ids := journalIDs(t, f.out)
	if len(ids) != 2 {
		t.Fatalf("journal %v", ids)
	}
	m, err := LoadInterference(filepath.Join(f.out, InterferenceFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, mb := range m.Modes[0].Groups[0].Members {
		if math.Abs(mb.Mean-1) > 0.2 {
			t.Errorf("MIG member factor %v, want ~1 (isolated)", mb.Mean)
		}
	}
	j, _ := OpenJournal(filepath.Join(f.out, JournalFile), p.Hash())
	defer j.Close()
	devs := j.Done["mig/a+a/r1"].Devices
	if len(devs) != 2 || devs[0] == devs[1] || !strings.HasPrefix(devs[0], "MIG-") {
		t.Errorf("MIG devices %v", devs)
	}
}

// The tool never changes MIG mode: plans that would need it are refused before
// anything runs.
func TestRunRefusesMIGMismatch(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ body, want string }{
		{"gpu: 7\nmodes: [timeslice]\n", "is in MIG mode"},
		{"gpu: 0\nmodes: [mig]\n", "not in MIG mode"},
		{"gpu: 7\nmodes: [mig]\ngroupSizes: [3]\nmig: {instances: [MIG-fa4e0007-0000-4000-8000-000000000000, MIG-fa4e0007-0000-4000-8000-000000000001]}\n", "need 3 MIG instances"},
		{"gpu: 7\nmodes: [mig]\nmig: {instances: [MIG-a, MIG-b]}\n", "MIG-a is not an existing MIG instance"},
		{"gpu: 9\n", "has 8 GPU(s)"},
	} {
		p := f.plan(t, tc.body+"measure: 1s\nworkloads:\n  - {name: a, command: 'true'}\n")
		_, err := Run(context.Background(), RunOptions{Probe: fakeProbe(t), Plan: p, OutDir: filepath.Join(f.dir, "x")})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.body, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(f.dir, "x")); err == nil {
		t.Error("refused plan created its output directory")
	}
}

// Triples: three members sharing one bucket each get (hold+gap)/(3*hold).
func TestRunTriple(t *testing.T) {
	f := newFixture(t)
	p := f.plan(t, `groupSizes: [3]
warmup: 100ms
measure: 600ms
repetitions: 1
timeout: 10s
stopGrace: 1s
sampleInterval: 100ms
workloads:
  - name: a
    command: [FAKE_EXE]
    env: {GPUSIM_CAL_FAKE: bucket, FAKE_HOLD_MS: "10", FAKE_GAP_MS: "5"}
`)
	if _, err := Run(context.Background(), RunOptions{Probe: fakeProbe(t), Plan: p, OutDir: f.out}); err != nil {
		t.Fatal(err)
	}
	m, err := LoadInterference(filepath.Join(f.out, InterferenceFile))
	if err != nil {
		t.Fatal(err)
	}
	g := m.Modes[0].Groups
	if len(g) != 1 || len(g[0].Members) != 3 {
		t.Fatalf("groups %+v", g)
	}
	const want = 15.0 / 30.0
	for _, mb := range g[0].Members {
		if math.Abs(mb.Mean-want) > 0.12 {
			t.Errorf("triple member factor %.3f, want %.2f±0.12", mb.Mean, want)
		}
	}
	if _, ok := m.Factor(ModeTimeslice, "a", "a"); ok {
		t.Error("pair factor from a triple-only plan")
	}
}

func TestJournalErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, JournalFile)
	for _, tc := range []struct{ content, want string }{
		{"hello\n", "not a gpusim calibrate journal"},
		{`{"journal":"gpusim-calibrate","planHash":"abc"}` + "\n", "different plan"},
		{`{"journal":"gpusim-calibrate","planHash":"h"}` + "\n{bad\n" + `{"id":"x","status":"ok"}` + "\n", ":2: bad journal entry"},
	} {
		os.WriteFile(path, []byte(tc.content), 0o644)
		if _, err := OpenJournal(path, "h"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.content, err, tc.want)
		}
	}
	// A torn last line is dropped and the next entry starts on a fresh line.
	os.WriteFile(path, []byte(`{"journal":"gpusim-calibrate","planHash":"h"}`+"\n"+`{"id":"a","status":"ok"}`+"\n"+`{"id":"b","sta`), 0o644)
	j, err := OpenJournal(path, "h")
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Record(CellResult{ID: "c", Status: "ok"}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	j, err = OpenJournal(path, "h")
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if len(j.Done) != 2 || j.Done["a"].ID != "a" || j.Done["c"].ID != "c" {
		t.Errorf("done %v", j.Done)
	}
}

func TestRunMPSStartFailure(t *testing.T) {
	f := newFixture(t)
	p := f.plan(t, "modes: [mps]\nmeasure: 100ms\nmps: {controlCommand: /nonexistent/mps-control}\nworkloads:\n  - {name: a, command: 'true'}\n")
	_, err := Run(context.Background(), RunOptions{Probe: fakeProbe(t), Plan: p, OutDir: f.out})
	if err == nil || !strings.Contains(err.Error(), "start MPS control daemon") {
		t.Errorf("got %v", err)
	}
}
