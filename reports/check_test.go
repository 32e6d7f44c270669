package reports

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func smallDoc(t *testing.T) (*Doc, []byte) {
	t.Helper()
	res := smallResult(t)
	b, err := MarshalSummary(Summarize(res, Provenance{Scenario: "small"}, time.Second))
	if err != nil {
		t.Fatal(err)
	}
	d, err := ParseDoc("base.json", b)
	if err != nil {
		t.Fatal(err)
	}
	return d, b
}

func TestParseTolerances(t *testing.T) {
	got, err := ParseTolerances("gpu_utilization=0.01, wait_s.p99=5%")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != (Tolerance{"gpu_utilization", 0.01}) || got[1] != (Tolerance{"wait_s.p99", 0.05}) {
		t.Fatalf("%+v", got)
	}
	for _, bad := range []string{"", "x", "x=", "=1", "x=-1", "x=abc", "x=1,x=2", "x=NaN"} {
		if _, err := ParseTolerances(bad); err == nil {
			t.Errorf("%q: want error", bad)
		}
	}
	if _, err := ParseTolerances(DefaultTolerances); err != nil {
		t.Fatal(err)
	}
}

func TestMetricDirection(t *testing.T) {
	for path, want := range map[string]Direction{
		"wait_s.p99": HigherIsWorse, "classes.training.jct_s.mean": HigherIsWorse, "makespan_s": HigherIsWorse,
		"jobs.unfinished": HigherIsWorse, "gpu_utilization": LowerIsWorse, "jobs.completed": LowerIsWorse,
		"fairness.jain_users": LowerIsWorse, "per_queue.q1.completed": LowerIsWorse, "jobs.total": EitherIsWorse,
		"per_user.alice.wasted_gpu_hours": HigherIsWorse, "per_queue.q1.requeue_delay_s.p95": HigherIsWorse, "per_queue.q1.cost": HigherIsWorse,
	} {
		if got := MetricDirection(path); got != want {
			t.Errorf("%s: %v, want %v", path, got, want)
		}
	}
}

