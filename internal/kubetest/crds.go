package kubetest

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

//go:embed crds/*.yaml
var workloadCRDs embed.FS

// crdGVR is apiextensions.k8s.io/v1 customresourcedefinitions.
var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Resources of the workload CRDs that InstallWorkloadCRDs installs.
var (
	PodGroupGVR   = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}
	TFJobGVR      = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "tfjobs"}
	PyTorchJobGVR = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}
	MPIJobGVR     = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs"}
	JobSetGVR     = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}
)

// InstallWorkloadCRDs installs the package's minimal CRDs for PodGroup
// (scheduler-plugins), TFJob, PyTorchJob, MPIJob (Kubeflow) and JobSet: real
// group/version/kind/plural, status subresource, but spec and status are not
// validated (x-kubernetes-preserve-unknown-fields).
func (c *Cluster) InstallWorkloadCRDs(ctx context.Context) error {
	names, err := workloadCRDs.ReadDir("crds")
	if err != nil {
		return fmt.Errorf("kubetest: %w", err)
	}
	var docs []*unstructured.Unstructured
	for _, n := range names {
		b, err := workloadCRDs.ReadFile("crds/" + n.Name())
		if err != nil {
			return fmt.Errorf("kubetest: %w", err)
		}
		d, err := DecodeYAML("crds/"+n.Name(), b)
		if err != nil {
			return err
		}
		docs = append(docs, d...)
	}
	return c.InstallCRDs(ctx, docs...)
}

// KueueCRDDir is where scripts/ensure-e2e-deps.sh copies Kueue's CRDs
// (config/components/crd/bases of the sigs.k8s.io/kueue module), given the
// harness's bin directory.
func KueueCRDDir(binDir string) string {
	return filepath.Join(filepath.Dir(binDir), "crds", "kueue")
}

// InstallKueueCRDs installs Kueue's real CRDs (with their full OpenAPI
// schemas, so the API server validates Kueue objects as in a real cluster)
// from KueueCRDDir(c's bin directory).
func (c *Cluster) InstallKueueCRDs(ctx context.Context) error {
	return c.InstallKueueCRDsFrom(ctx, KueueCRDDir(c.opt.BinDir))
}

// InstallKueueCRDsFrom installs the CRDs of every *.yaml file in dir, for
// example config/components/crd/bases of another sigs.k8s.io/kueue module
// version than the one scripts/ensure-e2e-deps.sh copies.
func (c *Cluster) InstallKueueCRDsFrom(ctx context.Context, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("kubetest: no Kueue CRDs in %s (run make e2e-deps)", dir)
	}
	sort.Strings(files)
	var docs []*unstructured.Unstructured
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("kubetest: %w", err)
		}
		d, err := DecodeYAML(f, b)
		if err != nil {
			return err
		}
		docs = append(docs, d...)
	}
	return c.InstallCRDs(ctx, docs...)
}

// DecodeYAML splits a multi-document YAML (or JSON) file into objects; name
// prefixes errors. Empty documents are skipped.
func DecodeYAML(name string, b []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []*unstructured.Unstructured
	for i := 1; ; i++ {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("kubetest: %s: document %d: %w", name, i, err)
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

// InstallCRDs creates the given CustomResourceDefinitions (an existing one
// is left as is) and waits until each is Established, so its resources can
// be used at once.
func (c *Cluster) InstallCRDs(ctx context.Context, crds ...*unstructured.Unstructured) error {
	api := c.Dynamic.Resource(crdGVR)
	for _, crd := range crds {
		if crd.GetKind() != "CustomResourceDefinition" {
			return fmt.Errorf("kubetest: %s: kind %q is not CustomResourceDefinition", crd.GetName(), crd.GetKind())
		}
		if _, err := api.Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("kubetest: create CRD %s: %w", crd.GetName(), err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, crd := range crds {
		for {
			got, err := api.Get(ctx, crd.GetName(), metav1.GetOptions{})
			if err == nil && established(got) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("kubetest: CRD %s not Established after 30s (last error: %v)", crd.GetName(), err)
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("kubetest: CRD %s: %w", crd.GetName(), ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// established reports whether a CRD's Established condition is True.
func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
