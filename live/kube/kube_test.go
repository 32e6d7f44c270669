package kube

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpusim/gpusim/sim"
)

func gpuNode(name string, gpus string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	n.Spec.Taints = taints
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi")}
	if gpus != "" {
		n.Status.Allocatable[ResourceGPU] = resource.MustParse(gpus)
	}
	return n
}

func gpuPod(name string, gpus string, ann map[string]string, labels map[string]string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: ann, Labels: labels}}
	c := corev1.Container{Name: "main"}
	if gpus != "" {
		c.Resources.Limits = corev1.ResourceList{ResourceGPU: resource.MustParse(gpus)}
	}
	p.Spec.Containers = []corev1.Container{c}
	return p
}

func noPrio(p *corev1.Pod) (int32, error) {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority, nil
	}
	return 0, nil
}

// testCluster: a (rack r1, clique c1), b (rack r1), c (rack r2, tainted
// dedicated=ml), d (cordoned), e (no GPUs: left out).
func testCluster(t *testing.T) *clusterModel {
	t.Helper()
	h100 := func(rack string) map[string]string {
		return map[string]string{LabelGPUProduct: "H100", DefaultRackLabel: rack, LabelGPUMemory: "81559"}
	}
	a := gpuNode("a", "8", h100("r1"))
	a.Labels[LabelGPUClique] = "uuid.1"
	d := gpuNode("d", "8", h100("r2"))
	d.Spec.Unschedulable = true
	nodes := []*corev1.Node{
		gpuNode("c", "8", h100("r2"), corev1.Taint{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule},
			corev1.Taint{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}),
		gpuNode("e", "", nil), a, d, gpuNode("b", "4", h100("r1")),
	}
	m, err := buildCluster(nodes, DefaultRackLabel, DefaultBlockLabel, DefaultZoneLabel, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestClusterOf(t *testing.T) {
	m := testCluster(t)
	var got []string
	for _, n := range m.specs {
		got = append(got, n.Name+"="+n.GPUModel)
	}
	want := []string{"a=H100", "b=H100", "c=H100|dedicated=ml:NoSchedule", "d=H100|node.kubernetes.io/unschedulable=:NoSchedule"}
	if !slices.Equal(got, want) {
		t.Fatalf("nodes %v, want %v", got, want)
	}
	a, b, c := m.specs[0], m.specs[1], m.specs[2]
	if a.GPUs != 8 || b.GPUs != 4 || a.GPUMemMiB != 81559 || a.CPUMilli != 64000 || a.MemoryMiB != 512*1024 {
		t.Errorf("capacity: %+v %+v", a, b)
	}
	if a.Leaf != b.Leaf || a.Leaf == c.Leaf || a.NVLinkDomain != 1 || b.NVLinkDomain != 0 {
		t.Errorf("topology: a leaf %d nvl %d, b leaf %d nvl %d, c leaf %d", a.Leaf, a.NVLinkDomain, b.Leaf, b.NVLinkDomain, c.Leaf)
	}
	if _, err := sim.NewCluster(m.specs); err != nil {
		t.Fatal(err)
	}
	if _, err := buildCluster([]*corev1.Node{gpuNode("x", "", nil)}, "", "", "", nil); err == nil {
		t.Error("a cluster without GPUs was accepted")
	}
}

func TestEligible(t *testing.T) {
	m := testCluster(t)
	const plain, tainted, cordoned = "H100", "H100|dedicated=ml:NoSchedule", "H100|node.kubernetes.io/unschedulable=:NoSchedule"
	cases := []struct {
		name  string
		spec  corev1.PodSpec
		want  []string
		all   bool
		split string
	}{
		{"no constraints: untainted nodes only", corev1.PodSpec{}, []string{plain}, false, ""},
		{"tolerates dedicated", corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "ml", Effect: corev1.TaintEffectNoSchedule}}}, []string{plain, tainted}, false, ""},
		{"tolerates everything", corev1.PodSpec{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}, []string{plain, tainted, cordoned}, true, ""},
		{"wrong toleration value", corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web"}}}, []string{plain}, false, ""},
		{"selector on product", corev1.PodSpec{NodeSelector: map[string]string{LabelGPUProduct: "H100"}}, []string{plain}, false, ""},
		{"selector on another product", corev1.PodSpec{NodeSelector: map[string]string{LabelGPUProduct: "A100"}}, nil, false, ""},
		{"selector splitting a class", corev1.PodSpec{NodeSelector: map[string]string{LabelGPUClique: "uuid.1"}}, nil, false, plain},
		{"affinity NotIn", corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: LabelGPUProduct, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"A100"}}}}}}}}}, []string{plain}, false, ""},
		{"affinity terms ORed, one matches nothing", corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{
				{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "absent", Operator: corev1.NodeSelectorOpExists}}},
				{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: LabelGPUMemory, Operator: corev1.NodeSelectorOpGt, Values: []string{"80000"}}}},
			}}}}}, []string{plain}, false, ""},
	}
	for _, c := range cases {
		models, all, split := m.eligible(&c.spec)
		if !slices.Equal(models, c.want) || all != c.all || split != c.split {
			t.Errorf("%s: got %v all=%v split=%q, want %v all=%v split=%q", c.name, models, all, split, c.want, c.all, c.split)
		}
	}
	// With the rack as a class label the rack selector is exact.
	nodes := []*corev1.Node{gpuNode("a", "8", map[string]string{DefaultRackLabel: "r1"}), gpuNode("b", "8", map[string]string{DefaultRackLabel: "r2"})}
	m2, err := buildCluster(nodes, DefaultRackLabel, "", "", []string{DefaultRackLabel})
	if err != nil {
		t.Fatal(err)
	}
	models, _, split := m2.eligible(&corev1.PodSpec{NodeSelector: map[string]string{DefaultRackLabel: "r1"}})
	if !slices.Equal(models, []string{"gpu|topology.kubernetes.io/rack=r1"}) || split != "" {
		t.Errorf("class label: %v %q", models, split)
	}
}

