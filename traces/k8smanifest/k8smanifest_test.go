package k8smanifest

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpusim/gpusim/sim"
)

func parse(t *testing.T, yaml string, schedule string) (*Result, error) {
	t.Helper()
	var sched *File
	if schedule != "" {
		sched = &File{Name: "schedule.csv", Data: []byte(schedule)}
	}
	return Parse([]File{{Name: "m.yaml", Data: []byte(yaml)}}, sched)
}

func mustParse(t *testing.T, yaml, schedule string) *Result {
	t.Helper()
	r, err := parse(t, yaml, schedule)
	if err != nil {
		t.Fatalf("unexpected error:\n%v", err)
	}
	return r
}

// TestExamples checks the JobSpecs of examples/k8s, worked out by hand from
// the manifests (see the comment at the top of each file).
func TestExamples(t *testing.T) {
	r, err := Load("../../examples/k8s")
	if err != nil {
		t.Fatal(err)
	}
	h := func(s float64) sim.Duration { return sim.Seconds(s) }
	want := []sim.JobSpec{
		{ID: "nlp/bert-finetune", Submit: 0, Queue: "research", User: "alice", Team: "nlp", Class: sim.ClassTraining, Priority: 1000,
			Replicas: 4, GPUsPerReplica: 1, GPUMilli: 1000, CPUMilli: 8000, MemoryMiB: 32768, Duration: h(7200), Walltime: h(14400)},
		{ID: "resnet50-imagenet", Submit: sim.Time(h(300)), Class: sim.ClassTraining, Priority: 10,
			Replicas: 8, GPUsPerReplica: 1, GPUMilli: 1000, CPUMilli: 6000, MemoryMiB: 48 * 1024, Duration: h(5400)},
		{ID: "llm-eval", Submit: sim.Time(h(600)), Class: sim.ClassBatchInference, Priority: 10,
			Replicas: 2, GPUsPerReplica: 2, GPUMilli: 1000, Duration: h(2700)},
		{ID: "llama-pretrain", Submit: sim.Time(h(900)), Queue: "research", Class: sim.ClassTraining, Priority: 10,
			Replicas: 4, GPUsPerReplica: 1, GPUMilli: 1000, GPUModels: []string{"H100"}, CPUMilli: 16000, MemoryMiB: 128 * 1024, Duration: h(10800)},
		{ID: "sweep-indexed", Submit: sim.Time(h(1800)), Class: sim.ClassUnknown, Priority: 1000,
			Replicas: 4, GPUsPerReplica: 2, GPUMilli: 1000, GPUModels: []string{"A100", "H100"}, Duration: h(1200), Walltime: h(3600)},
	}
	if d := cmp.Diff(want, r.Jobs); d != "" {
		t.Errorf("jobs differ (-want +got):\n%s", d)
	}
	wantNotes := []string{
		`ResourceQuota "nlp/nlp-gpus" is not simulated (ignored): model quotas with the kueue or volcano policy`,
		`schedulerName "scheduler-plugins-scheduler" is not simulated: the scenario's policies schedule every job`,
		"tolerations have no effect: simulated nodes have no taints",
	}
	if d := cmp.Diff(wantNotes, r.Notes); d != "" {
		t.Errorf("notes differ (-want +got):\n%s", d)
	}
}

const mpiJob = `
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: hvd
  namespace: team-a
  annotations: {gpusim.io/duration: "100", gpusim.io/submit-time: 1m}
spec:
  slotsPerWorker: 4
  runPolicy:
    schedulingPolicy: {queue: q1, minAvailable: 2}
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers: [{name: l, image: mpi, resources: {requests: {cpu: 500m}}}]
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: w
              resources: {limits: {nvidia.com/gpu: "4", memory: 1G}, requests: {cpu: "2", nvidia.com/gpu: 4}}
`

