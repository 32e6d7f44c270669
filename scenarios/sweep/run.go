package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/gpusim/gpusim/reports"
	"github.com/gpusim/gpusim/scenarios"
	"github.com/gpusim/gpusim/sim"
)

// MetaSchema identifies the sweep.json format.
const MetaSchema = "gpusim.sweep/v1"

// Meta is the content of sweep.json: what a (partial) sweep table holds.
type Meta struct {
	Schema string `json:"schema"`
	Name   string `json:"name"`
	// SweepSHA256 is the hex SHA-256 of the sweep file; shards must agree.
	SweepSHA256 string   `json:"sweep_sha256"`
	Scenario    string   `json:"scenario"` // base scenario path as written in the sweep
	Columns     []string `json:"columns"`  // grid columns of the table
	Points      int      `json:"points"`   // points in the whole sweep
	Shard       string   `json:"shard"`    // "i/n"; "0/1" for a whole (or merged) sweep
	Rows        int      `json:"rows"`     // points in this table
	Runs        bool     `json:"runs"`     // this directory holds per-point run directories under runs/
}

// Options control Run.
type Options struct {
	Parallel int                                // points at once (default GOMAXPROCS); results do not depend on it
	RunsDir  string                             // if set, point k writes RunsDir/<PointDir(k)>/ (scenario.yaml, <policy>/)
	Version  string                             // provenance
	Now      func() time.Time                   // wall clock for wall_seconds (nil = zero)
	Progress func(point string, p sim.Progress) // from each point's goroutine
	Done     func(p Point, s *reports.Summary)  // after each point (serialized)
}

// PointDir is the run directory name of point k: "point-" and k zero-padded to
// the digits of the last index.
func (sw *Sweep) PointDir(k int) string {
	w := len(fmt.Sprint(max(sw.NumPoints()-1, 0)))
	return fmt.Sprintf("point-%0*d", w, k)
}

// Run runs the given points (in parallel, each alone in its own engine) and
// returns their table rows in point order.
func (sw *Sweep) Run(ctx context.Context, points []Point, opts Options) (*reports.SweepTable, error) {
	par := opts.Parallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	rows := make([]reports.SweepRow, len(points))
	errs := make([]error, len(points))
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, p := range points {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				errs[i] = ctx.Err()
				return
			}
			s, err := sw.runPoint(ctx, p, opts)
			if err != nil {
				errs[i] = fmt.Errorf("point %d (%s): %w", p.Index, sw.Describe(p), err)
				return
			}
			rows[i] = reports.SweepRow{Point: int64(p.Index), Params: p.Params, Metrics: reports.SweepMetrics(s)}
			if opts.Done != nil {
				mu.Lock()
				opts.Done(p, s)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return &reports.SweepTable{Params: sw.Columns(), Rows: rows}, nil
}

func (sw *Sweep) runPoint(ctx context.Context, p Point, opts Options) (*reports.Summary, error) {
	sc, err := scenarios.Load(sw.ScenarioPath(), p.Sets)
	if err != nil {
		return nil, err
	}
	ro := scenarios.RunOptions{Policies: []string{p.Policy}, Parallel: 1, Version: opts.Version, Now: opts.Now,
		NoLog: opts.RunsDir == ""}
	if opts.RunsDir != "" {
		ro.OutDir = filepath.Join(opts.RunsDir, sw.PointDir(p.Index))
	}
	if opts.Progress != nil {
		key := sw.PointDir(p.Index)
		ro.Progress = func(_ string, pr sim.Progress) { opts.Progress(key, pr) }
	}
	runs, err := scenarios.Run(ctx, sc, ro)
	if err != nil {
		return nil, err
	}
	return runs[0].Summary, nil
}

// Meta returns the sweep.json content for a table of rows points of shard s.
func (sw *Sweep) Meta(s Shard, rows int, runs bool) *Meta {
	if s.N < 1 {
		s = Shard{0, 1}
	}
	return &Meta{Schema: MetaSchema, Name: sw.Name, SweepSHA256: sw.hash, Scenario: sw.Scenario,
		Columns: sw.Columns(), Points: sw.NumPoints(), Shard: s.String(), Rows: rows, Runs: runs}
}

// MarshalMeta returns sweep.json text (indented, trailing newline).
func MarshalMeta(m *Meta) ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ReadMeta reads a sweep.json; errors name the file.
func ReadMeta(path string) (*Meta, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: invalid JSON: %w", path, err)
	}
	if m.Schema != MetaSchema {
		return nil, fmt.Errorf("%s: schema %q is not supported (want %q)", path, m.Schema, MetaSchema)
	}
	if _, err := ParseShard(m.Shard); err != nil {
		return nil, fmt.Errorf("%s: shard: %w", path, err)
	}
	if m.Points < 1 || m.Rows < 0 || m.Rows > m.Points {
		return nil, fmt.Errorf("%s: points %d, rows %d: inconsistent", path, m.Points, m.Rows)
	}
	return &m, nil
}
