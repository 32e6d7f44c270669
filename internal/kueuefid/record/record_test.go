package main

import (
	"slices"
	"testing"

	"github.com/gpusim/gpusim/internal/kueuefid"
)

// The fixture's Configuration blocks reach the manager; the harness's
// settings win over the fixture's; feature gates merge.
func TestManagerConfig(t *testing.T) {
	fixture := map[string]any{
		"apiVersion":   "config.kueue.x-k8s.io/v1beta2",
		"kind":         "Configuration",
		"fairSharing":  map[string]any{"preemptionStrategies": []any{"LessThanOrEqualToFinalShare"}},
		"namespace":    "elsewhere",
		"featureGates": map[string]any{"TopologyAwareScheduling": true},
	}
	cfg := managerConfig(fixture, "/certs", 9443, 8081, 8443)
	if cfg["fairSharing"] == nil {
		t.Fatal("fairSharing dropped")
	}
	if cfg["namespace"] != kueueNamespace {
		t.Fatalf("namespace %v, want %s", cfg["namespace"], kueueNamespace)
	}
	wh := cfg["webhook"].(map[string]any)
	if wh["port"] != 9443 || wh["host"] != "127.0.0.1" || wh["certDir"] != "/certs" {
		t.Fatalf("webhook %v", wh)
	}
	if cfg["internalCertManagement"].(map[string]any)["enable"] != false {
		t.Fatal("internal certificate management must be off (the harness's certificates are used)")
	}
	fg := cfg["featureGates"].(map[string]any)
	if fg["VisibilityOnDemand"] != false || fg["TopologyAwareScheduling"] != true {
		t.Fatalf("feature gates %v", fg)
	}
	if fixture["namespace"] != "elsewhere" {
		t.Fatal("the fixture's map was modified")
	}
}

// v0.16.2's manager has no --visibility-server-port flag; v0.17.0's has.
func TestManagerArgs(t *testing.T) {
	has := func(version string) bool {
		return slices.Contains(managerArgs(version, "c", "k", 8082), "--visibility-server-port=8082")
	}
	if has("v0.16.2") || !has("v0.17.0") || !has("v0.18.1") || !has("v1.0.0") {
		t.Fatalf("v0.16.2 %v v0.17.0 %v v0.18.1 %v v1.0.0 %v", has("v0.16.2"), has("v0.17.0"), has("v0.18.1"), has("v1.0.0"))
	}
	if a := managerArgs("v0.16.2", "c", "k", 1); a[0] != "--config=c" || a[1] != "--kubeconfig=k" || a[len(a)-1] != "--zap-log-level=6" {
		t.Fatalf("args %v", a)
	}
}

func TestHasKueueRule(t *testing.T) {
	kueueHook := map[string]any{"rules": []any{map[string]any{"apiGroups": []any{"kueue.x-k8s.io"}}}}
	jobHook := map[string]any{"rules": []any{map[string]any{"apiGroups": []any{"batch"}}}}
	if !hasKueueRule(kueueHook) || hasKueueRule(jobHook) || hasKueueRule(map[string]any{}) {
		t.Fatal("hasKueueRule")
	}
}

// A Workload has one PodSet of replicas pods requesting gpus GPUs each.
func TestWorkloadObject(t *testing.T) {
	o := workloadObject(kueuefid.Job{ID: "j1", GPUs: 4, Replicas: 2, Queue: "team-a", Priority: 7})
	if o.GetName() != "j1" || o.GetNamespace() != "default" {
		t.Fatalf("meta %v", o.Object["metadata"])
	}
	spec := o.Object["spec"].(map[string]any)
	ps := spec["podSets"].([]any)[0].(map[string]any)
	if spec["queueName"] != "team-a" || spec["priority"] != int64(7) || ps["count"] != int64(2) {
		t.Fatalf("spec %v", spec)
	}
	c := ps["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	if got := c["resources"].(map[string]any)["requests"].(map[string]any)["nvidia.com/gpu"]; got != "4" {
		t.Fatalf("gpu request %v", got)
	}
}
