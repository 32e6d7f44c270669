// Package kubetest runs a real Kubernetes control plane for end-to-end tests:
// etcd and kube-apiserver, built from the Go module proxy by
// scripts/ensure-e2e-deps.sh (make e2e-deps), started as child processes on
// free loopback ports in a temporary directory. It gives a client-go
// clientset, installs the CRDs the tests need (scheduler-plugins PodGroup,
// Kubeflow TFJob/PyTorchJob/MPIJob, JobSet, and Kueue's own CRDs), restarts the
// API server in place, and stands in for kubelets (FakeKubelet): bound pods go
// Running, then Succeeded after their gpusim.io/duration annotation times a
// time scale.
//
// There is no controller manager, scheduler or kubelet: tests bind pods
// themselves (pods/binding) and nothing garbage-collects or runs Job
// controllers. docs/e2e.md describes the suite and its costs.
//
// Tests that need the binaries call BinDirOrSkip: it skips when they are
// missing, and fails instead when GPUSIM_E2E_REQUIRE=1 (make e2e).
package kubetest
