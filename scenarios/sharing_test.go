package scenarios

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Without sharing configured, the outputs are byte-identical to those of the
// main branch before device-level sharing existed (commit 2379535: the demo with
// 400 jobs, fifo and easy-backfill). If an intended output change elsewhere breaks
// this test, recompute the hashes on the new base and say why in the commit.
func TestSharingOffMatchesMainOutputs(t *testing.T) {
	want := map[string]string{
		"fifo/jobs.csv":                    "0a1fa5b51c5356a2b468789065adb991e2cac4269b9e164e349a0d96f848781b",
		"fifo/jobs.parquet":                "7f35be705caa94469b71c0724d6b9991a68c4dc9f3146857383afdde31148112",
		"fifo/events.parquet":              "3ef039f6c9691ab8743ef4c074806d09ad6ed9930a41d0ebd7c61c17729576ff",
		"fifo/timeseries.parquet":          "139d0a35cbccd81cae975fbc1a0a70d6e8077d1ac92b44743bf61f2a84f96a62",
		"easy-backfill/jobs.csv":           "ee2357fb8fd2e0fc4ce0b2fae73b4a690c67097bc836b525c097f74431a49d48",
		"easy-backfill/jobs.parquet":       "829806dee0176f1d7b04aebe6f4e63572d271d72d92ebbc248703722870c3187",
		"easy-backfill/events.parquet":     "742703929ec4a2811bbc795d400d23b00991f14297fb21fc7369b530f1c81040",
		"easy-backfill/timeseries.parquet": "d2cc2e2a8a31248391e4373a70001b1e9f175c8c52327797726f542681719a22",
	}
	d := t.TempDir()
	runDemoInto(t, d, 1, nil, "fifo", "easy-backfill")
	for f, h := range want {
		b, err := os.ReadFile(filepath.Join(d, f))
		if err != nil {
			t.Fatal(err)
		}
		if got := sha256.Sum256(b); hex.EncodeToString(got[:]) != h {
			t.Errorf("%s changed without sharing configured", f)
		}
	}
	b, _ := os.ReadFile(filepath.Join(d, "fifo", "summary.json"))
	if bytes.Contains(b, []byte(`"sharing"`)) {
		t.Error("summary.json has a sharing block without sharing configured")
	}
}

// The time-slicing example runs deterministically (twice, and under
// GOMAXPROCS=1), co-locates jobs, and writes the sharing metrics.
func TestSharingExample(t *testing.T) {
	run := func(dir string, par int) []PolicyRun {
		sc, err := Load("examples/sharing-timeslice.yaml", nil)
		if err != nil {
			t.Fatal(err)
		}
		runs, err := Run(context.Background(), sc, RunOptions{OutDir: dir, Parallel: par})
		if err != nil {
			t.Fatal(err)
		}
		return runs
	}
	d := t.TempDir()
	runs := run(filepath.Join(d, "a"), 0)
	prev := runtime.GOMAXPROCS(1)
	run(filepath.Join(d, "b"), 1)
	runtime.GOMAXPROCS(prev)
	for _, r := range runs {
		sameFiles(t, filepath.Join(d, "a", r.Label), filepath.Join(d, "b", r.Label), "jobs.csv", "jobs.parquet", "events.parquet", "timeseries.parquet", "summary.json")
		s := r.Summary.Sharing
		if s == nil || s.SharedGPUHours <= 0 || s.GPUHoursByMode["timeslice"] <= 0 || s.FallbackColocations == 0 {
			t.Errorf("%s: sharing summary %+v", r.Label, s)
		}
		if r.Summary.Jobs.Completed != 400 {
			t.Errorf("%s: %d of 400 jobs completed", r.Label, r.Summary.Jobs.Completed)
		}
	}
	b, _ := os.ReadFile(filepath.Join(d, "a", runs[0].Label, "jobs.csv"))
	if head, _, _ := strings.Cut(string(b), "\n"); !strings.HasSuffix(head, ",mean_speed,min_speed,shared_s") {
		t.Errorf("jobs.csv header %q lacks the sharing columns", head)
	}
}