func TestGangOf(t *testing.T) {
	cases := []struct {
		labels, ann map[string]string
		kind        gangKind
		name        string
	}{
		{nil, nil, gangPod, "p"},
		{map[string]string{"scheduling.x-k8s.io/pod-group": "g"}, nil, gangPodGroup, "g"},
		{map[string]string{"pod-group.scheduling.sigs.k8s.io": "old"}, nil, gangPodGroup, "old"},
		{nil, map[string]string{"scheduling.k8s.io/group-name": "v"}, gangVolcano, "v"},
		{map[string]string{LabelKubeflowJob: "tf", "scheduling.x-k8s.io/pod-group": "tf"}, nil, gangPodGroup, "tf"},
		{map[string]string{LabelKubeflowJob: "tf"}, nil, gangKubeflow, "tf"},
		{map[string]string{LabelJobSet: "js", LabelJobName: "js-w-0"}, nil, gangJobSet, "js"},
		{map[string]string{LabelJobIndex: "3", LabelJobName: "ij"}, nil, gangIndexed, "ij"},
		{map[string]string{LabelJobName: "nonindexed"}, nil, gangPod, "p"},
	}
	for _, c := range cases {
		p := gpuPod("p", "1", c.ann, c.labels)
		k, n := gangOf(p)
		if k != c.kind || n != c.name {
			t.Errorf("%v %v: got %s %q, want %s %q", c.labels, c.ann, k, n, c.kind, c.name)
		}
	}
	if jobID("default", "x") != "x" || jobID("team", "x") != "team/x" {
		t.Error("jobID")
	}
}

func TestTranslateGang(t *testing.T) {
	m := testCluster(t)
	prio := int32(500)
	a := gpuPod("w-1", "4", map[string]string{AnnotationDuration: "2h", "gpusim.io/user": "ana"}, map[string]string{"kueue.x-k8s.io/queue-name": "lq"})
	b := gpuPod("w-0", "4", nil, nil)
	b.Spec.Priority = &prio
	helper := gpuPod("launcher", "", nil, nil)
	spec, _, err := translate(m, "job1", []*corev1.Pod{a, b, helper}, noPrio, sim.Seconds(3600))
	if err != nil {
		t.Fatal(err)
	}
	if spec.ID != "job1" || spec.Replicas != 2 || spec.GPUsPerReplica != 4 || spec.Duration != sim.Seconds(7200) ||
		spec.Priority != 500 || spec.Queue != "lq" || spec.User != "ana" || !slices.Equal(spec.GPUModels, []string{"H100"}) {
		t.Fatalf("spec %+v", spec)
	}
	// No duration annotation: the default. Tolerating everything: no model list.
	c := gpuPod("solo", "1", nil, nil)
	c.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	spec, _, err = translate(m, "solo", []*corev1.Pod{c}, noPrio, sim.Seconds(60))
	if err != nil || spec.Duration != sim.Seconds(60) || spec.GPUModels != nil || spec.Replicas != 1 {
		t.Fatalf("solo: %+v %v", spec, err)
	}
}

