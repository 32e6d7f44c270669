package cli

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/reports"
	"github.com/gpusim/gpusim/sim"
)

// TestRunHelperProcess is not a test: TestRunKilledAtRandomPoints and
// TestRunInterrupted run the gpusim command line in a child process through it.
func TestRunHelperProcess(t *testing.T) {
	args := os.Getenv("GPUSIM_RUN_HELPER_ARGS")
	if args == "" {
		t.Skip("helper process only")
	}
	os.Exit(Main(strings.Split(args, "\x1f"), os.Stdin, os.Stdout, os.Stderr))
}

func runHelper(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunHelperProcess$")
	cmd.Env = append(os.Environ(), "GPUSIM_RUN_HELPER_ARGS="+strings.Join(args, "\x1f"))
	return cmd
}

// checkOutDir asserts the run-directory contract on out: every entry is either a
// temporary left by a killed writer (".<name>.tmp-…") or complete: a policy
// directory whose five files all read back, scenario.yaml, or the manifest.
// It returns the complete policy directories.
func checkOutDir(t *testing.T, out string) []string {
	t.Helper()
	ents, err := os.ReadDir(out)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var done []string
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-"):
		case name == "scenario.yaml" || name == reports.ManifestFile:
		case e.IsDir():
			dir := filepath.Join(out, name)
			if err := reports.CheckRunDir(dir); err != nil {
				t.Fatalf("%s is a partial run directory: %v", dir, err)
			}
			for _, f := range []string{reports.SummaryFile, reports.JobsCSVFile, reports.JobsFile, reports.TimeseriesFile, reports.EventsFile} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Fatalf("%s lacks %s", dir, f)
				}
			}
			if _, err := reports.ReadRunDir(dir, true); err != nil {
				t.Fatalf("%s does not read back: %v", dir, err)
			}
			done = append(done, name)
		default:
			t.Fatalf("unexpected entry %s in %s", name, out)
		}
	}
	if m, err := reports.ReadManifest(out); err != nil {
		t.Fatal(err)
	} else if m != nil {
		for _, p := range m.Policies {
			if err := reports.CheckRunDir(filepath.Join(out, p)); err != nil {
				t.Fatalf("manifest lists %s: %v", p, err)
			}
		}
	}
	return done
}

// A run killed (SIGKILL) at a random point leaves, for each policy, either no
// directory or a complete one; the next run into the directory removes the
// temporaries and completes.
func TestRunKilledAtRandomPoints(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	out := filepath.Join(t.TempDir(), "out")
	args := []string{"run", "--demo", "--quiet", "-o", out, "--set", "workload.synthetic.jobs=6000"}
	// How long a whole run takes here, to spread the kills over it.
	start := time.Now()
	if b, err := runHelper(args...).CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, b)
	}
	full := time.Since(start)
	t.Logf("a whole run takes %v", full.Round(time.Millisecond))
	if got := checkOutDir(t, out); len(got) != 4 {
		t.Fatalf("complete run has %v", got)
	}
	os.RemoveAll(out)
	rng := rand.New(rand.NewPCG(1, 2))
	partial := 0
	for i := range 8 {
		if i%2 == 0 { // odd kills land on the leftovers of the previous one
			os.RemoveAll(out)
		}
		cmd := runHelper(args...)
		t0 := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill at a random point between the first output and the end of a run.
		for {
			if _, err := os.Stat(filepath.Join(out, "scenario.yaml")); err == nil || time.Since(t0) > full {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if rest := full - time.Since(t0); rest > 0 {
			time.Sleep(time.Duration(rng.Int64N(int64(rest))))
		}
		cmd.Process.Kill()
		cmd.Wait()
		got := checkOutDir(t, out)
		if len(got) < 4 {
			partial++
		}
		t.Logf("kill %d after %v: complete policy directories %v", i, time.Since(t0).Round(time.Millisecond), got)
	}
	if partial == 0 {
		t.Log("no kill landed before the end of a run; the contract still held")
	}
	if b, err := runHelper(args...).CombinedOutput(); err != nil {
		t.Fatalf("run after kills: %v\n%s", err, b)
	}
	if got := checkOutDir(t, out); len(got) != 4 {
		t.Fatalf("after the kills the next run has %v", got)
	}
	ents, _ := os.ReadDir(out)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary %s left after a complete run", e.Name())
		}
	}
}

