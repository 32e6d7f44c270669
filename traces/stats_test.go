package traces

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"sort"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStatsOpenBDefault checks trace stats on the openb default pod list against a
// computation straight from the CSV (nearest-rank percentiles).
func TestStatsOpenBDefault(t *testing.T) {
	path := openbDir + "openb_pod_list_default.csv"
	r, err := OpenJobs(FormatOpenBPods, path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	st, err := ComputeStats(r, 6212)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	recs = recs[1:]
	atof := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	var durs, subs []float64
	hist := map[string]int{}
	queues := map[string]int{}
	demand := 0.0
	for _, rec := range recs {
		start := rec[10]
		if start == "" {
			start = rec[8]
		}
		d := atof(rec[9]) - atof(start)
		durs = append(durs, d)
		subs = append(subs, atof(rec[8]))
		g := atof(rec[3]) * atof(rec[4]) / 1000
		hist[strconv.FormatFloat(g, 'f', -1, 64)]++
		queues[rec[6]]++
		demand += g * d
	}
	sort.Float64s(durs)
	sort.Float64s(subs)
	nr := func(xs []float64, p float64) float64 { return xs[int(math.Ceil(p/100*float64(len(xs))))-1] }
	var gaps []float64
	for i := 1; i < len(subs); i++ {
		gaps = append(gaps, subs[i]-subs[i-1])
	}
	sort.Float64s(gaps)
	if st.Jobs != 8152 || st.Rows != 8152 || st.SkippedTotal != 0 {
		t.Fatalf("jobs %d rows %d skipped %d", st.Jobs, st.Rows, st.SkippedTotal)
	}
	if st.FirstSubmitS != 0 || st.LastSubmitS != 12901761 || st.LastSubmitS != subs[len(subs)-1] {
		t.Fatalf("span %v..%v", st.FirstSubmitS, st.LastSubmitS)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"dur p50", st.DurationS.P50, nr(durs, 50)}, {"dur p90", st.DurationS.P90, nr(durs, 90)}, {"dur p99", st.DurationS.P99, nr(durs, 99)},
		{"dur max", st.DurationS.Max, durs[len(durs)-1]},
		{"gap p50", st.InterarrivalS.P50, nr(gaps, 50)}, {"gap p90", st.InterarrivalS.P90, nr(gaps, 90)}, {"gap p99", st.InterarrivalS.P99, nr(gaps, 99)},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	if math.Abs(st.GPUDemandGPUSec-demand) > 1e-6*demand {
		t.Errorf("demand %v want %v", st.GPUDemandGPUSec, demand)
	}
	if d := cmp.Diff(hist, st.GPUs); d != "" {
		t.Errorf("histogram: %s", d)
	}
	if d := cmp.Diff(queues, st.Queues); d != "" {
		t.Errorf("queues: %s", d)
	}
	if st.FractionalJobs != 3078 || st.CPUOnlyJobs != 1088 || st.GPUs["1"] != 6989-3078 {
		t.Errorf("fractional %d cpu %d whole-1 %d", st.FractionalJobs, st.CPUOnlyJobs, st.GPUs["1"])
	}
	want := demand / (6212 * (subs[len(subs)-1] - subs[0]))
	if st.OfferedLoad == nil || math.Abs(*st.OfferedLoad-want) > 1e-9 {
		t.Errorf("load %v want %v", st.OfferedLoad, want)
	}
	var buf bytes.Buffer
	if err := st.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"jobs", "skipped", "first_submit_s", "last_submit_s", "duration_s", "gpus", "gpu_demand_gpu_seconds"} {
		if _, ok := m[k]; !ok {
			t.Errorf("json lacks %s", k)
		}
	}
	if p := m["duration_s"].(map[string]any); p["p99"] == nil {
		t.Error("no p99")
	}
	buf.Reset()
	if err := st.WriteText(&buf); err != nil || !bytes.Contains(buf.Bytes(), []byte("8152 imported")) {
		t.Fatalf("%v\n%s", err, buf.String())
	}
}

func TestPercentiles(t *testing.T) {
	p := percentiles([]float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10})
	if p.Min != 1 || p.P50 != 5 || p.P90 != 9 || p.P99 != 10 || p.Max != 10 || p.Mean != 5.5 {
		t.Fatalf("%+v", p)
	}
	if (percentiles(nil) != Percentiles{}) {
		t.Fatal("empty")
	}
}
