package kubeops

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/tools/leaderelection"
)

// leaseHealthTimeout is how far past its lease's expiry a leader that has
// not noticed the loss may go before /healthz fails, kube-scheduler's value
// (NewLeaderHealthzAdaptor(20s) in cmd/kube-scheduler/app/server.go).
const leaseHealthTimeout = 20 * time.Second

// Health is the state behind /healthz and /readyz. The zero value is not
// ready; use NewHealth. Methods are safe for concurrent use.
//
//   - /healthz: 200 while the process serves, unless it leads and its lease
//     expired more than 20s ago without it stepping down (client-go's
//     leader-election watchdog, as kube-scheduler's /healthz): then 500 so
//     the kubelet restarts it.
//   - /readyz: 200 once the scheduler reported its informers synced
//     (SetReady(true), the core's Ready callback), or while this replica is
//     a healthy leader-election standby (it is ready to take over; its
//     informers start when it leads); 503 otherwise.
type Health struct {
	ready   atomic.Bool
	standby atomic.Bool
	lease   *leaderelection.HealthzAdaptor // has its own lock
}

// NewHealth returns a Health that is alive and not ready.
func NewHealth() *Health {
	return &Health{lease: leaderelection.NewLeaderHealthzAdaptor(leaseHealthTimeout)}
}

// SetReady records whether the scheduler's informers are synced.
func (h *Health) SetReady(ready bool) { h.ready.Store(ready) }

// setStandby records whether this replica is waiting for the lease.
func (h *Health) setStandby(standby bool) { h.standby.Store(standby) }

// setElector arms the lease check of /healthz.
func (h *Health) setElector(le *leaderelection.LeaderElector) {
	h.lease.SetLeaderElection(le)
}

// Healthy is the /healthz check: nil, or why the process should be
// restarted.
func (h *Health) Healthy(r *http.Request) error {
	return h.lease.Check(r)
}

// Ready is the /readyz check.
func (h *Health) Ready() bool { return h.ready.Load() || h.standby.Load() }

// Handler serves /healthz, /readyz and /metrics (m's registry, Prometheus
// text or OpenMetrics by content negotiation).
func Handler(m *Metrics, h *Health) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := h.Healthy(r); err != nil {
			http.Error(w, "unhealthy: "+err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if !h.Ready() {
			http.Error(w, "not ready: informers not synced", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry(), promhttp.HandlerOpts{
		Registry:          m.Registry(), // promhttp_metric_handler_errors_total
		EnableOpenMetrics: true,
	}))
	return mux
}

// Server is the operations HTTP server.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// Listen opens addr (host:port; ":0" picks a free port) for h. Errors
// (address in use, bad address) come back here, before any serving.
func Listen(addr string, h http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("kubeops: --metrics-addr %s: %w", addr, err)
	}
	return &Server{ln: ln, srv: &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
	}}, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Serve serves until ctx is cancelled, then shuts down (waiting up to 5s
// for requests in progress). It returns nil after a shutdown for ctx.
func (s *Server) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("kubeops: http: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("kubeops: http shutdown: %w", err)
	}
	return nil
}