// Ctrl-C stops a run with exit code 130 and no partial policy directory.
func TestRunInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process")
	}
	out := filepath.Join(t.TempDir(), "out")
	cmd := runHelper("run", "--demo", "--quiet", "-o", out, "--set", "workload.synthetic.jobs=200000")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for { // wait until the run has started writing
		if _, err := os.Stat(filepath.Join(out, "scenario.yaml")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("run did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != ExitInterrupted {
		t.Fatalf("interrupted run: %v, want exit %d\n%s", err, ExitInterrupted, stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr does not say interrupted: %s", stderr.String())
	}
	checkOutDir(t, out)
}

type failingWriter struct{}

func (failingWriter) Write(p []byte) (int, error) { return 0, syscall.ENOSPC }

// Output that cannot reach stdout is a runtime error (exit 1), not success.
func TestStdoutWriteErrorExits1(t *testing.T) {
	var stderr bytes.Buffer
	if code := Main([]string{"version"}, nil, failingWriter{}, &stderr); code != ExitRuntime {
		t.Fatalf("exit %d, want %d; stderr %s", code, ExitRuntime, stderr.String())
	}
	if !strings.Contains(stderr.String(), "write standard output") {
		t.Errorf("stderr %q", stderr.String())
	}
	if code := Main([]string{"policies"}, nil, failingWriter{}, &stderr); code != ExitRuntime {
		t.Fatalf("policies: exit %d, want %d", code, ExitRuntime)
	}
}

// The GitHub Actions example must not hide a failing command (no "|| true"),
// and its report step must work on what its run step writes.
func TestGateWorkflowExample(t *testing.T) {
	b, err := os.ReadFile("../../examples/ci/gpusim-gate.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Name string `yaml:"name"`
				Run  string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatal(err)
	}
	var report string
	for _, st := range wf.Jobs["gate"].Steps {
		if strings.Contains(st.Run, "|| true") {
			t.Errorf("step %q hides failures: %q", st.Name, st.Run)
		}
		if st.Name == "Report" {
			report = strings.TrimSpace(st.Run)
		}
	}
	args := strings.Fields(report)
	if len(args) < 2 || args[0] != "gpusim" {
		t.Fatalf("report step %q", report)
	}
	dir := t.TempDir()
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	os.Chdir(dir)
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"run", "--demo", "--quiet", "-o", "out", "--set", "workload.synthetic.jobs=200"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("run: %d %s", code, stderr.String())
	}
	if code := Main(args[1:], nil, &stdout, &stderr); code != 0 {
		t.Fatalf("%s: exit %d: %s", report, code, stderr.String())
	}
}

// The progress percentage never goes backwards when runs start one after
// another (each new run used to raise the bar's total).
func TestProgressMonotonic(t *testing.T) {
	p := newProgress(&IO{}, true, 3)
	var last int64
	step := func(policy string, ended, total int) {
		p.update(policy, sim.Progress{Ended: ended, Total: total})
		if d := p.done(); d < last {
			t.Fatalf("%s %d/%d: progress went back from %d to %d", policy, ended, total, last, d)
		} else {
			last = d
		}
	}
	step("a", 50, 100)  // 1/6 of the work
	step("a", 100, 100) // a done: 1/3
	step("b", 0, 1000)  // b starts with a larger total: still 1/3
	step("b", 500, 1000)
	step("c", 10, 10)
	step("b", 1000, 1000)
	if last != progressScale {
		t.Fatalf("done at %d, want %d", last, progressScale)
	}
}
