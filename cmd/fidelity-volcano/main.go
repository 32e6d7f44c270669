// Command fidelity-volcano records the real Volcano scheduler on fidelity
// fixtures (policies/volcano/testdata/fidelity/<name>/): for each directory it
// starts etcd, kube-apiserver and vc-scheduler on loopback in a temporary
// directory, plays the job controller and the kubelets, and writes
// recorded.csv, recorded.meta, sessions.csv and volcano-scheduler.conf into
// the fixture.
// Run it through `make fidelity-volcano` (scripts/fidelity-volcano.sh), which
// builds the binaries first. docs/fidelity.md describes the method.
//
// Usage: fidelity-volcano -volcano DIR [-bin DIR] [-keep] FIXTURE_DIR...
package main

import (
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpusim/gpusim/internal/kubetest"
	"github.com/gpusim/gpusim/internal/volcanofid"
)

func main() {
	vcDir := flag.String("volcano", "", "scripts/ensure-volcano.sh's cache directory (bin/vc-scheduler, crds/)")
	binDir := flag.String("bin", "", "directory with etcd and kube-apiserver (default: kubetest.BinDir)")
	keep := flag.Bool("keep", false, "keep each run's temporary directory (logs)")
	timeout := flag.Duration("timeout", 10*time.Minute, "limit per fixture (real time)")
	flag.Parse()
	if *vcDir == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: fidelity-volcano -volcano DIR [-bin DIR] [-keep] FIXTURE_DIR...")
		os.Exit(2)
	}
	if *binDir == "" {
		d, err := kubetest.BinDir()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		*binDir = d
	}
	for _, dir := range flag.Args() {
		if err := recordOne(dir, *binDir, *vcDir, *keep, *timeout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func recordOne(dir, binDir, vcDir string, keep bool, timeout time.Duration) error {
	f, err := volcanofid.ReadFixture(dir)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "fidelity-volcano-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Fprintf(os.Stderr, "%s: keeping %s\n", dir, work)
	} else {
		defer os.RemoveAll(work)
	}
	start := time.Now()
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s: %6.1fs "+format+"\n", append([]any{dir, time.Since(start).Seconds()}, args...)...)
	}
	runs, meta, fit, err := volcanofid.Record(context.Background(), f, volcanofid.Options{
		BinDir: binDir, VolcanoDir: vcDir, WorkDir: work, Timeout: timeout, Logf: logf})
	if err != nil {
		return fmt.Errorf("%s: %w (logs in %s with -keep)", dir, err, work)
	}
	if err := writeRuns(filepath.Join(dir, "recorded.csv"), runs); err != nil {
		return err
	}
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\n", k, meta[k])
	}
	if err := os.WriteFile(filepath.Join(dir, "recorded.meta"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	var sb strings.Builder
	sb.WriteString("t_s\n")
	for _, t := range fit.Times {
		fmt.Fprintf(&sb, "%.3f\n", t)
	}
	if err := os.WriteFile(filepath.Join(dir, "sessions.csv"), []byte(sb.String()), 0o644); err != nil {
		return err
	}
	logf("recorded %d runs, %d sessions", len(runs), len(fit.Times))
	return nil
}

// writeRuns writes recorded.csv: one row per run, times in simulated seconds
// from T0 (3 decimals).
func writeRuns(path string, runs []volcanofid.Run) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(fh)
	_ = w.Write([]string{"id", "run", "evicted", "created_s", "start_s", "end_s", "nodes", "pg_created_s", "pg_uid", "evict_seen_s", "cached_s"})
	ff := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	for _, r := range runs {
		ev := "0"
		if r.Evicted {
			ev = "1"
		}
		cached := ""
		if r.Cached >= 0 {
			cached = ff(r.Cached)
		}
		seen := ""
		if r.Evicted {
			seen = ff(r.EvictSeen)
		}
		_ = w.Write([]string{r.Job, strconv.Itoa(r.Index), ev, ff(r.Created), ff(r.Start), ff(r.End),
			strings.Join(r.Nodes, "|"), strconv.FormatInt(r.PGCreated, 10), r.PGUID, seen, cached})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}
