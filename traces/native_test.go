package traces

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpusim/gpusim/sim"
)

func writeTemp(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNativeSmall(t *testing.T) {
	jobs, rep, err := ReadJobs("native", "testdata/native/small.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := []sim.JobSpec{
		{ID: "j1", Submit: 0, GPUsPerReplica: 1, Duration: sim.Hour, Replicas: 1, Walltime: 2 * sim.Hour, GPUMilli: 500,
			GPUModels: []string{"V100", "A100"}, Queue: "vc1", User: "alice", Team: "ml", Class: sim.ClassTraining, Priority: 1, CPUMilli: 4000, MemoryMiB: 16384},
		{ID: "j2", Submit: sim.Time(10500 * sim.Millisecond), GPUsPerReplica: 8, Duration: sim.Seconds(120.25), Replicas: 2, GPUMilli: 1000,
			Queue: "vc2", User: "bob", Class: sim.ClassExperiment},
		{ID: "j3", Submit: sim.Time(11 * sim.Second), GPUsPerReplica: 0, Duration: sim.Minute, Replicas: 1, GPUMilli: 1000,
			Queue: "vc1", User: "carol", Class: sim.ClassUnknown, CPUMilli: 1000, MemoryMiB: 1024},
		{ID: "j,4", Submit: sim.Time(12000001), GPUsPerReplica: 4, Duration: sim.Second, Replicas: 1, GPUMilli: 1000,
			GPUModels: []string{"A100"}, Queue: "vc2", User: "bob, jr", Team: "t", Class: sim.ClassServing, Priority: -3},
	}
	if d := cmp.Diff(want, jobs); d != "" {
		t.Fatalf("jobs differ (-want +got):\n%s", d)
	}
	if rep.Rows != 4 || rep.Imported != 4 || rep.SkippedTotal() != 0 {
		t.Fatalf("report %+v", rep)
	}
}

func TestNativeRoundTrip(t *testing.T) {
	jobs, _, err := ReadJobs("native", "testdata/native/small.csv")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"out.csv", "out.parquet", "OUT.PARQUET"} {
		p := filepath.Join(t.TempDir(), name)
		n, err := WriteNativeFile(p, SliceReader(jobs))
		if err != nil || n != len(jobs) {
			t.Fatalf("%s: n=%d err=%v", name, n, err)
		}
		back, rep, err := ReadJobs("native", p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d := cmp.Diff(jobs, back); d != "" {
			t.Fatalf("%s: round trip differs:\n%s", name, d)
		}
		if rep.Imported != len(jobs) {
			t.Fatalf("%s: report %+v", name, rep)
		}
	}
}

func TestNativeEmptyTrace(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteNativeCSV(&buf, nil); err != nil {
		t.Fatal(err)
	}
	p := writeTemp(t, "e.csv", buf.String())
	jobs, _, err := ReadJobs("native", p)
	if err != nil || len(jobs) != 0 {
		t.Fatalf("jobs=%v err=%v", jobs, err)
	}
	pq := filepath.Join(t.TempDir(), "e.parquet")
	if _, err := WriteNativeFile(pq, SliceReader(nil)); err != nil {
		t.Fatal(err)
	}
	jobs, _, err = ReadJobs("native", pq)
	if err != nil || len(jobs) != 0 {
		t.Fatalf("parquet jobs=%v err=%v", jobs, err)
	}
}

func TestNativeCSVQuirks(t *testing.T) {
	// BOM, CRLF, column order, quoted fields, blank lines and a trailing blank line.
	content := "\ufeffgpus,duration_s,submit_s,ID\r\n1,5,0,\"a\"\r\n\r\n2,5,1.5,b\r\n\r\n"
	jobs, _, err := ReadJobs("native", writeTemp(t, "q.csv", content))
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 || jobs[0].ID != "a" || jobs[1].GPUsPerReplica != 2 || jobs[1].Submit != sim.Time(1500*sim.Millisecond) {
		t.Fatalf("jobs %+v", jobs)
	}
}

func TestNativeBadRows(t *testing.T) {
	const hdr = "id,submit_s,gpus,duration_s,replicas,gpu_milli,class\n"
	cases := []struct {
		name, content, want string
	}{
		{"missing column", "id,submit_s,gpus\na,0,1\n", "F:1: column duration_s: missing required column"},
		{"unknown column", "id,submit_s,gpus,duration_s,bogus\na,0,1,1,x\n", `F:1: unknown column(s) "bogus"`},
		{"empty file", "", "F:1: empty file"},
		{"bad number", hdr + "a,zero,1,1,1,1000,\n", `F:2: column submit_s: bad number "zero"`},
		{"NaN", hdr + "a,NaN,1,1,1,1000,\n", `F:2: column submit_s: bad number "NaN"`},
		{"negative time", hdr + "a,0,1,-5,1,1000,\n", "F:2: column duration_s: negative time -5"},
		{"missing value", hdr + "a,,1,1,1,1000,\n", "F:2: column submit_s: missing value"},
		{"missing id", hdr + ",0,1,1,1,1000,\n", "F:2: column id: missing value"},
		{"bad integer", hdr + "a,0,1.5,1,1,1000,\n", `F:2: column gpus: bad integer "1.5"`},
		{"negative gpus", hdr + "a,0,-1,1,1,1000,\n", "F:2: column gpus: must be >= 0"},
		{"zero replicas", hdr + "a,0,1,1,0,1000,\n", "F:2: column replicas: must be >= 1"},
		{"milli range", hdr + "a,0,1,1,1,1001,\n", "F:2: column gpu_milli: must be in 1..1000"},
		{"fractional gang", hdr + "a,0,2,1,1,500,\n", "F:2: column gpu_milli: a fractional share (500) needs gpus=1"},
		{"unknown class", hdr + "a,0,1,1,1,1000,bogus\n", `F:2: column class: unknown job class "bogus"`},
		{"field count", hdr + "a,0,1,1\n", "F:2: row has 4 fields, the header has 7"},
		{"bad quote", hdr + "a,0,1,1,1,1000,\"x\n", "F:2: malformed CSV"},
		{"duplicate id", hdr + "a,0,1,1,1,1000,\nb,0,1,1,1,1000,\na,0,1,1,1,1000,\n", `F:4: column id: duplicate job id "a" (first on line 2)`},
		{"overflow int", hdr + "a,0,99999999999,1,1,1000,\n", "F:2: column gpus: bad integer"},
		{"huge gang", hdr + "a,0,65536,1,65536,1000,\n", "F:2: column gpus: gang of 65536 x 65536 GPUs is too large"},
		{"huge time", hdr + "a,1e15,1,1,1,1000,\n", "F:2: column submit_s: time beyond 10^12 seconds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeTemp(t, "F", c.content)
			_, _, err := ReadJobs("native", p)
			if err == nil {
				t.Fatalf("no error")
			}
			got := strings.ReplaceAll(err.Error(), p, "F")
			if !strings.HasPrefix(got, c.want) {
				t.Fatalf("error %q, want prefix %q", got, c.want)
			}
			var re *RowError
			if !errors.As(err, &re) || re.File != p {
				t.Fatalf("not a RowError naming the file: %#v", err)
			}
		})
	}
}