// TestTranslateHostile: malformed pods are errors (skipped with an Event by
// the scheduler), never a panic.
func TestTranslateHostile(t *testing.T) {
	m := testCluster(t)
	huge := strings.Repeat("9", 200_000)
	negative := gpuPod("neg", "", nil, nil)
	negative.Spec.Containers[0].Resources.Limits = corev1.ResourceList{ResourceGPU: resource.MustParse("-1")}
	fraction := gpuPod("frac", "", nil, nil)
	fraction.Spec.Containers[0].Resources.Limits = corev1.ResourceList{ResourceGPU: resource.MustParse("1500m")}
	mismatch := gpuPod("req", "2", nil, nil)
	mismatch.Spec.Containers[0].Resources.Requests = corev1.ResourceList{ResourceGPU: resource.MustParse("1")}
	cases := map[string][]*corev1.Pod{
		"huge annotation":  {gpuPod("h", "1", map[string]string{AnnotationDuration: huge}, nil)},
		"bad duration":     {gpuPod("d", "1", map[string]string{AnnotationDuration: "soon"}, nil)},
		"negative GPUs":    {negative},
		"fractional GPUs":  {fraction},
		"request != limit": {mismatch},
		"unequal gang":     {gpuPod("u0", "2", nil, nil), gpuPod("u1", "4", nil, nil)},
		"no container":     {{ObjectMeta: metav1.ObjectMeta{Name: "empty", Namespace: "default"}}},
		"no eligible node": {func() *corev1.Pod {
			p := gpuPod("sel", "1", nil, nil)
			p.Spec.NodeSelector = map[string]string{"x": "y"}
			return p
		}()},
		"unknown class lookup": {gpuPod("pc", "1", nil, nil)},
	}
	for name, pods := range cases {
		prio := noPrio
		if name == "unknown class lookup" {
			prio = func(*corev1.Pod) (int32, error) { return 0, errNoClass }
		}
		spec, _, err := translate(m, sim.JobID(name), pods, prio, sim.Seconds(1))
		if err == nil {
			t.Errorf("%s: accepted as %+v", name, spec)
			continue
		}
		if len(err.Error()) > 5000 {
			t.Errorf("%s: error of %d bytes", name, len(err.Error()))
		}
	}
}

var errNoClass = &strError{"no PriorityClass \"x\""}

type strError struct{ s string }

func (e *strError) Error() string { return e.s }

func TestCountReplicas(t *testing.T) {
	tf := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"tfReplicaSpecs": map[string]any{
		"PS": map[string]any{"replicas": int64(1)}, "Worker": map[string]any{"replicas": int64(4)}, "Chief": map[string]any{}}}}}
	if n, err := countReplicas("TFJob", tf); err != nil || n != 6 {
		t.Errorf("TFJob: %d %v", n, err)
	}
	js := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicatedJobs": []any{
		map[string]any{"name": "w", "replicas": int64(2), "template": map[string]any{"spec": map[string]any{"parallelism": int64(4), "completions": int64(4)}}},
		map[string]any{"name": "d", "template": map[string]any{"spec": map[string]any{}}},
	}}}}
	if n, err := countReplicas("JobSet", js); err != nil || n != 9 {
		t.Errorf("JobSet: %d %v", n, err)
	}
	bad := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"tfReplicaSpecs": "nope"}}}
	if _, err := countReplicas("TFJob", bad); err == nil {
		t.Error("malformed TFJob accepted")
	}
}

func TestRecordedGPUs(t *testing.T) {
	cases := []struct {
		v       string
		n, want int
		out     []int
	}{
		{"0,1", 8, 2, []int{0, 1}},
		{"7", 8, 1, []int{7}},
		{"8", 8, 1, nil},
		{"1,1", 8, 2, nil},
		{"0,1", 8, 3, nil},
		{"x", 8, 1, nil},
		{"", 8, 1, nil},
		{strings.Repeat("1,", 5000), 8, 1, nil},
	}
	for _, c := range cases {
		if got := recordedGPUs(c.v, c.n, c.want); !slices.Equal(got, c.out) {
			t.Errorf("%.20q: %v, want %v", c.v, got, c.out)
		}
	}
	if truncate("héllo", 2) != "h..." || truncate("abc", 5) != "abc" {
		t.Error("truncate")
	}
}

// TestFinishedMembers: finished pods join a gang at start only when it is
// half-bound (a pending member annotated with its node) and they carry the
// same placement as every unfinished member.
func TestFinishedMembers(t *testing.T) {
	const place, other = "gpu-3:0,1;gpu-4:0,1", "gpu-5:0,1;gpu-6:0,1"
	pod := func(name, node, pl, annNode string) *corev1.Pod {
		ann := map[string]string{}
		if pl != "" {
			ann[AnnotationPlacement] = pl
		}
		if annNode != "" {
			ann[AnnotationNode] = annNode
		}
		p := gpuPod(name, "2", ann, nil)
		p.Spec.NodeName = node
		return p
	}
	done := []*corev1.Pod{pod("a", "gpu-3", place, "gpu-3"), pod("old", "gpu-5", other, "gpu-5")}
	names := func(ps []*corev1.Pod) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		live []*corev1.Pod
		want []string
	}{
		{"pending annotated member", []*corev1.Pod{pod("b", "", place, "gpu-4")}, []string{"a"}},
		{"pending and bound members", []*corev1.Pod{pod("b", "", place, "gpu-4"), pod("c", "gpu-4", place, "gpu-4")}, []string{"a"}},
		{"no pending member (all bound)", []*corev1.Pod{pod("b", "gpu-4", place, "gpu-4")}, nil},
		{"pending without node annotation", []*corev1.Pod{pod("b", "", place, "")}, nil},
		{"pending without placement (a new pod)", []*corev1.Pod{pod("b", "", "", "")}, nil},
		{"members disagree on the placement", []*corev1.Pod{pod("b", "", place, "gpu-4"), pod("c", "", other, "gpu-6")}, nil},
		{"no unfinished member", nil, nil},
	} {
		if got := names(finishedMembers(tc.live, done)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
