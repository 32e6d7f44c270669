// Package kueuefid holds the file formats of the Kueue fidelity fixtures
// (policies/kueue/testdata/fidelity/<name>/ for Kueue v0.17.0 and
// fidelity-v0.16.2/<name>/ for v0.16.2, docs/fidelity.md): what the recorder
// (internal/kueuefid/record, `make fidelity-kueue`) plays against the real
// Kueue controller, and what it writes back. The replay test
// (policies/kueue/fidelity_test.go) reads the same files without any daemon.
//
// A fixture directory holds:
//
//	manifests.yaml  Kueue objects (kueue.x-k8s.io/v1beta2), optionally a
//	                Configuration (config.kueue.x-k8s.io/v1beta2) whose
//	                fairSharing and similar blocks the recorder passes to
//	                the manager and gpusim's policy reads
//	params.yaml     the kueue policy's parameters (manifests: manifests.yaml,
//	                evictionGracePeriod: the driver's pod termination time)
//	jobs.csv        the jobs (see Job)
//	recorded.csv    one row per admission of a workload (see Run)
//	recorded.meta   versions, time scale, when and how it was recorded
//	cycles.csv      the manager's scheduling cycle starts (see Cycle)
//	seen.csv        when the manager saw each finish and release (see Seen)
//	want.yaml       the agreement the replay test requires
package kueuefid

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Job is one row of jobs.csv: a Workload with one PodSet of Replicas pods,
// each requesting GPUs nvidia.com/gpu, submitted to LocalQueue default/Queue
// at Submit seconds (simulated) and running Duration seconds once admitted.
// Priority is the Workload's spec.priority (0 when the column is empty).
type Job struct {
	ID               string
	Submit, Duration float64 // simulated seconds
	GPUs, Replicas   int32
	Queue            string
	Priority         int32
}

// jobCols are jobs.csv's columns; priority is optional.
var jobCols = []string{"id", "submit_s", "gpus", "replicas", "duration_s", "queue"}

