package kubeops

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpusim/gpusim/internal/kubetest"
)

// SchedulerUser is the identity deploy/ gives the scheduler.
const SchedulerUser = "system:serviceaccount:gpusim-system:gpusim"

// asScheduler returns clients that impersonate the scheduler's service
// account (the API server adds its groups, system:serviceaccounts and
// system:serviceaccounts:gpusim-system, as for a real token).
func asScheduler(t *testing.T, c *kubetest.Cluster) (kubernetes.Interface, dynamic.Interface) {
	t.Helper()
	cfg := rest.CopyConfig(c.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: SchedulerUser}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs, dyn
}

var (
	podGroupsX       = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}
	podGroupsVolcano = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}
	tfJobs           = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "tfjobs"}
	jobSets          = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}
	// Authorized requests for objects (or a CRD) that are not there.
	notFoundOK = map[string]bool{"list podgroups (scheduling.volcano.sh)": true, "get job": true, "get tfjob": true, "get jobset": true}
)

// TestE2EDeployRBAC applies deploy/namespace.yaml and deploy/rbac.yaml to a
// real API server (RBAC on) and, as the scheduler's service account, makes
// every request the scheduler needs (each must succeed) and requests it
// must not be able to make (each must be Forbidden).
func TestE2EDeployRBAC(t *testing.T) {
	c := cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	applyDeploy(t, ctx, c.Dynamic, "namespace.yaml", "rbac.yaml")
	if err := c.InstallWorkloadCRDs(ctx); err != nil { // scheduler-plugins PodGroup
		t.Fatal(err)
	}
	const ns = "rbac-team"
	if err := c.CreateNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	// Fixtures, as the admin.
	if _, err := c.CreateGPUNode(ctx, "rbac-gpu-0", 8, nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"p-bind", "p-other", "p-del", "p-default"} {
		sched := "gpusim"
		if name == "p-default" {
			sched = "default-scheduler"
		}
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       corev1.PodSpec{SchedulerName: sched, Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/x:1"}}},
		}
		if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, StringData: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.CoordinationV1().Leases("gpusim-system").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pg := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
		"metadata": map[string]any{"name": "g", "namespace": ns}, "spec": map[string]any{"minMember": int64(2)},
	}}
	if _, err := c.Dynamic.Resource(podGroupsX).Namespace(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cs, dyn := asScheduler(t, c)
	// The admission policy takes effect once the API server's policy
	// cache has it: probe with a dry-run delete until it refuses.
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := cs.CoreV1().Pods(ns).Delete(ctx, "p-default", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "gpusim may only patch or delete") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ValidatingAdmissionPolicy not in effect after 20s: dry-run delete of another scheduler's pod: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	watch := func(w interface{ Stop() }, err error) error {
		if err == nil {
			w.Stop()
		}
		return err
	}
	allowed := []struct {
		what string
		do   func() error
	}{
		{"list nodes", func() error { _, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); return err }},
		{"watch nodes", func() error { return watch(cs.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{})) }},
		{"get pod", func() error { _, err := cs.CoreV1().Pods(ns).Get(ctx, "p-bind", metav1.GetOptions{}); return err }},
		{"list pods (all namespaces)", func() error { _, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); return err }},
		{"watch pods (all namespaces)", func() error { return watch(cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{})) }},
		{"patch pod", func() error {
			_, err := cs.CoreV1().Pods(ns).Patch(ctx, "p-other", types.MergePatchType, []byte(`{"metadata":{"annotations":{"gpusim.io/x":"1"}}}`), metav1.PatchOptions{})
			return err
		}},
		{"create pods/binding", func() error {
			return cs.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{
				ObjectMeta: metav1.ObjectMeta{Name: "p-bind", Namespace: ns},
				Target:     corev1.ObjectReference{Kind: "Node", Name: "rbac-gpu-0"},
			}, metav1.CreateOptions{})
		}},
		{"create pods/eviction", func() error {
			return cs.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p-bind", Namespace: ns}})
		}},
		{"delete a gpusim pod", func() error { return cs.CoreV1().Pods(ns).Delete(ctx, "p-del", metav1.DeleteOptions{}) }},
		{"create core event", func() error {
			_, err := cs.CoreV1().Events(ns).Create(ctx, &corev1.Event{
				ObjectMeta: metav1.ObjectMeta{Name: "e2"}, Reason: "Scheduled", Type: corev1.EventTypeNormal,
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "p-other"},
			}, metav1.CreateOptions{})
			return err
		}},
		{"list podgroups (scheduling.x-k8s.io)", func() error { _, err := dyn.Resource(podGroupsX).List(ctx, metav1.ListOptions{}); return err }},
		{"watch podgroups (scheduling.x-k8s.io)", func() error { return watch(dyn.Resource(podGroupsX).Watch(ctx, metav1.ListOptions{})) }},
		// No Volcano CRD here: authorized requests get NotFound, not Forbidden.
		{"list podgroups (scheduling.volcano.sh)", func() error { _, err := dyn.Resource(podGroupsVolcano).List(ctx, metav1.ListOptions{}); return err }},
		// Owners: the objects do not exist, so NotFound (authorized).
		{"get job", func() error { _, err := cs.BatchV1().Jobs(ns).Get(ctx, "none", metav1.GetOptions{}); return err }},
		{"get tfjob", func() error {
			_, err := dyn.Resource(tfJobs).Namespace(ns).Get(ctx, "none", metav1.GetOptions{})
			return err
		}},
		{"get jobset", func() error {
			_, err := dyn.Resource(jobSets).Namespace(ns).Get(ctx, "none", metav1.GetOptions{})
			return err
		}},
		{"list priorityclasses", func() error {
			_, err := cs.SchedulingV1().PriorityClasses().List(ctx, metav1.ListOptions{})
			return err
		}},
		{"watch priorityclasses", func() error { return watch(cs.SchedulingV1().PriorityClasses().Watch(ctx, metav1.ListOptions{})) }},
		{"create lease gpusim-system/gpusim-scheduler", func() error {
			_, err := cs.CoordinationV1().Leases("gpusim-system").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "gpusim-scheduler"}}, metav1.CreateOptions{})
			return err
		}},
		{"get and update lease gpusim-system/gpusim-scheduler", func() error {
			l, err := cs.CoordinationV1().Leases("gpusim-system").Get(ctx, "gpusim-scheduler", metav1.GetOptions{})
			if err != nil {
				return err
			}
			id := "x"
			l.Spec.HolderIdentity = &id
			_, err = cs.CoordinationV1().Leases("gpusim-system").Update(ctx, l, metav1.UpdateOptions{})
			return err
		}},
	}
	for _, a := range allowed {
		if err := a.do(); err != nil && !(apierrors.IsNotFound(err) && notFoundOK[a.what]) {
			t.Errorf("%s as %s: %v (want allowed)", a.what, SchedulerUser, err)
		}
	}

	forbidden := []struct {
		what string
		do   func() error
	}{
		{"get secret", func() error { _, err := cs.CoreV1().Secrets(ns).Get(ctx, "s", metav1.GetOptions{}); return err }},
		{"list secrets", func() error { _, err := cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{}); return err }},
		{"list configmaps", func() error { _, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{}); return err }},
		// RBAC allows these; the ValidatingAdmissionPolicy refuses them.
		{"delete another scheduler's pod", func() error { return cs.CoreV1().Pods(ns).Delete(ctx, "p-default", metav1.DeleteOptions{}) }},
		{"patch another scheduler's pod", func() error {
			_, err := cs.CoreV1().Pods(ns).Patch(ctx, "p-default", types.MergePatchType, []byte(`{"metadata":{"annotations":{"gpusim.io/x":"1"}}}`), metav1.PatchOptions{})
			return err
		}},
		{"delete all pods", func() error {
			return cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		}},
		{"get node", func() error { _, err := cs.CoreV1().Nodes().Get(ctx, "rbac-gpu-0", metav1.GetOptions{}); return err }},
		{"get podgroup", func() error {
			_, err := dyn.Resource(podGroupsX).Namespace(ns).Get(ctx, "g", metav1.GetOptions{})
			return err
		}},
		{"list jobs", func() error { _, err := cs.BatchV1().Jobs("").List(ctx, metav1.ListOptions{}); return err }},
		{"patch event", func() error {
			_, err := cs.CoreV1().Events(ns).Patch(ctx, "e2", types.MergePatchType, []byte(`{"count":2}`), metav1.PatchOptions{})
			return err
		}},
		{"create events.k8s.io event", func() error {
			_, err := cs.EventsV1().Events(ns).Create(ctx, &eventsv1.Event{
				ObjectMeta: metav1.ObjectMeta{Name: "e1"}, EventTime: metav1.NewMicroTime(time.Now()), Reason: "Scheduled", Action: "Binding",
				Type: corev1.EventTypeNormal, ReportingController: "gpusim.io/scheduler", ReportingInstance: "gpusim-0",
				Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "p-other"},
			}, metav1.CreateOptions{})
			return err
		}},
		{"create pod", func() error {
			_, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "evil"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}, metav1.CreateOptions{})
			return err
		}},
		{"update pod status", func() error {
			p, err := c.Client.CoreV1().Pods(ns).Get(ctx, "p-other", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
			return err
		}},
		{"update node", func() error {
			n, err := c.Client.CoreV1().Nodes().Get(ctx, "rbac-gpu-0", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
			return err
		}},
		{"patch node", func() error {
			_, err := cs.CoreV1().Nodes().Patch(ctx, "rbac-gpu-0", types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{})
			return err
		}},
		{"delete node", func() error { return cs.CoreV1().Nodes().Delete(ctx, "rbac-gpu-0", metav1.DeleteOptions{}) }},
		{"create podgroup", func() error {
			_, err := dyn.Resource(podGroupsX).Namespace(ns).Create(ctx, pg, metav1.CreateOptions{})
			return err
		}},
		{"delete event", func() error { return cs.CoreV1().Events(ns).Delete(ctx, "e2", metav1.DeleteOptions{}) }},
		{"get another lease in gpusim-system", func() error {
			_, err := cs.CoordinationV1().Leases("gpusim-system").Get(ctx, "someone-elses", metav1.GetOptions{})
			return err
		}},
		{"delete the leader lease", func() error {
			return cs.CoordinationV1().Leases("gpusim-system").Delete(ctx, "gpusim-scheduler", metav1.DeleteOptions{})
		}},
		{"create a lease in another namespace", func() error {
			_, err := cs.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "gpusim-scheduler"}}, metav1.CreateOptions{})
			return err
		}},
		{"list deployments", func() error { _, err := cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{}); return err }},
		{"bind itself to cluster-admin", func() error {
			_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "gpusim-escalate"},
				RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "gpusim", Namespace: "gpusim-system"}},
			}, metav1.CreateOptions{})
			return err
		}},
	}
	for _, f := range forbidden {
		if err := f.do(); !apierrors.IsForbidden(err) {
			t.Errorf("%s as %s: %v (want Forbidden)", f.what, SchedulerUser, err)
		}
	}
}

// TestE2ELeaderElectionRBAC runs RunElected on the real API server as the
// scheduler's service account: the Role of deploy/rbac.yaml is enough to
// acquire, renew and release the Lease.
func TestE2ELeaderElectionRBAC(t *testing.T) {
	c := cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	applyDeploy(t, ctx, c.Dynamic, "namespace.yaml", "rbac.yaml")
	cs, _ := asScheduler(t, c)
	le := fastLE("replica-0")
	le.LeaseName = "gpusim-scheduler"
	var during string
	err := RunElected(ctx, cs, le, Elected{}, func(ctx context.Context) error {
		// Lead for three renewals.
		time.Sleep(700 * time.Millisecond)
		l, err := c.Client.CoordinationV1().Leases("gpusim-system").Get(ctx, "gpusim-scheduler", metav1.GetOptions{})
		if err != nil {
			return err
		}
		during = *l.Spec.HolderIdentity
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if during != "replica-0" {
		t.Errorf("holder while leading %q, want replica-0", during)
	}
	l, err := c.Client.CoordinationV1().Leases("gpusim-system").Get(ctx, "gpusim-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := l.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("holder after return %q, want released (empty)", *h)
	}
}
