package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/calibrate"
)

func TestCalibrateImportGavel(t *testing.T) {
	out := filepath.Join(t.TempDir(), "interference.yaml")
	code, stdout, stderr := calibrateCLI("calibrate", "import", "--format", "gavel", "--gpu-model", "v100",
		"../../calibrate/testdata/gavel/simulation_throughputs.json", "-o", out)
	if code != 0 || !strings.Contains(stdout, "26 workloads") {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	m, err := calibrate.LoadInterference(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Modes) != 1 || m.ModeGPUModel(0) != "V100" || m.Modes[0].Mode != calibrate.ModeTimeslice {
		t.Errorf("modes %+v", m.Modes[0].Mode)
	}
}

func TestCalibrateImportUsageErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{\"v100\": {\n\"('A', 1)\": {\"null\": -2}}}"), 0o644)
	badCSV := filepath.Join(dir, "bad.csv")
	os.WriteFile(badCSV, []byte("model1\n"), 0o644)
	out := filepath.Join(dir, "o.yaml")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"calibrate", "import", "--format", "gavel", bad, "-o", out}, "bad.json:2: v100.('A', 1).null: isolated throughput must be >= 0"},
		{[]string{"calibrate", "import", "--format", "lucid", badCSV, "-o", out}, `bad.csv:1: header: missing column "dataset1"`},
		{[]string{"calibrate", "import", "--format", "gavel", "--mode", "mig", bad, "-o", out}, `import mode "mig"`},
		{[]string{"calibrate", "import", "--format", "csv", bad, "-o", out}, `--format "csv": want gavel or lucid`},
		{[]string{"calibrate", "import", bad, "-o", out}, "--format is required"},
		{[]string{"calibrate", "import", "--format", "gavel", bad}, "-o FILE is required"},
		{[]string{"calibrate", "import", "--format", "gavel", "-o", out}, "exactly one input file"},
		{[]string{"calibrate", "import", "--format", "gavel", filepath.Join(dir, "missing.json"), "-o", out}, "no such file"},
	} {
		code, _, stderr := calibrateCLI(tc.args...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed import left %s", out)
	}
}
