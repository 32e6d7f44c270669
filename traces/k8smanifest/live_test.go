package k8smanifest

import (
	"strings"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

func TestPodsJob(t *testing.T) {
	pod := func(name, gpus, extra string) File {
		return File{Name: name, Data: []byte(`apiVersion: v1
kind: Pod
metadata: {name: ` + name + `, namespace: team, labels: {kueue.x-k8s.io/queue-name: lq}, annotations: {gpusim.io/duration: 90s}}
spec:
  priority: 7
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: "` + gpus + `"}}}]
` + extra)}
	}
	s, _, err := PodsJob("team/g", []File{pod("a", "4", ""), pod("b", "4", ""), pod("launcher", "0", "")})
	if err != nil {
		t.Fatal(err)
	}
	if s.ID != "team/g" || s.Replicas != 2 || s.GPUsPerReplica != 4 || s.Duration != sim.Seconds(90) || s.Priority != 7 || s.Queue != "lq" || s.Team != "team" {
		t.Fatalf("%+v", s)
	}
	for name, files := range map[string][]File{
		"priority class":  {pod("a", "1", "  priorityClassName: high\n")},
		"unequal":         {pod("a", "1", ""), pod("b", "2", "")},
		"not a pod":       {{Name: "j", Data: []byte("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {template: {spec: {containers: [{name: c}]}}}\n")}},
		"unknown field":   {pod("a", "1", "  bogus: 1\n")},
		"fractional GPUs": {pod("a", "0.5", "")},
		"none":            nil,
	} {
		if _, _, err := PodsJob("x", files); err == nil {
			t.Errorf("%s: accepted", name)
		} else if name == "unknown field" && !strings.Contains(err.Error(), "unknown field") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
