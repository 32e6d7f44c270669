package reports

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpusim/gpusim/sim"
)

var update = flag.Bool("update", false, "rewrite golden files")

// writeRuns writes run dirs root/<policy>-s<seed> for two policies x two seeds.
func writeRuns(t *testing.T, root string) []string {
	t.Helper()
	var dirs []string
	for _, pol := range []sim.Policy{fifo{}, greedy{}} {
		for _, seed := range []uint64{1, 2} {
			res := mixedResult(t, pol, seed)
			s := Summarize(res, Provenance{Version: "v-test", GoVersion: "go-test", Seed: seed, Scenario: "mixed",
				ScenarioSHA256: "0123abcd"}, time.Second)
			d := filepath.Join(root, pol.Name()+"-s"+string(rune('0'+seed)))
			if err := WriteRunDir(d, res, s); err != nil {
				t.Fatal(err)
			}
			dirs = append(dirs, d)
		}
	}
	return dirs
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", p, d)
	}
}

func TestBuildReport(t *testing.T) {
	root := t.TempDir()
	if keep := os.Getenv("GPUSIM_REPORT_KEEP"); keep != "" {
		root = keep // keep the output to look at the plots
	}
	dirs := writeRuns(t, filepath.Join(root, "runs"))
	out := filepath.Join(root, "report")
	if err := BuildReport(dirs, out); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"summary.csv", "summary.md"} {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		golden(t, "report/"+name, b)
	}
	wantFigs := []string{"wait_cdf", "jct_cdf", "wait_cdf_by_class", "jct_cdf_by_class", "utilization",
		"queue_length", "queue_share", "headline", "gantt_fifo-test", "gantt_greedy-test"}
	for _, f := range wantFigs {
		for _, ext := range []string{".png", ".svg"} {
			st, err := os.Stat(filepath.Join(out, f+ext))
			if err != nil || st.Size() < 1000 {
				t.Errorf("%s%s: %v (size %d)", f, ext, err, sizeOf(st))
			}
		}
	}
	html, err := os.ReadFile(filepath.Join(out, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<h1>gpusim report: mixed</h1>", "0123abcd", "v-test", "fifo-test-s1", "<svg", `id="gantt_greedy-test"`,
		"Queue time (", "Fraction of jobs (CDF)"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	if bytes.Contains(html, []byte("<?xml")) {
		t.Error("index.html contains an XML prolog")
	}
	// Re-running gives the same text outputs.
	out2 := filepath.Join(root, "report2")
	if err := BuildReport(dirs, out2); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"summary.csv", "summary.md", "index.html"} {
		a, _ := os.ReadFile(filepath.Join(out, name))
		b, _ := os.ReadFile(filepath.Join(out2, name))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between builds", name)
		}
	}
}

func sizeOf(st os.FileInfo) int64 {
	if st == nil {
		return -1
	}
	return st.Size()
}

func TestFigureRenderSmoke(t *testing.T) {
	dirs := writeRuns(t, t.TempDir())
	rep, err := LoadReport(dirs[:1])
	if err != nil {
		t.Fatal(err)
	}
	figs := rep.Figures()
	if len(figs) < 8 {
		t.Fatalf("%d figures", len(figs))
	}
	for _, f := range figs {
		wt, err := f.WriterTo("svg")
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := wt.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "<svg") || buf.Len() < 1000 {
			t.Errorf("%s: SVG of %d bytes", f.Name, buf.Len())
		}
	}
	if _, err := figs[0].WriterTo("gif"); err == nil {
		t.Error("gif accepted")
	}
}

func TestBuildReportErrors(t *testing.T) {
	if err := BuildReport(nil, t.TempDir()); err == nil {
		t.Error("no dirs accepted")
	}
	dir := t.TempDir()
	if err := BuildReport([]string{dir}, t.TempDir()); err == nil || !strings.Contains(err.Error(), "summary.json") {
		t.Errorf("err = %v", err)
	}
}

func TestRunLabels(t *testing.T) {
	got := runLabels([]string{"/a/b/fifo", "/a/b/sjf", "/a/c/fifo"})
	if d := cmp.Diff([]string{"b/fifo", "b/sjf", "c/fifo"}, got); d != "" {
		t.Error(d)
	}
	if got := runLabels([]string{"out/x/fifo/"}); got[0] != "fifo" {
		t.Error(got)
	}
}

func TestNaturalLess(t *testing.T) {
	if !naturalLess("node2", "node10") || naturalLess("node10", "node2") || !naturalLess("a", "b") || !naturalLess("n1", "n1a") {
		t.Error("natural order")
	}
}
