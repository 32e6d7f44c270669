package kubeops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpusim/gpusim/internal/kubetest"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// One control plane serves the package's end-to-end tests.
var shared = &kubetest.Shared{Prefix: "gpusim-kubeops-"}

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	os.Exit(code)
}

// cluster returns the shared etcd + kube-apiserver, skipping (failing with
// GPUSIM_E2E_REQUIRE=1) when the binaries are not built.
func cluster(t *testing.T) *kubetest.Cluster {
	t.Helper()
	return shared.Get(t)
}

// manifestGVR maps the kinds of deploy/*.yaml to their resources.
var manifestGVR = map[string]struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}{
	"Namespace":                        {schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, false},
	"ServiceAccount":                   {schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, true},
	"ConfigMap":                        {schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, true},
	"ClusterRole":                      {schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, false},
	"ClusterRoleBinding":               {schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}, false},
	"Role":                             {schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}, true},
	"RoleBinding":                      {schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}, true},
	"Deployment":                       {schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, true},
	"ValidatingAdmissionPolicy":        {schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}, false},
	"ValidatingAdmissionPolicyBinding": {schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}, false},
}

// applyDeploy creates the objects of deploy/<files> (existing ones are left
// as they are) and returns them.
// readDeploy reads and decodes deploy/<name>: its path and its objects.
func readDeploy(t testing.TB, name string) (string, []*unstructured.Unstructured) {
	t.Helper()
	root, err := kubetest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "deploy", name)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := kubetest.DecodeYAML(path, b)
	if err != nil {
		t.Fatal(err)
	}
	return path, objs
}

func applyDeploy(t testing.TB, ctx context.Context, dyn dynamic.Interface, files ...string) []*unstructured.Unstructured {
	t.Helper()
	var all []*unstructured.Unstructured
	for _, f := range files {
		path, objs := readDeploy(t, f)
		for _, o := range objs {
			m, ok := manifestGVR[o.GetKind()]
			if !ok {
				t.Fatalf("%s: kind %s not known to the test", path, o.GetKind())
			}
			var ri dynamic.ResourceInterface = dyn.Resource(m.gvr)
			if m.namespaced {
				ri = dyn.Resource(m.gvr).Namespace(o.GetNamespace())
			}
			if _, err := ri.Create(ctx, o, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("%s: create %s %s: %v", path, o.GetKind(), o.GetName(), err)
			}
		}
		all = append(all, objs...)
	}
	return all
}

// TestE2EDeployManifests: the API server accepts every object of deploy/
// (its schema validation of the Deployment included), and the Deployment
// has what docs/kubernetes-ops.md promises.
func TestE2EDeployManifests(t *testing.T) {
	c := cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	objs := applyDeploy(t, ctx, c.Dynamic, "namespace.yaml", "rbac.yaml", "scheduler.yaml")
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}
	want := map[string]int{"Namespace": 1, "ServiceAccount": 1, "ClusterRole": 1, "ClusterRoleBinding": 1, "Role": 1, "RoleBinding": 1,
		"ValidatingAdmissionPolicy": 1, "ValidatingAdmissionPolicyBinding": 1, "ConfigMap": 1, "Deployment": 1}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Errorf("deploy/ kinds %v, want %v", kinds, want)
	}
	d, err := c.Client.AppsV1().Deployments("gpusim-system").Get(ctx, "gpusim-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 2 || d.Spec.Template.Spec.ServiceAccountName != "gpusim" {
		t.Errorf("replicas %d, serviceAccount %q", *d.Spec.Replicas, d.Spec.Template.Spec.ServiceAccountName)
	}
	ctr := d.Spec.Template.Spec.Containers[0]
	args := strings.Join(ctr.Args, " ")
	for _, a := range []string{"--backend=kubernetes", "--leader-elect", "--metrics-addr=:8080"} {
		if !strings.Contains(args, a) {
			t.Errorf("args %q lack %s", args, a)
		}
	}
	sc, psc := ctr.SecurityContext, d.Spec.Template.Spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || sc == nil ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("security context: pod %+v container %+v", psc, sc)
	}
	if ctr.LivenessProbe == nil || ctr.LivenessProbe.HTTPGet.Path != "/healthz" ||
		ctr.ReadinessProbe == nil || ctr.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("probes: liveness %+v readiness %+v", ctr.LivenessProbe, ctr.ReadinessProbe)
	}
	if ctr.Resources.Requests.Cpu().IsZero() || ctr.Resources.Requests.Memory().IsZero() {
		t.Errorf("no resource requests: %+v", ctr.Resources)
	}
}