func TestNativeAllowDuplicates(t *testing.T) {
	p := writeTemp(t, "d.csv", "id,submit_s,gpus,duration_s\na,0,1,1\na,1,1,1\n")
	jobs, _, err := ReadJobsWith("native", p, ReadOptions{AllowDuplicateIDs: true})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("jobs=%d err=%v", len(jobs), err)
	}
}

func TestNativeParquetBad(t *testing.T) {
	p := writeTemp(t, "x.parquet", "this is not parquet at all, not even close")
	if _, _, err := ReadJobs("native", p); err == nil {
		t.Fatal("no error")
	}
	if _, _, err := ReadJobs("nope", p); !errors.Is(err, ErrUnknownFormat) {
		t.Fatalf("err %v", err)
	}
}

func TestRowErrorText(t *testing.T) {
	e := &RowError{File: "f.csv", Line: 3, Column: "gpus", Err: errors.New("bad")}
	if e.Error() != "f.csv:3: column gpus: bad" {
		t.Fatal(e.Error())
	}
	e.Column = ""
	if e.Error() != "f.csv:3: bad" {
		t.Fatal(e.Error())
	}
}

func TestAppendSeconds(t *testing.T) {
	for us, want := range map[int64]string{0: "0", 1: "0.000001", 1500000: "1.5", -2500000: "-2.5", 12000001: "12.000001", 3600e6: "3600"} {
		if got := string(appendSeconds(nil, us)); got != want {
			t.Errorf("%d: %q want %q", us, got, want)
		}
	}
}
