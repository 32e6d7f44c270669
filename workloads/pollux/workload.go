package pollux

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Job is one row of an artifact workload CSV
// (`name,time,application,num_replicas,batch_size`).
type Job struct {
	Name string
	// Submit is the submission time in seconds from the start.
	Submit Seconds
	// App is one of AppNames.
	App string
	// Replicas and BatchSize are the "TunedJobs" configuration that the Tiresias
	// and Optimus baselines use (Pollux ignores them).
	Replicas, BatchSize int
	// Line is the job's line in its CSV file (0 when not read from one).
	Line int
}

// ReadWorkload parses a workload CSV. Errors name the file, line and column
// (`workload-6.csv:3: column time: ...`); unknown applications, negative times,
// replicas outside 1..64, batch sizes outside the application's curves and
// duplicate names are errors.
func ReadWorkload(r io.Reader, file string) ([]Job, error) {
	apps, err := Apps()
	if err != nil {
		return nil, err
	}
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	want := []string{"name", "time", "application", "num_replicas", "batch_size"}
	head, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s:1: header: empty file, want %s", file, strings.Join(want, ","))
	}
	if err != nil {
		return nil, fmt.Errorf("%s:1: header: %w", file, err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimSpace(h)] = i
	}
	for _, w := range want {
		if _, ok := col[w]; !ok {
			return nil, fmt.Errorf("%s:1: header: missing column %s (want %s)", file, w, strings.Join(want, ","))
		}
	}
	var jobs []Job
	seen := map[string]int{}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("%s:%d: %v", file, pe.Line, pe.Err)
			}
			return nil, fmt.Errorf("%s:%d: %w", file, line, err)
		}
		if len(rec) != len(head) {
			return nil, fmt.Errorf("%s:%d: want %d columns, got %d", file, line, len(head), len(rec))
		}
		get := func(c string) string { return strings.TrimSpace(rec[col[c]]) }
		j := Job{Name: get("name"), App: get("application"), Line: line}
		if j.Name == "" {
			return nil, fmt.Errorf("%s:%d: column name: empty", file, line)
		}
		if prev, ok := seen[j.Name]; ok {
			return nil, fmt.Errorf("%s:%d: column name: %q already on line %d", file, line, j.Name, prev)
		}
		seen[j.Name] = line
		t, err := strconv.ParseFloat(get("time"), 64)
		if err != nil || t < 0 || math.IsInf(t, 0) || math.IsNaN(t) {
			return nil, fmt.Errorf("%s:%d: column time: want seconds >= 0, got %q", file, line, get("time"))
		}
		j.Submit = t
		a, ok := apps[j.App]
		if !ok {
			return nil, fmt.Errorf("%s:%d: column application: unknown %q (want one of %s)", file, line, j.App, strings.Join(AppNames(), ", "))
		}
		if j.Replicas, err = strconv.Atoi(get("num_replicas")); err != nil || j.Replicas < 1 || j.Replicas > 64 {
			return nil, fmt.Errorf("%s:%d: column num_replicas: want a whole number in 1..64, got %q", file, line, get("num_replicas"))
		}
		if j.BatchSize, err = strconv.Atoi(get("batch_size")); err != nil || j.BatchSize < a.InitBatchSize || j.BatchSize > a.MaxBatchSize {
			return nil, fmt.Errorf("%s:%d: column batch_size: want a whole number in %d..%d for %s, got %q", file, line, a.InitBatchSize, a.MaxBatchSize, j.App, get("batch_size"))
		}
		jobs = append(jobs, j)
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("%s: no jobs", file)
	}
	return jobs, nil
}