// The launcher (no GPU) leaves the gang; the workers are 2 x 4 GPUs; memory
// 1G = 10^9 bytes rounds up to 954 MiB; the Volcano-style queue comes from the
// scheduling policy.
func TestMPIJob(t *testing.T) {
	r := mustParse(t, mpiJob, "")
	want := []sim.JobSpec{{ID: "team-a/hvd", Submit: sim.Time(sim.Seconds(60)), Queue: "q1", Team: "team-a", Class: sim.ClassTraining,
		Replicas: 2, GPUsPerReplica: 4, GPUMilli: 1000, CPUMilli: 2000, MemoryMiB: 954, Duration: sim.Seconds(100)}}
	if d := cmp.Diff(want, r.Jobs); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "CPU-only pods") {
		t.Errorf("notes %q", r.Notes)
	}
}

// TFJob: Chief + Worker with 1 GPU each and a CPU-only PS; a Kueue label beats
// the scheduling policy's queue; schedulingPolicy.priorityClass sets the gang's
// priority; replicas default to 1.
func TestTFJobChiefPS(t *testing.T) {
	y := `
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: p7}
value: 7
---
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: tf
  labels: {kueue.x-k8s.io/queue-name: lq}
  annotations: {gpusim.io/duration: 10m, gpusim.io/class: experiment}
spec:
  runPolicy: {schedulingPolicy: {queue: vq, priorityClass: p7}}
  tfReplicaSpecs:
    Chief:
      template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}}
    PS:
      replicas: 2
      template: {spec: {containers: [{name: c, resources: {requests: {cpu: "4"}}}]}}
    Worker:
      replicas: 3
      template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1, cpu: "1"}}}]}}
`
	r := mustParse(t, y, "")
	want := []sim.JobSpec{{ID: "tf", Queue: "lq", Class: sim.ClassExperiment, Priority: 7,
		Replicas: 4, GPUsPerReplica: 1, GPUMilli: 1000, CPUMilli: 1000, Duration: sim.Seconds(600)}}
	if d := cmp.Diff(want, r.Jobs); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// batch/v1 Jobs: NonIndexed parallelism 3 -> 3 independent jobs; Indexed
// completions 6 / parallelism 3 -> a gang of 3 running 2 waves (2 x duration);
// init and sidecar containers (KEP-753): max(sum(containers)+sidecars,
// init+earlier sidecars) = max(1+1, 3+1) = 4 GPUs.
func TestBatchJobs(t *testing.T) {
	y := `
apiVersion: batch/v1
kind: Job
metadata: {name: plain, annotations: {gpusim.io/duration: "5"}}
spec:
  parallelism: 3
  template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: idx, annotations: {gpusim.io/duration: "5", gpusim.io/submit-time: "2"}}
spec:
  completionMode: Indexed
  completions: 6
  parallelism: 3
  template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 2}}}]}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: init, annotations: {gpusim.io/duration: "1", gpusim.io/submit-time: "3"}}
spec:
  template:
    spec:
      initContainers:
        - {name: side, restartPolicy: Always, resources: {limits: {nvidia.com/gpu: 1}}}
        - {name: prep, resources: {limits: {nvidia.com/gpu: 3}}}
      containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]
`
	r := mustParse(t, y, "")
	one := func(id string, submit, dur float64, reps, gpus int32) sim.JobSpec {
		return sim.JobSpec{ID: sim.JobID(id), Submit: sim.Time(sim.Seconds(submit)), Class: sim.ClassUnknown, Replicas: reps, GPUsPerReplica: gpus, GPUMilli: 1000, Duration: sim.Seconds(dur)}
	}
	want := []sim.JobSpec{one("plain-0", 0, 5, 1, 1), one("plain-1", 0, 5, 1, 1), one("plain-2", 0, 5, 1, 1), one("idx", 2, 10, 3, 2), one("init", 3, 1, 1, 4)}
	if d := cmp.Diff(want, r.Jobs); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// A Volcano PodGroup gathers a Job (2 pods) and a Pod by annotation; its queue
// and priorityClassName apply; the schedule comes from schedule.csv.
func TestVolcanoPodGroupAndSchedule(t *testing.T) {
	y := `
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg, namespace: ml}
spec: {minMember: 3, queue: vq, priorityClassName: system-cluster-critical}
---
apiVersion: batch/v1
kind: Job
metadata: {name: j, namespace: ml}
spec:
  parallelism: 2
  template:
    metadata: {annotations: {scheduling.k8s.io/group-name: pg}}
    spec: {schedulerName: volcano, containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ml, annotations: {scheduling.k8s.io/group-name: pg}}
spec: {schedulerName: volcano, containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1, memory: 2Gi}}}]}
`
	r := mustParse(t, y, "name,duration_s,submit_s\nml/pg,30,7.5\n")
	want := []sim.JobSpec{{ID: "ml/pg", Submit: sim.Time(sim.Seconds(7.5)), Queue: "vq", Team: "ml", Class: sim.ClassUnknown, Priority: 2000000000,
		Replicas: 3, GPUsPerReplica: 1, GPUMilli: 1000, MemoryMiB: 2048, Duration: sim.Seconds(30)}}
	if d := cmp.Diff(want, r.Jobs); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// JobSet: replicatedJobs x parallelism; nodeSelector and affinity intersect.
func TestJobSetModels(t *testing.T) {
	y := `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, annotations: {gpusim.io/duration: 1h}}
spec:
  replicatedJobs:
    - name: a
      replicas: 3
      template:
        spec:
          parallelism: 2
          template:
            spec:
              nodeSelector: {gpusim.io/gpu-model: B, kubernetes.io/arch: amd64}
              affinity:
                nodeAffinity:
                  requiredDuringSchedulingIgnoredDuringExecution:
                    nodeSelectorTerms:
                      - matchExpressions: [{key: nvidia.com/gpu.product, operator: In, values: [C, B, A]}]
              containers: [{name: c, resources: {limits: {nvidia.com/gpu: 8}}}]
`
	r := mustParse(t, y, "")
	want := []sim.JobSpec{{ID: "js", Class: sim.ClassTraining, Replicas: 6, GPUsPerReplica: 8, GPUMilli: 1000, GPUModels: []string{"B"}, Duration: sim.Seconds(3600)}}
	if d := cmp.Diff(want, r.Jobs); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// A pod asking for one mixed-strategy MIG instance becomes a one-GPU job
// that accepts MIG, with that profile.
func TestMIGPod(t *testing.T) {
	y := `
apiVersion: v1
kind: Pod
metadata: {name: nb, annotations: {gpusim.io/duration: 30m}}
spec:
  containers:
    - name: notebook
      resources: {limits: {nvidia.com/mig-1g.10gb: 1, cpu: "2"}}
`
	r := mustParse(t, y, "")
	want := []sim.JobSpec{{ID: "nb", Class: sim.ClassUnknown, Replicas: 1, GPUsPerReplica: 1, GPUMilli: 1000, CPUMilli: 2000,
		Sharing: sim.AcceptMIG, MIGProfile: "1g.10gb", Duration: sim.Seconds(1800)}}
	if d := cmp.Diff(want, r.Jobs); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// Every problem names file:line: field.
func TestErrors(t *testing.T) {
	pod := func(extra string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {gpusim.io/duration: \"1\"}}\nspec:\n  containers:\n    - name: c\n" + extra
	}
	cases := []struct {
		name, yaml, sched, want string
	}{
		{"unknown kind", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n", "", `m.yaml:2: kind: unknown kind "Deployment" (supported: Job, JobSet, MPIJob, Pod, PodGroup, PriorityClass, PyTorchJob, ResourceQuota, TFJob)`},
		{"bad apiVersion", "apiVersion: kubeflow.org/v2\nkind: TFJob\nmetadata: {name: d}\n", "", `m.yaml:1: apiVersion: TFJob: unsupported apiVersion "kubeflow.org/v2" (want kubeflow.org/v1)`},
		{"unknown field", pod("      resorces: {}\n"), "", "m.yaml:7: spec.containers[0].resorces: unknown field"},
		{"wrong type", pod("      resources: {limits: {nvidia.com/gpu: [1]}}\n"), "", "m.yaml:7: "},
		{"fractional gpu", pod("      resources: {limits: {nvidia.com/gpu: 500m}}\n"), "", `m.yaml:7: spec.containers[0].resources.limits."nvidia.com/gpu": nvidia.com/gpu must be a whole number of GPUs, got "500m"`},
		{"requests only", pod("      resources:\n        requests: {nvidia.com/gpu: 1}\n"), "", `m.yaml:8: spec.containers[0].resources.requests."nvidia.com/gpu": nvidia.com/gpu needs a limit`},
		{"requests differ", pod("      resources:\n        requests: {nvidia.com/gpu: 1}\n        limits: {nvidia.com/gpu: 2}\n"), "", `m.yaml:8: spec.containers[0].resources.requests."nvidia.com/gpu": must equal limits (2)`},
		{"no class", pod("  priorityClassName: gold\n"), "", `m.yaml:7: spec.priorityClassName: no PriorityClass "gold"`},
		{"no duration", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec: {containers: [{name: c}]}\n", "", `m.yaml:4: metadata.name: "p" has no duration`},
		{"bad duration", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    gpusim.io/duration: soon\nspec: {containers: [{name: c}]}\n", "", `m.yaml:6: metadata.annotations."gpusim.io/duration": want seconds or a duration`},
		{"bad class", pod("") + "---\n" + strings.Replace(pod(""), "name: p,", "name: q, annotations2: 1,", 1), "", `m.yaml:10: metadata.annotations2: unknown field`},
		{"duplicate", pod("") + "---\n" + pod(""), "", `m.yaml:10: metadata.name: duplicate Pod "p" (first at m.yaml:1)`},
		{"replica type", "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: x}\nspec:\n  pytorchReplicaSpecs:\n    Chief:\n      template: {spec: {containers: [{name: c}]}}\n", "", `m.yaml:6: spec.pytorchReplicaSpecs.Chief: unknown replica type "Chief" (want Master, Worker)`},
		{"heterogeneous", "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: x, annotations: {gpusim.io/duration: \"1\"}}\nspec:\n  pytorchReplicaSpecs:\n    Master:\n      template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 2}}}]}}\n    Worker:\n      template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}}\n", "", "m.yaml:1: x: spec.pytorchReplicaSpecs.Master asks for 2 GPUs per pod and spec.pytorchReplicaSpecs.Worker for 1"},
		{"missing group", pod("") + "---\n" + strings.Replace(pod(""), "name: p,", "name: q, labels: {scheduling.x-k8s.io/pod-group: g},", 1), "", `m.yaml:10: metadata.labels."scheduling.x-k8s.io/pod-group": no PodGroup "g" in namespace "default"`},
		{"minMember", "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: g, annotations: {gpusim.io/duration: \"1\"}}\nspec:\n  minMember: 3\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: q, labels: {scheduling.x-k8s.io/pod-group: g}}\nspec: {containers: [{name: c}]}\n", "", "m.yaml:5: spec.minMember: must be in 0..1"},
		{"affinity op", pod("") + "  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: nvidia.com/gpu.product, operator: NotIn, values: [A]}]}]}}}\n", "", "m.yaml:7: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator: only In is simulated"},
		{"indexed no completions", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  completionMode: Indexed\n  template: {spec: {containers: [{name: c}]}}\n", "", "m.yaml:4: spec.completions: required with completionMode Indexed"},
		{"huge nonindexed", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, annotations: {gpusim.io/duration: \"1\"}}\nspec:\n  parallelism: 2000000000\n  template: {spec: {containers: [{name: c}]}}\n", "", "m.yaml:5: spec.parallelism: a NonIndexed Job becomes one job per pod: at most 100000, got 2000000000"},
		{"waves overflow", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, annotations: {gpusim.io/duration: 1e11}}\nspec:\n  completions: 2000000000\n  template: {spec: {containers: [{name: c}]}}\n", "", "m.yaml:5: spec.completions: 2000000000 waves of 1e+11s exceed 1e12 seconds"},
		{"quota field", "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q}\nspec:\n  hrad: {}\n", "", "m.yaml:5: spec.hrad: unknown field"},
		{"two MIG", pod("      resources: {limits: {nvidia.com/mig-1g.10gb: 2}}\n"), "", "m.yaml:4: spec: a pod may ask for one MIG instance"},
		{"MIG and GPU", pod("      resources: {limits: {nvidia.com/mig-1g.10gb: 1, nvidia.com/gpu: 1}}\n"), "", "m.yaml:4: spec: a pod may ask for one MIG instance"},
		{"MIG gang", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, annotations: {gpusim.io/duration: \"1\"}}\nspec:\n  completionMode: Indexed\n  completions: 2\n  parallelism: 2\n  template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/mig-2g.20gb: 1}}}]}}\n", "", "m.yaml:1: Job j: 2 pods on MIG instances"},
		{"schedule unknown", pod(""), "name,submit_s,duration_s\nq,0,1\n", `schedule.csv:2: column name: no workload named "q"`},
		{"schedule twice", pod(""), "name,submit_s,duration_s\np,0,1\n", `m.yaml:3: metadata.annotations."gpusim.io/duration": also given in schedule.csv`},
		{"schedule bad", strings.Replace(pod(""), `annotations: {gpusim.io/duration: "1"}`, "", 1), "name,submit_s,duration_s\np,x,1\n", `schedule.csv:2: column submit_s: want seconds`},
		{"syntax", "apiVersion: v1\nkind: Pod\n  metadata: x\n", "", "m.yaml:3: "},
		{"not a mapping", "- a\n", "", "m.yaml:1: a manifest must be a mapping"},
		{"two defaults", "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: a}\nvalue: 1\nglobalDefault: true\n---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: b}\nvalue: 2\nglobalDefault: true\n", "", `m.yaml:11: globalDefault: PriorityClass "b": a second globalDefault (the first is "a" at m.yaml:1)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parse(t, c.yaml, c.sched)
			if err == nil {
				t.Fatalf("no error, want %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error\n%v\nwant it to contain\n%s", err, c.want)
			}
			var ke *Error
			if !errors.As(err, &ke) {
				t.Fatalf("%T is not an *Error", err)
			}
		})
	}
}

// The jobs do not depend on the order of the files or of the documents.
func TestOrderIndependent(t *testing.T) {
	docs := strings.Split(mpiJob+"---\n"+strings.Join([]string{
		"apiVersion: v1\nkind: Pod\nmetadata: {name: a, annotations: {gpusim.io/duration: \"3\"}}\nspec: {containers: [{name: c}]}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {name: b, annotations: {gpusim.io/duration: \"2\"}}\nspec: {containers: [{name: c}]}\n",
	}, "---\n"), "---\n")
	var ref []sim.JobSpec
	for rot := range docs {
		var files []File
		for i := range docs {
			d := docs[(i+rot)%len(docs)]
			files = append(files, File{Name: "f" + strconv.Itoa(i) + ".yaml", Data: []byte(d)})
		}
		r, err := Parse(files, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rot == 0 {
			ref = r.Jobs
			continue
		}
		if d := cmp.Diff(ref, r.Jobs); d != "" {
			t.Fatalf("rotation %d differs:\n%s", rot, d)
		}
	}
}

// FuzzParse: any input gives jobs that validate, or an error; never a panic.
func FuzzParse(f *testing.F) {
	f.Add([]byte(mpiJob), []byte(""))
	f.Add([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}\n"), []byte("name,submit_s,duration_s\np,1,2\n"))
	f.Add([]byte("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, annotations: {gpusim.io/duration: 1h}}\nspec: {completionMode: Indexed, completions: 4, parallelism: 2, template: {spec: {containers: [{name: c}]}}}\n"), []byte(nil))
	f.Fuzz(func(t *testing.T, y, sched []byte) {
		var s *File
		if len(sched) > 0 {
			s = &File{Name: "schedule.csv", Data: sched}
		}
		r, err := Parse([]File{{Name: "f.yaml", Data: y}}, s)
		if err != nil {
			return
		}
		for i := range r.Jobs {
			if verr := r.Jobs[i].Validate(); verr != nil {
				t.Fatalf("invalid job %+v: %v", r.Jobs[i], verr)
			}
			if i > 0 && r.Jobs[i].Submit < r.Jobs[i-1].Submit {
				t.Fatalf("jobs not sorted by submit")
			}
		}
	})
}
