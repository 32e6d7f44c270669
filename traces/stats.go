package traces

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/gpusim/gpusim/sim"
)

// Percentiles summarises a distribution. Percentiles use the nearest-rank method:
// pX is the smallest value with at least X% of the values <= it.
type Percentiles struct {
	Min  float64 `json:"min"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// Stats describes a job trace (see ComputeStats). Times are in seconds.
type Stats struct {
	File         string         `json:"file"`
	Format       string         `json:"format"`
	Rows         int            `json:"rows"`
	Jobs         int            `json:"jobs"`
	Skipped      map[string]int `json:"skipped"`
	SkippedTotal int            `json:"skipped_total"`
	FirstSubmitS float64        `json:"first_submit_s"`
	LastSubmitS  float64        `json:"last_submit_s"`
	SpanS        float64        `json:"span_s"`
	DurationS    Percentiles    `json:"duration_s"`
	// InterarrivalS is over consecutive submit times in time order.
	InterarrivalS Percentiles `json:"interarrival_s"`
	// GPUs is a histogram of the GPU request per job (replicas x gpus x share, in
	// GPUs, e.g. "0.5", "1", "16").
	GPUs            map[string]int `json:"gpus"`
	FractionalJobs  int            `json:"fractional_jobs"`
	MultiReplica    int            `json:"multi_replica_jobs"`
	CPUOnlyJobs     int            `json:"cpu_only_jobs"`
	GPUDemandGPUSec float64        `json:"gpu_demand_gpu_seconds"`
	Queues          map[string]int `json:"queues"`
	Classes         map[string]int `json:"classes"`
	// Users holds the 50 users with most jobs; UsersTotal counts all users.
	Users      map[string]int `json:"users"`
	UsersTotal int            `json:"users_total"`
	// ClusterGPUs and OfferedLoad are set when a cluster size is given: offered
	// load = GPU demand (GPU-seconds) / (ClusterGPUs x SpanS).
	ClusterGPUs int64    `json:"cluster_gpus,omitempty"`
	OfferedLoad *float64 `json:"offered_load,omitempty"`
	Notes       []string `json:"notes,omitempty"`
}

// ComputeStats reads every job of r. Memory: two float64 per job (for the
// percentiles) plus one map entry per distinct user and queue. clusterGPUs > 0
// adds the offered load.
func ComputeStats(r JobReader, clusterGPUs int64) (*Stats, error) {
	st := &Stats{GPUs: map[string]int{}, Queues: map[string]int{}, Classes: map[string]int{}, Users: map[string]int{}}
	var durs, submits []float64
	users := map[string]int{}
	for {
		j, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		d := j.Duration.Seconds()
		durs = append(durs, d)
		submits = append(submits, j.Submit.Seconds())
		demand := j.GPUDemandMilli()
		st.GPUs[gpuLabel(demand)]++
		if j.Fractional() {
			st.FractionalJobs++
		}
		if j.Replicas > 1 {
			st.MultiReplica++
		}
		if demand == 0 {
			st.CPUOnlyJobs++
		}
		st.GPUDemandGPUSec += float64(demand) / 1000 * d
		st.Queues[j.Queue]++
		cls := j.Class
		if cls == "" {
			cls = sim.ClassUnknown
		}
		st.Classes[string(cls)]++
		users[j.User]++
	}
	rep := r.Report()
	st.File, st.Format, st.Rows, st.Skipped, st.Notes = rep.File, rep.Format, rep.Rows, rep.Skipped, rep.Notes
	st.SkippedTotal = rep.SkippedTotal()
	if st.Skipped == nil {
		st.Skipped = map[string]int{}
	}
	st.Jobs = len(durs)
	slices.Sort(submits)
	if n := len(submits); n > 0 {
		st.FirstSubmitS, st.LastSubmitS = submits[0], submits[n-1]
		st.SpanS = st.LastSubmitS - st.FirstSubmitS
		gaps := make([]float64, 0, n)
		for i := 1; i < n; i++ {
			gaps = append(gaps, submits[i]-submits[i-1])
		}
		st.InterarrivalS = percentiles(gaps)
	}
	st.DurationS = percentiles(durs)
	st.UsersTotal = len(users)
	type uc struct {
		u string
		n int
	}
	list := make([]uc, 0, len(users))
	for u, n := range users {
		list = append(list, uc{u, n})
	}
	sort.Slice(list, func(a, b int) bool {
		if list[a].n != list[b].n {
			return list[a].n > list[b].n
		}
		return list[a].u < list[b].u
	})
	for i := 0; i < len(list) && i < 50; i++ {
		st.Users[list[i].u] = list[i].n
	}
	if clusterGPUs > 0 {
		st.ClusterGPUs = clusterGPUs
		load := 0.0
		if st.SpanS > 0 {
			load = st.GPUDemandGPUSec / (float64(clusterGPUs) * st.SpanS)
		}
		st.OfferedLoad = &load
	}
	return st, nil
}

// gpuLabel formats milli-GPUs as GPUs without trailing zeros ("0.46", "8").
func gpuLabel(milli int64) string {
	return strconv.FormatFloat(float64(milli)/1000, 'f', -1, 64)
}

// percentiles sorts xs in place and summarises it (nearest rank).
func percentiles(xs []float64) Percentiles {
	if len(xs) == 0 {
		return Percentiles{}
	}
	slices.Sort(xs)
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	rank := func(p float64) float64 {
		k := int(math.Ceil(p / 100 * float64(len(xs))))
		if k < 1 {
			k = 1
		}
		return xs[k-1]
	}
	return Percentiles{Min: xs[0], P50: rank(50), P90: rank(90), P99: rank(99), Max: xs[len(xs)-1], Mean: sum / float64(len(xs))}
}

// WriteJSON writes the stats as indented JSON.
func (s *Stats) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(s)
}

// WriteText writes a human-readable summary; maps are sorted (GPU sizes
// numerically, queues by count).
func (s *Stats) WriteText(w io.Writer) error {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("file:     %s (%s)\n", s.File, s.Format)
	p("rows:     %d read, %d imported, %d skipped\n", s.Rows, s.Jobs, s.SkippedTotal)
	for _, k := range slices.Sorted(maps.Keys(s.Skipped)) {
		p("  skipped %d: %s\n", s.Skipped[k], k)
	}
	p("submit:   %s .. %s (span %s)\n", fmtSec(s.FirstSubmitS), fmtSec(s.LastSubmitS), fmtSec(s.SpanS))
	pr := func(name string, q Percentiles) {
		p("%-9s min %s  p50 %s  p90 %s  p99 %s  max %s  mean %s\n", name, fmtSec(q.Min), fmtSec(q.P50), fmtSec(q.P90), fmtSec(q.P99), fmtSec(q.Max), fmtSec(q.Mean))
	}
	pr("duration:", s.DurationS)
	pr("arrivals:", s.InterarrivalS)
	p("GPU demand: %.6g GPU-seconds (%.6g GPU-hours)\n", s.GPUDemandGPUSec, s.GPUDemandGPUSec/3600)
	if s.OfferedLoad != nil {
		p("offered load on %d GPUs: %.4f\n", s.ClusterGPUs, *s.OfferedLoad)
	}
	p("GPU request per job (%d fractional, %d multi-replica, %d CPU-only):\n", s.FractionalJobs, s.MultiReplica, s.CPUOnlyJobs)
	sizes := make([]string, 0, len(s.GPUs))
	for k := range s.GPUs {
		sizes = append(sizes, k)
	}
	sort.Slice(sizes, func(a, b int) bool {
		x, _ := strconv.ParseFloat(sizes[a], 64)
		y, _ := strconv.ParseFloat(sizes[b], 64)
		return x < y
	})
	for _, k := range sizes {
		p("  %8s GPUs: %d\n", k, s.GPUs[k])
	}
	byCount := func(title string, m map[string]int, limit int) {
		keys := slices.Sorted(maps.Keys(m))
		sort.SliceStable(keys, func(a, b int) bool { return m[keys[a]] > m[keys[b]] })
		p("%s:\n", title)
		for i, k := range keys {
			if i == limit {
				p("  ... %d more\n", len(keys)-limit)
				break
			}
			name := k
			if name == "" {
				name = "(none)"
			}
			p("  %-20s %d\n", name, m[k])
		}
	}
	byCount("queues", s.Queues, 20)
	byCount("classes", s.Classes, 20)
	byCount(fmt.Sprintf("users (%d in all)", s.UsersTotal), s.Users, 10)
	for _, n := range s.Notes {
		p("note: %s\n", n)
	}
	return nil
}

func fmtSec(s float64) string { return strconv.FormatFloat(math.Round(s*1000)/1000, 'f', -1, 64) + "s" }
