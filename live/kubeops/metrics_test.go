package kubeops

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestMetricsText checks the /metrics exposition line by line against
// hand-worked values.
func TestMetricsText(t *testing.T) {
	m := NewMetrics()
	srv := httptest.NewServer(Handler(m, NewHealth()))
	defer srv.Close()

	m.QueueLength(12)
	m.QueueLength(7) // a gauge: the last value wins
	m.Decision("start")
	m.Decision("start")
	m.Decision("preempt")
	m.Decision("custom") // an unknown kind gets its own series
	m.Error("bind")
	// Bind latencies: -1s counts as 0; 3ms, 250ms, 2s.
	// Buckets 0.001·2^k: le=0.001,0.002 hold {0}; le=0.004..0.128 hold
	// {0, 3ms}; le=0.256..1.024 add 250ms; le=2.048.. hold all four.
	m.BindLatency(-time.Second)
	m.BindLatency(3 * time.Millisecond)
	m.BindLatency(250 * time.Millisecond)
	m.BindLatency(2 * time.Second)
	m.SetLeader(true)

	code, body := get(t, srv.URL+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d\n%s", code, body)
	}
	want := []string{
		"# TYPE gpusim_pending_jobs gauge",
		"gpusim_pending_jobs 7",
		"# TYPE gpusim_decisions_total counter",
		`gpusim_decisions_total{kind="start"} 2`,
		`gpusim_decisions_total{kind="preempt"} 1`,
		`gpusim_decisions_total{kind="rollback"} 0`,
		`gpusim_decisions_total{kind="skip"} 0`,
		`gpusim_decisions_total{kind="dry-run"} 0`,
		`gpusim_decisions_total{kind="custom"} 1`,
		"# TYPE gpusim_bind_latency_seconds histogram",
		`gpusim_bind_latency_seconds_bucket{le="0.001"} 1`,
		`gpusim_bind_latency_seconds_bucket{le="0.002"} 1`,
		`gpusim_bind_latency_seconds_bucket{le="0.004"} 2`,
		`gpusim_bind_latency_seconds_bucket{le="0.128"} 2`,
		`gpusim_bind_latency_seconds_bucket{le="0.256"} 3`,
		`gpusim_bind_latency_seconds_bucket{le="1.024"} 3`,
		`gpusim_bind_latency_seconds_bucket{le="2.048"} 4`,
		`gpusim_bind_latency_seconds_bucket{le="65.536"} 4`,
		`gpusim_bind_latency_seconds_bucket{le="+Inf"} 4`,
		"gpusim_bind_latency_seconds_sum 2.253",
		"gpusim_bind_latency_seconds_count 4",
		"# TYPE gpusim_errors_total counter",
		`gpusim_errors_total{kind="bind"} 1`,
		`gpusim_errors_total{kind="evict"} 0`,
		`gpusim_errors_total{kind="event"} 0`,
		`gpusim_errors_total{kind="decode"} 0`,
		`gpusim_errors_total{kind="apiserver"} 0`,
		"# TYPE gpusim_leader gauge",
		"gpusim_leader 1",
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(body, "\n") {
		lines[l] = true
	}
	for _, w := range want {
		if !lines[w] {
			t.Errorf("/metrics lacks line %q", w)
		}
	}
	// 17 finite buckets + Inf.
	if n := strings.Count(body, "gpusim_bind_latency_seconds_bucket{"); n != 18 {
		t.Errorf("%d bind-latency buckets, want 18", n)
	}
	// The Go and process collectors are in the registry too.
	if !strings.Contains(body, "\ngo_goroutines ") {
		t.Error("/metrics lacks go_goroutines")
	}
	// The whole body parses as the Prometheus text format.
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatalf("exposition does not parse: %v", err)
	}
	if f := fams["gpusim_bind_latency_seconds"]; f == nil || f.GetMetric()[0].GetHistogram().GetSampleCount() != 4 {
		t.Errorf("parsed histogram: %v", f)
	}

	m.SetLeader(false)
	if _, body := get(t, srv.URL+"/metrics"); !strings.Contains(body, "\ngpusim_leader 0\n") {
		t.Error("gpusim_leader not 0 after SetLeader(false)")
	}
}

// TestMetricsOwnRegistry: two Metrics in one process do not collide (each
// has its own registry, never the global one).
func TestMetricsOwnRegistry(t *testing.T) {
	a, b := NewMetrics(), NewMetrics()
	a.QueueLength(3)
	b.QueueLength(5)
	for _, c := range []struct {
		m    *Metrics
		want string
	}{{a, "gpusim_pending_jobs 3"}, {b, "gpusim_pending_jobs 5"}} {
		srv := httptest.NewServer(Handler(c.m, NewHealth()))
		_, body := get(t, srv.URL+"/metrics")
		srv.Close()
		if !strings.Contains(body, "\n"+c.want+"\n") {
			t.Errorf("want %q in\n%s", c.want, body)
		}
	}
}

// TestHealthEndpoints: /healthz is ok while alive; /readyz is 503 until
// SetReady, and ok for a standby replica.
func TestHealthEndpoints(t *testing.T) {
	h := NewHealth()
	srv := httptest.NewServer(Handler(NewMetrics(), h))
	defer srv.Close()
	if code, body := get(t, srv.URL+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, _ := get(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before sync: %d, want 503", code)
	}
	h.SetReady(true)
	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/readyz after sync: %d %q", code, body)
	}
	h.SetReady(false)
	h.setStandby(true)
	if code, _ := get(t, srv.URL+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz of a standby: %d, want 200", code)
	}
	resp, err := http.Post(srv.URL+"/metrics", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /metrics: %d, want 405", resp.StatusCode)
	}
	if code, _ := get(t, srv.URL+"/nope"); code != http.StatusNotFound {
		t.Errorf("/nope: %d, want 404", code)
	}
}

// TestListenServe: Listen reports a taken address at once; Serve stops
// when its context ends.
func TestListenServe(t *testing.T) {
	s, err := Listen("127.0.0.1:0", Handler(NewMetrics(), NewHealth()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(s.Addr(), http.NotFoundHandler()); err == nil || !strings.Contains(err.Error(), "--metrics-addr "+s.Addr()) {
		t.Errorf("second Listen on %s: %v, want an error naming --metrics-addr", s.Addr(), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	if code, _ := get(t, "http://"+s.Addr()+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if _, err := http.Get("http://" + s.Addr() + "/healthz"); err == nil {
		t.Error("server still answers after shutdown")
	}
}