// Bad sharing fields are errors naming the file, line and field.
func TestSharingFieldErrors(t *testing.T) {
	src := `apiVersion: gpusim/v1alpha1
kind: Scenario
name: x
cluster:
  pools:
    - name: p
      template: dgx-h100
      nodes: 1
      sharing:
        mode: slices
        clients: 99
interference:
  default: 2
  switchOverhead: 1
workload:
  synthetic: {jobs: 10}
policies:
  - name: fifo
`
	wantParseErrors(t, src,
		`s.yaml:10: cluster.pools[0].sharing.mode: unknown sharing mode "slices"`,
		"s.yaml:11: cluster.pools[0].sharing.clients: must be in 0..48",
		"s.yaml:13: interference.default: must be in [0, 1]",
		"s.yaml:14: interference.switchOverhead: must be in [0, 1)",
	)
}

// sharingDefaults marks a class's jobs shareable: the demo's experiments
// (1-GPU ones) share time-sliced GPUs; gangs of the class stay exclusive.
func TestSharingDefaultsByClass(t *testing.T) {
	sc, err := Demo([]string{"workload.synthetic.jobs=300",
		"cluster.pools[0].sharing.mode=timeslice",
		"sharingDefaults.experiment.sharing=any", "sharingDefaults.experiment.gpuMemMiB=20000", "sharingDefaults.experiment.workload=resnet50"})
	if err != nil {
		t.Fatal(err)
	}
	runs, err := Run(context.Background(), sc, RunOptions{Policies: []string{"fifo"}})
	if err != nil {
		t.Fatal(err)
	}
	res := runs[0].Result
	shared := 0
	for i := range res.Jobs {
		j := &res.Jobs[i]
		if j.Spec.Class != "experiment" {
			if j.Spec.Sharing != 0 || j.Spec.Workload != "" {
				t.Fatalf("job %s (%s) got the experiment defaults", j.Spec.ID, j.Spec.Class)
			}
			continue
		}
		if j.Spec.TotalGPUs() != 1 && j.Spec.Sharing != 0 {
			t.Fatalf("gang %s made shareable", j.Spec.ID)
		}
		if j.SharedTime() > 0 {
			shared++
		}
	}
	if shared == 0 || runs[0].Summary.Sharing == nil || runs[0].Summary.Sharing.SharedGPUHours == 0 {
		t.Errorf("no experiment shared a GPU (%d shared jobs)", shared)
	}
	if _, err := Demo([]string{"sharingDefaults.trainingg.sharing=any"}); err == nil || !strings.Contains(err.Error(), `sharingDefaults.trainingg: unknown job class "trainingg"`) {
		t.Errorf("err = %v, want the unknown class named", err)
	}
}

// The calibrate -> simulate loop example reads its measured matrix: every
// co-location is measured (pairs only: 2 clients per GPU), none falls back, and
// sharing lowers the mean JCT against the same scenario on whole GPUs.
func TestSharingLoopExample(t *testing.T) {
	jct := map[string]float64{}
	for _, mode := range []string{"timeslice", "exclusive"} {
		sc, err := Load("../examples/sharing/scenario.yaml", []string{"cluster.pools[0].sharing.mode=" + mode})
		if err != nil {
			t.Fatal(err)
		}
		runs, err := Run(context.Background(), sc, RunOptions{Policies: []string{"fifo"}, NoLog: true})
		if err != nil {
			t.Fatal(err)
		}
		s := runs[0].Summary
		jct[mode] = s.JCTS.Mean
		if mode == "timeslice" && (s.Sharing.MeasuredColocations == 0 || s.Sharing.FallbackColocations != 0) {
			t.Errorf("measured %d, fallback %d co-locations", s.Sharing.MeasuredColocations, s.Sharing.FallbackColocations)
		}
	}
	if jct["timeslice"] >= jct["exclusive"] {
		t.Errorf("mean JCT with sharing %v, without %v", jct["timeslice"], jct["exclusive"])
	}
}

// wantParseErrors parses doc as s.yaml and fails t unless that fails with an
// error containing every one of wants (each a "file:line: field: ..." text).
func wantParseErrors(t *testing.T, doc string, wants ...string) {
	t.Helper()
	_, err := Parse([]byte(doc), "s.yaml", nil)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range wants {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
