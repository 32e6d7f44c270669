package kubeops

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Known label values. They are registered with value 0 when Metrics is
// made, so a scrape shows every series from the start (a rate() over a
// series that appears only at its first increment misses that increment).
// Other values are accepted too and get their own series.
var (
	// DecisionKinds are the decisions the scheduler core reports.
	DecisionKinds = []string{"start", "preempt", "rollback", "skip", "dry-run"}
	// ErrorKinds are the error classes the scheduler core reports.
	ErrorKinds = []string{"bind", "evict", "event", "decode", "apiserver"}
)

// BindLatencyBuckets are the upper bounds, in seconds, of
// gpusim_bind_latency_seconds: 1 ms doubling to 65.5 s (17 buckets), the
// scheme of kube-scheduler's scheduling_attempt_duration_seconds
// (ExponentialBuckets(0.001, 2, 15)) extended by two buckets for gangs that
// wait for capacity.
var BindLatencyBuckets = prometheus.ExponentialBuckets(0.001, 2, 17)

// Metrics holds the scheduler's Prometheus metrics in a registry of its own
// (never prometheus.DefaultRegisterer, so two schedulers in one process, as
// in tests, do not collide). It implements the scheduler core's Observer
// interface (QueueLength, Decision, BindLatency, Error) structurally; all
// methods are safe for concurrent use and do not allocate for the known
// label values after the first call.
type Metrics struct {
	reg       *prometheus.Registry
	pending   prometheus.Gauge
	decisions *prometheus.CounterVec
	bindLat   prometheus.Histogram
	errors    *prometheus.CounterVec
	leader    prometheus.Gauge
}

// NewMetrics makes the metrics and registers them, with the Go runtime and
// process collectors, in a new registry (see Registry).
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpusim_pending_jobs",
			Help: "Jobs (gangs) waiting to be scheduled after the last scheduling cycle.",
		}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpusim_decisions_total",
			Help: "Scheduling decisions by kind (start, preempt, rollback, skip, dry-run).",
		}, []string{"kind"}),
		bindLat: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gpusim_bind_latency_seconds",
			Help:    "Time from the last pod of a gang being observed pending to its last bind.",
			Buckets: BindLatencyBuckets,
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpusim_errors_total",
			Help: "Errors by kind (bind, evict, event, decode, apiserver).",
		}, []string{"kind"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpusim_leader",
			Help: "1 while this replica holds the leader lease (always 1 without leader election), else 0.",
		}),
	}
	m.reg.MustRegister(m.pending, m.decisions, m.bindLat, m.errors, m.leader,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, k := range DecisionKinds {
		m.decisions.WithLabelValues(k)
	}
	for _, k := range ErrorKinds {
		m.errors.WithLabelValues(k)
	}
	return m
}

// Registry is the registry the metrics are in, for Handler or for
// registering more collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// QueueLength sets gpusim_pending_jobs to the number of pending jobs.
func (m *Metrics) QueueLength(pending int) { m.pending.Set(float64(pending)) }

// Decision counts one decision of the given kind.
func (m *Metrics) Decision(kind string) { m.decisions.WithLabelValues(kind).Inc() }

// BindLatency observes one gang's bind latency (negative durations count
// as 0).
func (m *Metrics) BindLatency(d time.Duration) {
	m.bindLat.Observe(max(d, 0).Seconds())
}

// Error counts one error of the given kind.
func (m *Metrics) Error(kind string) { m.errors.WithLabelValues(kind).Inc() }

// SetLeader sets gpusim_leader to 1 (true) or 0.
func (m *Metrics) SetLeader(leading bool) {
	v := 0.0
	if leading {
		v = 1
	}
	m.leader.Set(v)
}
