package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestExampleSweep runs examples/sweep/sweep.yaml (36 points) whole and as
// three shards, and checks the merge equals the whole table, and that the
// Kubernetes manifest's shard count matches its completions.
func TestExampleSweep(t *testing.T) {
	ex := filepath.Join("..", "..", "examples", "sweep")
	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Main(args, nil, &out, &errb); code != 0 {
			t.Fatalf("gpusim %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
		}
		return out.String()
	}
	list := run("sweep", filepath.Join(ex, "sweep.yaml"), "--list")
	if n := strings.Count(list, "\n"); n != 36 {
		t.Fatalf("example sweep has %d points, want 36 (docs say so)", n)
	}
	run("sweep", filepath.Join(ex, "sweep.yaml"), "-o", filepath.Join(dir, "whole"), "-q")
	var shards []string
	for _, s := range []string{"0", "1", "2"} {
		d := filepath.Join(dir, "shard-"+s)
		run("sweep", filepath.Join(ex, "sweep.yaml"), "--shard", s+"/3", "-o", d, "-q")
		shards = append(shards, d)
	}
	run(append([]string{"merge", "-o", filepath.Join(dir, "merged")}, shards...)...)
	for _, f := range []string{"sweep.csv", "sweep.parquet", "sweep.json"} {
		a, err := os.ReadFile(filepath.Join(dir, "whole", f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "merged", f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s: merged shards differ from the whole sweep", f)
		}
	}

	b, err := os.ReadFile(filepath.Join(ex, "k8s-indexed-job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var job struct {
		Kind string
		Spec struct {
			CompletionMode string `yaml:"completionMode"`
			Completions    int
			Template       struct {
				Spec struct {
					Containers []struct {
						Env  []struct{ Name, Value string }
						Args []string
					}
				}
			}
		}
	}
	if err := yaml.Unmarshal(b, &job); err != nil {
		t.Fatal(err)
	}
	c := job.Spec.Template.Spec.Containers
	if job.Kind != "Job" || job.Spec.CompletionMode != "Indexed" || len(c) != 1 || len(c[0].Env) != 1 ||
		c[0].Env[0].Value != "3" || job.Spec.Completions != 3 || !strings.Contains(strings.Join(c[0].Args, " "), "--shard \"${JOB_COMPLETION_INDEX}/${SHARDS}\"") {
		t.Errorf("k8s manifest: %+v", job)
	}
}
