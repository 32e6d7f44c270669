// Package kube is gpusim's Kubernetes backend: a secondary scheduler that runs
// any registered sim.Policy, unchanged, against a real API server.
//
// Informers on nodes, pods (spec.schedulerName = Options.SchedulerName),
// PodGroups and PriorityClasses feed a single driver goroutine that owns a
// sim.Live: nodes become the cluster model, pending pods become jobs (gangs
// from PodGroups, Kubeflow, JobSet and indexed Job pods, translated by
// traces/k8smanifest), and the policy's plan becomes pods/binding calls
// (all-or-nothing per gang) and policy/v1 Evictions. See docs/live.md.
package kube
