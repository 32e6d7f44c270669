// Command record plays Kueue fidelity fixtures (internal/kueuefid) against
// the real Kueue controller and writes what it did into each fixture's
// recorded.csv and recorded.meta. scripts/fidelity-kueue.sh (`make
// fidelity-kueue`) builds its dependencies and runs it; docs/fidelity.md
// describes the method.
//
// For each fixture it starts etcd and kube-apiserver (internal/kubetest) in
// a temporary directory, installs Kueue's CRDs, starts the Kueue manager
// with its webhooks registered on loopback, creates the fixture's Kueue
// objects through those webhooks, and then plays the jobs (see driver).
// Everything it started is stopped by PID and the directory removed (-keep
// keeps it, with the logs).
//
// -crds installs the CRDs of the manager's own Kueue module version
// (config/components/crd/bases); without it the recorder installs those that
// scripts/ensure-e2e-deps.sh copied next to -bin (e2e/deps/kueue.version).
//
//	go run ./internal/kueuefid/record -bin DIR -manager BIN -webhooks FILE [-crds DIR] [-kueue-version V] [-scale 1] FIXTURE...
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gpusim/gpusim/internal/kubetest"
	"github.com/gpusim/gpusim/internal/kueuefid"
)

func main() {
	bin := flag.String("bin", "", "directory with etcd and kube-apiserver (scripts/ensure-e2e-deps.sh)")
	mgr := flag.String("manager", "", "the Kueue manager binary (scripts/ensure-kueue.sh)")
	hooks := flag.String("webhooks", "", "Kueue's config/components/webhook/manifests.yaml")
	crds := flag.String("crds", "", "Kueue's config/components/crd/bases (default: the CRDs cached next to -bin)")
	version := flag.String("kueue-version", "v0.17.0", "the Kueue version of -manager, written to recorded.meta")
	scale := flag.Float64("scale", 1, "real seconds per simulated second")
	keep := flag.Bool("keep", false, "keep the temporary directory (logs)")
	timeout := flag.Duration("timeout", 15*time.Minute, "real-time limit per fixture")
	flag.Parse()
	if *bin == "" || *mgr == "" || *hooks == "" || flag.NArg() == 0 || *scale <= 0 {
		fmt.Fprintln(os.Stderr, "usage: record -bin DIR -manager BIN -webhooks FILE [-crds DIR] [-kueue-version V] [-scale S] FIXTURE...")
		os.Exit(2)
	}
	failed := false
	for _, dir := range flag.Args() {
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		err := recordFixture(ctx, *bin, *mgr, *hooks, *crds, *version, *scale, *keep, filepath.Clean(dir))
		cancel()
		if err != nil {
			log.Printf("%s: %v", dir, err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

// kueueGVRs are the kueue.x-k8s.io/v1beta2 resources a fixture may create,
// in creation order (referenced objects first).
var kueueGVRs = []struct {
	kind       string
	resource   string
	namespaced bool
}{
	{"ResourceFlavor", "resourceflavors", false},
	{"WorkloadPriorityClass", "workloadpriorityclasses", false},
	{"Cohort", "cohorts", false},
	{"ClusterQueue", "clusterqueues", false},
	{"LocalQueue", "localqueues", true},
}

func recordFixture(ctx context.Context, bin, mgrBin, hooks, crds, version string, scale float64, keep bool, dir string) (err error) {
	jobs, err := kueuefid.ReadJobs(filepath.Join(dir, "jobs.csv"))
	if err != nil {
		return err
	}
	manPath, grace, err := kueuefid.ReadParams(dir)
	if err != nil {
		return err
	}
	mb, err := os.ReadFile(manPath)
	if err != nil {
		return err
	}
	docs, err := kubetest.DecodeYAML(manPath, mb)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "gpusim-kueuefid-")
	if err != nil {
		return err
	}
	if keep {
		log.Printf("%s: working directory %s (kept)", dir, tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	c, err := kubetest.Start(ctx, kubetest.Options{BinDir: bin, Dir: tmp, StartTimeout: 120 * time.Second})
	if err != nil {
		return err
	}
	defer c.Stop()
	if crds != "" {
		err = c.InstallKueueCRDsFrom(ctx, crds)
	} else {
		err = c.InstallKueueCRDs(ctx)
	}
	if err != nil {
		return err
	}
	for _, ns := range []string{kueueNamespace, "default"} {
		if err := c.CreateNamespace(ctx, ns); err != nil {
			return err
		}
	}
	var fixtureCfg map[string]any
	for _, d := range docs {
		if d.GetKind() == "Configuration" {
			fixtureCfg = d.Object
		}
	}
	m, err := startManager(ctx, mgrBin, version, tmp, c.Config.Host, fixtureCfg)
	if err != nil {
		return err
	}
	defer m.stop()
	if _, err := registerWebhooks(ctx, c, hooks, m.webhookPort, c.Config.CAData); err != nil {
		return err
	}
	// Kueue's objects, through its webhooks (defaulting and validation).
	for _, g := range kueueGVRs {
		gvr := schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: g.resource}
		for _, d := range docs {
			if d.GetKind() != g.kind {
				continue
			}
			if d.GetAPIVersion() != "kueue.x-k8s.io/v1beta2" {
				return fmt.Errorf("%s: %s %s: apiVersion %s (the recorder creates kueue.x-k8s.io/v1beta2 objects)", manPath, g.kind, d.GetName(), d.GetAPIVersion())
			}
			api := c.Dynamic.Resource(gvr)
			var err error
			if g.namespaced {
				ns := d.GetNamespace()
				if ns == "" {
					ns = "default"
				}
				_, err = api.Namespace(ns).Create(ctx, d, metav1.CreateOptions{})
			} else {
				_, err = api.Create(ctx, d, metav1.CreateOptions{})
			}
			if err != nil {
				return fmt.Errorf("%s: create %s %s: %w", manPath, g.kind, d.GetName(), err)
			}
		}
	}
	if err := waitActive(ctx, c, docs); err != nil {
		return err
	}
	order := slices.Clone(jobs)
	slices.SortStableFunc(order, func(a, b kueuefid.Job) int {
		if a.Submit < b.Submit {
			return -1
		} else if a.Submit > b.Submit {
			return 1
		}
		return 0
	})
	byID := map[string]kueuefid.Job{}
	for _, j := range jobs {
		byID[j.ID] = j
	}
	// T0 200 ms past a whole second, so that Workloads created at whole
	// simulated seconds (scale 1) get distinct creationTimestamps (1 s
	// resolution), which Kueue orders its queues by.
	t0 := time.Now().Add(time.Second).Truncate(time.Second).Add(200 * time.Millisecond)
	d := &driver{api: c.Dynamic.Resource(workloadGVR).Namespace("default"), jobs: byID, scale: scale, grace: grace, t0: t0}
	recorded := time.Now().UTC()
	if err := d.play(ctx, order); err != nil {
		return err
	}
	// The manager's cycle starts and what it saw when (kueuefid.Cycle,
	// kueuefid.Seen), from its log once it has stopped.
	m.stop()
	if err := writeInstants(dir, m.log, t0, scale); err != nil {
		return err
	}
	var buf strings.Builder
	if err := kueuefid.WriteRuns(&buf, d.result()); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "recorded.csv"), []byte(buf.String()), 0o644); err != nil {
		return err
	}
	meta := kueuefid.Meta{
		"kueue_version":      version,
		"kube_apiserver":     apiserverVersion(ctx, c),
		"time_scale":         fmt.Sprintf("%g real s per simulated s", scale),
		"eviction_grace":     grace.String(),
		"recorded_utc":       recorded.Format(time.RFC3339),
		"t0_unix_ms":         fmt.Sprint(t0.UnixMilli()),
		"times":              "watch-observed (ms) from T0; admitted_stamp_s is the QuotaReserved lastTransitionTime (1 s resolution)",
		"requeue_batch_note": "Kueue's 1 s requeue batch period (pkg/cache/queue requeueBatchPeriod) is real time, not scaled",
		"instants":           "cycles.csv and seen.csv: the manager's log times (us) from T0: scheduling cycle starts, Workload finishes and releases seen",
	}
	var mbuf strings.Builder
	if err := meta.Write(&mbuf, []string{"kueue_version", "kube_apiserver", "time_scale", "eviction_grace", "recorded_utc", "t0_unix_ms", "times", "requeue_batch_note", "instants"}); err != nil {
		return err
	}
	log.Printf("%s: %d jobs, %d admissions recorded", dir, len(jobs), len(d.result()))
	return os.WriteFile(filepath.Join(dir, "recorded.meta"), []byte(mbuf.String()), 0o644)
}

// writeInstants writes the fixture's cycles.csv and seen.csv from the
// manager's log.
func writeInstants(dir, logPath string, t0 time.Time, scale float64) error {
	f, err := os.Open(logPath)
	if err != nil {
		return err
	}
	defer f.Close()
	cycles, seen, err := kueuefid.ParseManagerLog(f, t0, scale)
	if err != nil {
		return fmt.Errorf("%s: %w", logPath, err)
	}
	if len(cycles) == 0 {
		return fmt.Errorf("%s: no scheduling cycle logged (the scheduler logs its cycles from --zap-log-level=2)", logPath)
	}
	var cb, sb strings.Builder
	if err := kueuefid.WriteCycles(&cb, cycles); err != nil {
		return err
	}
	if err := kueuefid.WriteSeen(&sb, seen); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "cycles.csv"), []byte(cb.String()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "seen.csv"), []byte(sb.String()), 0o644)
}

// apiserverVersion is the API server's /version gitVersion.
func apiserverVersion(ctx context.Context, c *kubetest.Cluster) string {
	v, err := c.Client.Discovery().ServerVersion()
	if err != nil {
		return "unknown"
	}
	_ = ctx
	return v.GitVersion
}

// waitActive waits until every ClusterQueue of docs has condition Active.
func waitActive(ctx context.Context, c *kubetest.Cluster, docs []*unstructured.Unstructured) error {
	api := c.Dynamic.Resource(schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues"})
	deadline := time.Now().Add(60 * time.Second)
	for _, d := range docs {
		if d.GetKind() != "ClusterQueue" {
			continue
		}
		for {
			o, err := api.Get(ctx, d.GetName(), metav1.GetOptions{})
			if err == nil && apimeta.IsStatusConditionTrue(conditions(o), "Active") {
				break
			}
			if time.Now().After(deadline) {
				return errors.Join(fmt.Errorf("ClusterQueue %s not Active after 60s", d.GetName()), err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}
