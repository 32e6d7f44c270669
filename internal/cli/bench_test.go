//go:build linux

package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gpusim/gpusim/reports"
)

// benchScenario is the issue-16 end-to-end case: 1,280 DGX H100 nodes (10,240
// GPUs, 32 nodes per leaf) replaying a native trace under fifo.
const benchScenario = `apiVersion: gpusim/v1alpha1
kind: Scenario
name: bench-run-command
seed: 42
cluster:
  pools:
    - name: h100
      template: dgx-h100
      nodes: 1280
  fabric:
    nodesPerLeaf: 32
workload:
  trace:
    format: native
    path: jobs.csv
policies:
  - name: fifo
`

// BenchmarkRunCommand1M measures the whole `gpusim run s.yaml --quiet -o DIR`
// command on a 1,000,000-job native CSV trace (`gpusim workload generate --gpus
// 10240 --jobs 1000000 --load 0.9 --seed 42`) on 10,240 GPUs under fifo: trace
// parsing, engine, summary and all five output files. Each iteration runs the
// command in a child process (this test binary re-executed as "gpusim", the
// testscript mechanism of TestMain), so besides ns/op it reports the child's peak
// resident set (rusage maxrss) as peak-RSS-MiB, simulated events per wall second
// and wall ns per job. It is skipped under -short; `make bench-full` runs it:
//
//	go test ./internal/cli -run '^$' -bench BenchmarkRunCommand1M -benchtime 3x
func BenchmarkRunCommand1M(b *testing.B) {
	if testing.Short() {
		b.Skip("1M-job end-to-end run; not under -short")
	}
	const jobs = 1_000_000
	dir := b.TempDir()
	trace := filepath.Join(dir, "jobs.csv")
	var out, errb bytes.Buffer
	if code := Main([]string{"workload", "generate", "--gpus", "10240", "--jobs", strconv.Itoa(jobs), "--load", "0.9", "--seed", "42", "-o", trace}, nil, &out, &errb); code != 0 {
		b.Fatalf("workload generate: exit %d: %s", code, errb.String())
	}
	scen := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scen, []byte(benchScenario), 0o644); err != nil {
		b.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	var wall time.Duration
	var peakKiB int64
	var events int64
	for i := 0; i < b.N; i++ {
		outDir := filepath.Join(dir, fmt.Sprintf("out%d", i))
		var stderr bytes.Buffer
		cmd := &exec.Cmd{Path: self, Args: []string{"gpusim", "run", scen, "--quiet", "-o", outDir}, Stderr: &stderr}
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("gpusim run: %v: %s", err, stderr.String())
		}
		wall += time.Since(t0)
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			peakKiB = max(peakKiB, ru.Maxrss) // KiB on Linux
		}
		s, err := reports.ReadSummary(filepath.Join(outDir, "fifo", reports.SummaryFile))
		if err != nil {
			b.Fatal(err)
		}
		if s.Jobs.Total != jobs || s.Jobs.Completed == 0 {
			b.Fatalf("run replayed %d jobs (%d completed), want %d", s.Jobs.Total, s.Jobs.Completed, jobs)
		}
		events += s.Events
		if err := os.RemoveAll(outDir); err != nil {
			b.Fatal(err)
		}
	}
	// ns/op from the harness includes removing the outputs; these metrics do not.
	b.ReportMetric(float64(wall.Nanoseconds())/float64(b.N), "wall-ns/op")
	b.ReportMetric(float64(peakKiB)/1024, "peak-RSS-MiB")
	b.ReportMetric(float64(events)/wall.Seconds(), "events/s")
	b.ReportMetric(float64(wall.Nanoseconds())/float64(int64(b.N)*jobs), "ns/job")
}
