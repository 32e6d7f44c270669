// Package kubeops holds the operational pieces around gpusim's Kubernetes
// scheduler (gpusim live --backend kubernetes): leader election on a
// coordination.k8s.io Lease, the /healthz, /readyz and /metrics HTTP
// endpoints, and the Prometheus metrics the scheduler core reports through
// its Observer. It does not import the core (live/kube): Metrics satisfies
// the core's Observer interface structurally. See docs/kubernetes-ops.md.
package kubeops