func TestLookup(t *testing.T) {
	d, _ := smallDoc(t)
	for path, want := range map[string]float64{"wait_s.p99": 100, "classes.training.wait_s.p95": 90,
		"gpu_utilization": 0.765, "jobs.completed": 4, "per_queue.q2.jct_s.mean": 77.5} {
		got, err := d.Lookup(path)
		if err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", path, got, err, want)
		}
	}
	for _, bad := range []string{"", "nope", "wait_s", "wait_s.p42", "classes.nope.wait_s.p50", "policy"} {
		if _, err := d.Lookup(bad); err == nil || !strings.Contains(err.Error(), "base.json") {
			t.Errorf("%q: err = %v", bad, err)
		}
	}
	// queue names containing dots are matched whole
	dd, err := ParseDoc("q.json", []byte(`{"per_queue":{"team.a":{"wait_s":{"p99":7}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if x, err := dd.Lookup("per_queue.team.a.wait_s.p99"); err != nil || x != 7 {
		t.Fatalf("dotted key: %v %v", x, err)
	}
}

func TestCompareIdenticalPasses(t *testing.T) {
	d, _ := smallDoc(t)
	tols, _ := ParseTolerances(DefaultTolerances + ",fairness.jain_users=0,jobs.total=0")
	rows, err := Compare(d, d, tols)
	if err != nil {
		t.Fatal(err)
	}
	if Regressed(rows) {
		t.Fatalf("identical summaries regressed: %+v", rows)
	}
}

func TestCompareRegression(t *testing.T) {
	base, b := smallDoc(t)
	// wait_s.p99 100 -> 110 (+10%), gpu_utilization 0.765 -> 0.76 (-0.65%), jct mean improves.
	cb := bytes.Replace(b, []byte(`"p99": 100,`), []byte(`"p99": 110,`), 1)
	cb = bytes.Replace(cb, []byte(`"gpu_utilization": 0.765`), []byte(`"gpu_utilization": 0.76`), 1)
	cb = bytes.Replace(cb, []byte(`"mean": 91.25`), []byte(`"mean": 80`), 1)
	cur, err := ParseDoc("cur.json", cb)
	if err != nil {
		t.Fatal(err)
	}
	tols, _ := ParseTolerances("wait_s.p99=0.05,gpu_utilization=0.01,jct_s.mean=0")
	rows, err := Compare(base, cur, tols)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{VerdictRegression, VerdictOK, VerdictImproved}
	for i, r := range rows {
		if r.Verdict != want[i] {
			t.Errorf("%s: %s, want %s (%+v)", r.Metric, r.Verdict, want[i], r)
		}
	}
	var out bytes.Buffer
	if err := WriteCheckTable(&out, rows); err != nil {
		t.Fatal(err)
	}
	wantTable := `METRIC           BASELINE  CURRENT  CHANGE   LIMIT   VERDICT
wait_s.p99       100       110      +10.00%  +5.00%  REGRESSION
gpu_utilization  0.765     0.76     -0.65%   -1.00%  ok
jct_s.mean       91.25     80       -12.33%  +0.00%  improved
`
	if out.String() != wantTable {
		t.Fatalf("table:\n%s\nwant:\n%s", out.String(), wantTable)
	}
	// A tighter utilization limit regresses; unknown metrics are errors.
	tols, _ = ParseTolerances("gpu_utilization=0.005")
	if rows, _ := Compare(base, cur, tols); !Regressed(rows) {
		t.Error("utilization -0.65% within 0.5%?")
	}
	tols, _ = ParseTolerances("wait_s.p98=0.1")
	if _, err := Compare(base, cur, tols); err == nil || !strings.Contains(err.Error(), "wait_s.p98") {
		t.Errorf("err = %v", err)
	}
}

func TestCompareZeroBaseline(t *testing.T) {
	base, _ := ParseDoc("b", []byte(`{"jobs":{"killed":0,"completed":0}}`))
	cur, _ := ParseDoc("c", []byte(`{"jobs":{"killed":1,"completed":3}}`))
	rows, err := Compare(base, cur, []Tolerance{{"jobs.killed", 10}, {"jobs.completed", 0}})
	if err != nil {
		t.Fatal(err)
	}
	if rows[0].Verdict != VerdictRegression || rows[1].Verdict != VerdictImproved {
		t.Fatalf("%+v", rows)
	}
}

func TestRangeSpec(t *testing.T) {
	cur, _ := smallDoc(t)
	rs, err := ParseRangeSpec("rs.yaml", []byte("apiVersion: gpusim/v1alpha1\nkind: RangeSpec\nmetrics:\n  wait_s.p99: {max: 3600}\n  gpu_utilization: {min: 0.7, max: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := CheckRanges(rs, cur)
	if err != nil {
		t.Fatal(err)
	}
	if RangeRegressed(rows) || len(rows) != 2 || rows[0].Metric != "gpu_utilization" {
		t.Fatalf("%+v", rows)
	}
	rs, _ = ParseRangeSpec("rs.yaml", []byte("apiVersion: gpusim/v1alpha1\nkind: RangeSpec\nmetrics:\n  gpu_utilization: {min: 0.8}\n"))
	rows, _ = CheckRanges(rs, cur)
	if !RangeRegressed(rows) {
		t.Fatal("0.765 < 0.8 not flagged")
	}
	var out bytes.Buffer
	WriteRangeTable(&out, rows)
	if want := "METRIC           CURRENT  MIN  MAX  VERDICT\ngpu_utilization  0.765    0.8  -    REGRESSION\n"; out.String() != want {
		t.Fatalf("got\n%s", out.String())
	}

	for text, wantErr := range map[string]string{
		"apiVersion: gpusim/v1alpha1\nkind: RangeSpec\nmetrics:\n  a: {max: 1}\nextra: 1\n": `rs.yaml:5: extra: unknown field "extra"`,
		"apiVersion: gpusim/v1alpha1\nkind: RangeSpec\nmetrics:\n  a: {mx: 1}\n":            `rs.yaml:4: metrics.a.mx: unknown field "mx"`,
		"apiVersion: v2\nkind: RangeSpec\nmetrics:\n  a: {max: 1}\n":                        `apiVersion: got "v2"`,
		"apiVersion: gpusim/v1alpha1\nkind: RangeSpec\nmetrics:\n  a: {}\n":                 "rs.yaml:4: metrics.a: set min, max or both",
		"apiVersion: gpusim/v1alpha1\nkind: RangeSpec\nmetrics:\n\n  a: {min: 2, max: 1}\n": "rs.yaml:5: metrics.a: min 2 > max 1",
		"apiVersion: gpusim/v1alpha1\nkind: RangeSpec\n":                                    "at least one metric",
		"": "empty range spec",
		"apiVersion: gpusim/v1alpha1\nkind: RangeSpec\nmetrics:\n  a: {max: x}\n": `rs.yaml:4: metrics.a.max: want a number, got "x"`,
	} {
		_, err := ParseRangeSpec("rs.yaml", []byte(text))
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%q: err = %v, want %q", text, err, wantErr)
		}
	}
	rs, _ = ParseRangeSpec("rs.yaml", []byte("apiVersion: gpusim/v1alpha1\nkind: RangeSpec\nmetrics:\n  wait_s.p98: {max: 1}\n"))
	if _, err := CheckRanges(rs, cur); err == nil || !strings.Contains(err.Error(), "rs.yaml:4") {
		t.Fatalf("err = %v", err)
	}
}