// ReadJobs reads a fixture's jobs.csv. Errors name the file and line.
func ReadJobs(path string) ([]Job, error) {
	col, rows, err := readCSV(path, jobCols)
	if err != nil {
		return nil, err
	}
	var jobs []Job
	seen := map[string]bool{}
	for i, r := range rows {
		line := i + 2
		j := Job{ID: r[col["id"]], Queue: r[col["queue"]]}
		if j.ID == "" || seen[j.ID] {
			return nil, fmt.Errorf("%s:%d: id: empty or repeated %q", path, line, j.ID)
		}
		seen[j.ID] = true
		var errs []error
		num := func(field string, min float64) float64 {
			v, err := strconv.ParseFloat(r[col[field]], 64)
			if err != nil || math.IsNaN(v) || v < min {
				errs = append(errs, fmt.Errorf("%s:%d: %s: %q is not a number >= %g", path, line, field, r[col[field]], min))
			}
			return v
		}
		j.Submit = num("submit_s", 0)
		j.Duration = num("duration_s", 0)
		j.GPUs = int32(num("gpus", 1))
		j.Replicas = int32(num("replicas", 1))
		if k, ok := col["priority"]; ok && r[k] != "" {
			p, err := strconv.ParseInt(r[k], 10, 32)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s:%d: priority: %q is not an integer", path, line, r[k]))
			}
			j.Priority = int32(p)
		}
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// Run is one row of recorded.csv: one admission (quota reservation) of a
// Workload by the real Kueue and what followed, in simulated seconds from T0
// (the recording's start). Times are when the recorder's watch observed the
// change (millisecond resolution, at most the driver's latency late); NaN
// (an empty field) when it did not happen. AdmittedStamp is Kueue's own
// QuotaReserved lastTransitionTime (whole seconds, metav1.Time) from T0.
type Run struct {
	ID            string
	Run           int     // 1 for the first admission
	Created       float64 // when the recorder created the Workload
	Admitted      float64
	AdmittedStamp float64
	Flavor        string // the nvidia.com/gpu flavor of the first PodSet
	Evicted       float64
	EvictReason   string  // the Evicted condition's reason (Preempted, ...)
	Released      float64 // QuotaReserved observed False after an eviction
	Finished      float64 // the driver marked it Finished
}

var runCols = []string{"id", "run", "created_s", "admitted_s", "admitted_stamp_s", "flavor", "evicted_s", "evict_reason", "released_s", "finished_s"}

func fmtTime(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// WriteRuns writes recorded.csv, rows sorted by admission time, then ID.
func WriteRuns(w io.Writer, runs []Run) error {
	runs = slices.Clone(runs)
	slices.SortStableFunc(runs, func(a, b Run) int {
		if a.Admitted != b.Admitted {
			if a.Admitted < b.Admitted {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	cw := csv.NewWriter(w)
	if err := cw.Write(runCols); err != nil {
		return err
	}
	for _, r := range runs {
		if err := cw.Write([]string{r.ID, strconv.Itoa(r.Run), fmtTime(r.Created), fmtTime(r.Admitted), fmtTime(r.AdmittedStamp),
			r.Flavor, fmtTime(r.Evicted), r.EvictReason, fmtTime(r.Released), fmtTime(r.Finished)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// ReadRuns reads recorded.csv.
func ReadRuns(path string) ([]Run, error) {
	col, rows, err := readCSV(path, runCols)
	if err != nil {
		return nil, err
	}
	var out []Run
	for i, r := range rows {
		line := i + 2
		var errs []error
		t := func(field string) float64 {
			s := r[col[field]]
			if s == "" {
				return math.NaN()
			}
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s:%d: %s: %q is not a number", path, line, field, s))
			}
			return v
		}
		n, err := strconv.Atoi(r[col["run"]])
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("%s:%d: run: %q is not a positive integer", path, line, r[col["run"]]))
		}
		run := Run{ID: r[col["id"]], Run: n, Created: t("created_s"), Admitted: t("admitted_s"), AdmittedStamp: t("admitted_stamp_s"),
			Flavor: r[col["flavor"]], Evicted: t("evicted_s"), EvictReason: r[col["evict_reason"]], Released: t("released_s"), Finished: t("finished_s")}
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		out = append(out, run)
	}
	return out, nil
}

// Params is the part of params.yaml the recorder needs.
type Params struct {
	Manifests string `yaml:"manifests"`
	// EvictionGracePeriod is how long an evicted workload's pods take to
	// terminate: the driver clears the admission that long after Kueue set
	// Evicted (default 30s, as gpusim's policy).
	EvictionGracePeriod string `yaml:"evictionGracePeriod"`
}

// ReadParams reads params.yaml and returns the manifests path (resolved
// against the fixture directory) and the eviction grace period.
func ReadParams(dir string) (manifests string, grace time.Duration, err error) {
	path := filepath.Join(dir, "params.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		return "", 0, fmt.Errorf("kueuefid: %w", err)
	}
	var p Params
	if err := yaml.Unmarshal(b, &p); err != nil {
		return "", 0, fmt.Errorf("kueuefid: %s: %w", path, err)
	}
	if p.Manifests == "" {
		return "", 0, fmt.Errorf("kueuefid: %s: manifests: missing", path)
	}
	grace = 30 * time.Second
	if p.EvictionGracePeriod != "" {
		if grace, err = time.ParseDuration(p.EvictionGracePeriod); err != nil || grace < 0 {
			return "", 0, fmt.Errorf("kueuefid: %s: evictionGracePeriod: %q is not a duration >= 0", path, p.EvictionGracePeriod)
		}
	}
	return filepath.Join(dir, p.Manifests), grace, nil
}

// readCSV reads a CSV file with a header holding at least want's columns.
func readCSV(path string, want []string) (map[string]int, [][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("kueuefid: %w", err)
	}
	defer f.Close()
	cr := csv.NewReader(f)
	cr.FieldsPerRecord = 0
	rows, err := cr.ReadAll()
	if err != nil {
		return nil, nil, fmt.Errorf("kueuefid: %s: %w", path, err)
	}
	if len(rows) == 0 {
		return nil, nil, fmt.Errorf("kueuefid: %s:1: no header", path)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[strings.TrimSpace(h)] = i
	}
	for _, c := range want {
		if _, ok := col[c]; !ok {
			return nil, nil, fmt.Errorf("kueuefid: %s:1: %s: missing column", path, c)
		}
	}
	return col, rows[1:], nil
}

// Meta is recorded.meta: key: value lines.
type Meta map[string]string

// ReadMeta reads recorded.meta.
func ReadMeta(path string) (Meta, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("kueuefid: %w", err)
	}
	m := Meta{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(strings.TrimSpace(l), "#") {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m, nil
}

// Write writes m's keys in order.
func (m Meta) Write(w io.Writer, order []string) error {
	for _, k := range order {
		if _, err := fmt.Fprintf(w, "%s: %s\n", k, m[k]); err != nil {
			return err
		}
	}
	return nil
}
