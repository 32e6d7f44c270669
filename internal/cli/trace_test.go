package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpusim/gpusim/traces"
)

func runTraceCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

const openbDefault = "../../traces/testdata/alibaba-openb-2023/openb_pod_list_default.csv"

func TestTraceStatsJSON(t *testing.T) {
	code, out, errs := runTraceCLI("trace", "stats", openbDefault, "--format", "openb-pods", "--json", "--gpus", "6212")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errs)
	}
	var m struct {
		Jobs         int            `json:"jobs"`
		Skipped      map[string]int `json:"skipped"`
		FirstSubmitS float64        `json:"first_submit_s"`
		LastSubmitS  float64        `json:"last_submit_s"`
		DurationS    struct{ P50, P90, P99 float64 }
		GPUs         map[string]int `json:"gpus"`
		Demand       float64        `json:"gpu_demand_gpu_seconds"`
		Load         *float64       `json:"offered_load"`
	}
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	if m.Jobs != 8152 || len(m.Skipped) != 0 || m.LastSubmitS != 12901761 || m.GPUs["8"] != 44 || m.Demand <= 0 || m.Load == nil || m.DurationS.P99 < m.DurationS.P50 {
		t.Fatalf("%+v", m)
	}
	code, out, _ = runTraceCLI("trace", "stats", openbDefault, "-f", "openb-pods")
	if code != 0 || !strings.Contains(out, "8152 imported") {
		t.Fatalf("text: %d\n%s", code, out)
	}
}

func TestTraceConvertRoundTrip(t *testing.T) {
	dir := t.TempDir()
	pq := filepath.Join(dir, "pods.parquet")
	code, out, errs := runTraceCLI("trace", "convert", openbDefault, "--format", "openb-pods", "-o", pq)
	if code != 0 || !strings.Contains(out, "8152 jobs written") {
		t.Fatalf("code %d: %s %s", code, out, errs)
	}
	back := filepath.Join(dir, "pods.csv")
	if code, _, errs := runTraceCLI("trace", "convert", pq, "-o", back); code != 0 {
		t.Fatalf("back: %d %s", code, errs)
	}
	orig, _, err := traces.ReadJobs("openb-pods", openbDefault)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{pq, back} {
		got, _, err := traces.ReadJobs("native", p)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(orig, got); d != "" {
			t.Fatalf("%s differs: %s", p, d)
		}
	}
}

func TestTraceExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("id,submit_s,gpus,duration_s\na,-1,1,1\n"), 0o644)
	for name, c := range map[string]struct {
		args []string
		code int
		msg  string
	}{
		"unknown format": {[]string{"trace", "stats", bad, "--format", "nope"}, ExitUsage, "unknown trace format"},
		"bad row":        {[]string{"trace", "stats", bad}, ExitUsage, bad + ":2: column submit_s: negative time"},
		"missing file":   {[]string{"trace", "stats", filepath.Join(dir, "none.csv")}, ExitUsage, "no such file"},
		"no output":      {[]string{"trace", "convert", bad}, ExitUsage, "-o OUT is required"},
		"same file":      {[]string{"trace", "convert", bad, "-o", bad}, ExitUsage, "is the input file"},
		"bad convert":    {[]string{"trace", "convert", bad, "-o", filepath.Join(dir, "x.parquet")}, ExitUsage, "negative time"},
		"no args":        {[]string{"trace", "stats"}, ExitUsage, "accepts 1 arg"},
		"bad gpus":       {[]string{"trace", "stats", bad, "--gpus", "-1"}, ExitUsage, "--gpus"},
	} {
		code, _, errs := runTraceCLI(c.args...)
		if code != c.code || !strings.Contains(errs, c.msg) {
			t.Errorf("%s: code %d, stderr %q", name, code, errs)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.parquet")); err == nil {
		t.Error("failed convert left an output file")
	}
	code, out, _ := runTraceCLI("trace", "formats")
	if code != 0 || !strings.Contains(out, "openb-pods") || !strings.Contains(out, "openb-nodes") {
		t.Fatalf("%d %s", code, out)
	}
}

func TestTraceNodesAndClusterLoad(t *testing.T) {
	nodesFile := "../../traces/testdata/alibaba-openb-2023/openb_node_list_gpu_node.csv"
	code, out, errs := runTraceCLI("trace", "nodes", nodesFile)
	total := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "total") {
			total = strings.Join(strings.Fields(l), " ")
		}
	}
	if code != 0 || total != "total 1213 6212 107018 492020" {
		t.Fatalf("%d %s\n%s", code, errs, out)
	}
	code, a, _ := runTraceCLI("trace", "stats", openbDefault, "-f", "openb-pods", "--json", "--gpus", "6212")
	code2, b, _ := runTraceCLI("trace", "stats", openbDefault, "-f", "openb-pods", "--json", "--cluster", nodesFile)
	if code != 0 || code2 != 0 || a != b {
		t.Fatalf("--cluster differs from --gpus 6212:\n%s\n%s", a, b)
	}
	if code, _, errs := runTraceCLI("trace", "nodes", openbDefault); code != ExitUsage || !strings.Contains(errs, "missing required column") {
		t.Fatalf("%d %s", code, errs)
	}
}
