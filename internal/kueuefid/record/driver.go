package main

import (
	"context"
	"fmt"
	"log"
	"math"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/gpusim/gpusim/internal/kueuefid"
)

// workloadGVR is kueue.x-k8s.io/v1beta2 workloads (Kueue v0.17's storage version).
var workloadGVR = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloads"}

// Condition types and reasons of Kueue's Workload API (apis/kueue/v1beta2).
const (
	condQuotaReserved = "QuotaReserved"
	condAdmitted      = "Admitted"
	condEvicted       = "Evicted"
	condFinished      = "Finished"
	condRequeued      = "Requeued"
)

// driver plays the job controller for standalone Workloads: it creates them
// at their submit times, marks an admitted one Finished after its duration
// and, when Kueue evicts one, clears its admission once its pods would have
// terminated, as Kueue's jobframework reconciler does for a suspended job
// (JobReconciler.ReconcileGenericJob step 6, "handle eviction":
// SetRequeuedCondition, UnsetQuotaReservationWithCondition("Pending"),
// SyncAdmittedCondition). Times are simulated seconds: real elapsed time
// since T0 divided by scale.
type driver struct {
	api   dynamic.ResourceInterface
	jobs  map[string]kueuefid.Job
	scale float64       // real seconds per simulated second
	grace time.Duration // simulated pod termination time after an eviction
	t0    time.Time

	msgs chan func() // work for the event loop (timers, create results)
	wg   sync.WaitGroup

	// owned by the event loop
	runs     map[string][]*kueuefid.Run
	cur      map[string]*kueuefid.Run // the run holding quota
	created  map[string]float64
	finished map[string]bool
	errs     []error
}

func (d *driver) now() float64 { return time.Since(d.t0).Seconds() / d.scale }

// real converts simulated seconds to a real duration.
func (d *driver) real(sec float64) time.Duration {
	return time.Duration(sec * d.scale * float64(time.Second))
}

// workloadObject is the Workload of job j: one PodSet "main" of j.Replicas
// pods, each requesting j.GPUs nvidia.com/gpu.
func workloadObject(j kueuefid.Job) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
		"metadata": map[string]any{"name": j.ID, "namespace": "default"},
		"spec": map[string]any{
			"queueName": j.Queue,
			"priority":  int64(j.Priority),
			"podSets": []any{map[string]any{
				"name": "main", "count": int64(j.Replicas),
				"template": map[string]any{"spec": map[string]any{
					"restartPolicy": "Never",
					"containers": []any{map[string]any{
						"name": "c", "image": "registry.k8s.io/pause:3.10",
						"resources": map[string]any{"requests": map[string]any{"nvidia.com/gpu": fmt.Sprint(j.GPUs)}},
					}},
				}},
			}},
		},
	}}
}

// conditions decodes status.conditions.
func conditions(o *unstructured.Unstructured) []metav1.Condition {
	raw, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	var out []metav1.Condition
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		var c metav1.Condition
		if runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c) == nil {
			out = append(out, c)
		}
	}
	return out
}

// setConditions encodes conds into status.conditions.
func setConditions(o *unstructured.Unstructured, conds []metav1.Condition) error {
	raw := make([]any, 0, len(conds))
	for i := range conds {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&conds[i])
		if err != nil {
			return err
		}
		raw = append(raw, m)
	}
	return unstructured.SetNestedSlice(o.Object, raw, "status", "conditions")
}

// gpuFlavor is the flavor status.admission assigns to nvidia.com/gpu of the
// first PodSet.
func gpuFlavor(o *unstructured.Unstructured) string {
	psa, _, _ := unstructured.NestedSlice(o.Object, "status", "admission", "podSetAssignments")
	if len(psa) == 0 {
		return ""
	}
	f, _, _ := unstructured.NestedString(psa[0].(map[string]any), "flavors", "nvidia.com/gpu")
	return f
}

// play creates the jobs' Workloads on time and runs the event loop until
// every job has finished or ctx ends.
func (d *driver) play(ctx context.Context, order []kueuefid.Job) error {
	d.msgs = make(chan func(), 1024)
	d.runs, d.cur = map[string][]*kueuefid.Run{}, map[string]*kueuefid.Run{}
	d.created, d.finished = map[string]float64{}, map[string]bool{}
	w, err := d.api.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("watch workloads: %w", err)
	}
	defer func() { w.Stop() }()
	go func() {
		for _, j := range order {
			at := d.t0.Add(d.real(j.Submit))
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(at)):
			}
			sent := d.now()
			_, err := d.api.Create(ctx, workloadObject(j), metav1.CreateOptions{})
			d.msgs <- func() {
				d.created[j.ID] = sent
				if err != nil {
					d.errs = append(d.errs, fmt.Errorf("create workload %s: %w", j.ID, err))
					d.finished[j.ID] = true
				}
			}
		}
	}()
	rv := ""
	for len(d.finished) < len(d.jobs) && len(d.errs) == 0 {
		select {
		case <-ctx.Done():
			return fmt.Errorf("recording: %w (%d of %d jobs finished)", ctx.Err(), len(d.finished), len(d.jobs))
		case f := <-d.msgs:
			f()
		case ev, ok := <-w.ResultChan():
			if !ok {
				// the API server ended the watch: resume where it stopped
				w, err = d.api.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
				if err != nil {
					return fmt.Errorf("rewatch workloads: %w", err)
				}
				continue
			}
			o, isObj := ev.Object.(*unstructured.Unstructured)
			if !isObj || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			rv = o.GetResourceVersion()
			d.observe(ctx, o)
		}
	}
	d.wg.Wait()
	for len(d.msgs) > 0 {
		(<-d.msgs)()
	}
	if len(d.errs) > 0 {
		return d.errs[0]
	}
	return nil
}

// observe updates a job's runs from a watched Workload.
func (d *driver) observe(ctx context.Context, o *unstructured.Unstructured) {
	id := o.GetName()
	j, ok := d.jobs[id]
	if !ok || d.finished[id] {
		return
	}
	now := d.now()
	conds := conditions(o)
	qr := apimeta.FindStatusCondition(conds, condQuotaReserved)
	reserved := qr != nil && qr.Status == metav1.ConditionTrue
	if fc := apimeta.FindStatusCondition(conds, condFinished); fc != nil && fc.Status == metav1.ConditionTrue {
		d.finished[id] = true
		return
	}
	cur := d.cur[id]
	if cur == nil && reserved {
		cur = &kueuefid.Run{ID: id, Run: len(d.runs[id]) + 1, Created: d.created[id], Admitted: now,
			AdmittedStamp: qr.LastTransitionTime.Sub(d.t0).Seconds() / d.scale,
			Flavor:        gpuFlavor(o), Evicted: math.NaN(), Released: math.NaN(), Finished: math.NaN()}
		d.runs[id] = append(d.runs[id], cur)
		d.cur[id] = cur
		run := cur
		time.AfterFunc(d.real(j.Duration), func() { d.msgs <- func() { d.finish(ctx, run) } })
		log.Printf("%8.3f admit %s run %d flavor %s", now, id, run.Run, run.Flavor)
	}
	if cur == nil {
		return
	}
	if ec := apimeta.FindStatusCondition(conds, condEvicted); ec != nil && ec.Status == metav1.ConditionTrue && math.IsNaN(cur.Evicted) && math.IsNaN(cur.Finished) {
		cur.Evicted, cur.EvictReason = now, ec.Reason
		run := cur
		log.Printf("%8.3f evict %s run %d (%s: %s)", now, id, run.Run, ec.Reason, ec.Message)
		time.AfterFunc(d.real(d.grace.Seconds()), func() { d.msgs <- func() { d.release(ctx, run) } })
	}
	if !reserved {
		cur.Released = now
		d.cur[id] = nil
		log.Printf("%8.3f released %s run %d", now, id, cur.Run)
	}
}

// finish marks run's Workload Finished, unless it was evicted meanwhile.
func (d *driver) finish(ctx context.Context, run *kueuefid.Run) {
	if d.cur[run.ID] != run || !math.IsNaN(run.Evicted) || !math.IsNaN(run.Finished) {
		return
	}
	run.Finished = d.now()
	log.Printf("%8.3f finish %s run %d", run.Finished, run.ID, run.Run)
	d.update(ctx, run.ID, func(o *unstructured.Unstructured, conds []metav1.Condition) ([]metav1.Condition, bool) {
		if apimeta.IsStatusConditionTrue(conds, condEvicted) {
			return nil, false
		}
		apimeta.SetStatusCondition(&conds, metav1.Condition{Type: condFinished, Status: metav1.ConditionTrue,
			Reason: "Succeeded", Message: "gpusim driver: the job ran its duration", ObservedGeneration: o.GetGeneration()})
		return conds, true
	})
}

// release clears an evicted run's admission after its pods' grace period,
// as the jobframework reconciler does once the stopped job is inactive.
func (d *driver) release(ctx context.Context, run *kueuefid.Run) {
	if d.cur[run.ID] != run {
		return
	}
	d.update(ctx, run.ID, func(o *unstructured.Unstructured, conds []metav1.Condition) ([]metav1.Condition, bool) {
		if !apimeta.IsStatusConditionTrue(conds, condQuotaReserved) {
			return nil, false
		}
		ec := apimeta.FindStatusCondition(conds, condEvicted)
		if ec == nil || ec.Status != metav1.ConditionTrue {
			// Reserved, but no longer evicted: a later status write
			// dropped the Evicted condition the watch showed. Seen with
			// fairshare-race (v0.16.2 and v0.17.0): c2 preempted while
			// the scheduler was still applying its admission, and the
			// API kept the admission without the eviction. A job
			// controller keeps such a job running, and so does the driver.
			d.msgs <- func() { d.undoEviction(ctx, run) }
			return nil, false
		}
		requeued := metav1.ConditionFalse
		if ec.Reason == "Preempted" || ec.Reason == "NodeFailures" {
			requeued = metav1.ConditionTrue
		}
		apimeta.SetStatusCondition(&conds, metav1.Condition{Type: condRequeued, Status: requeued, Reason: ec.Reason,
			Message: ec.Message, ObservedGeneration: o.GetGeneration()})
		apimeta.SetStatusCondition(&conds, metav1.Condition{Type: condQuotaReserved, Status: metav1.ConditionFalse, Reason: "Pending",
			Message: ec.Message, ObservedGeneration: o.GetGeneration()})
		apimeta.SetStatusCondition(&conds, metav1.Condition{Type: condAdmitted, Status: metav1.ConditionFalse, Reason: "NoReservation",
			Message: "The workload has no reservation", ObservedGeneration: o.GetGeneration()})
		unstructured.RemoveNestedField(o.Object, "status", "admission")
		return conds, true
	})
}

// undoEviction lets run go on after its eviction vanished from the
// Workload (see release): it is not evicted, and finishes when its duration
// is over (the timer observe set), or at once if that has passed.
func (d *driver) undoEviction(ctx context.Context, run *kueuefid.Run) {
	if d.cur[run.ID] != run || math.IsNaN(run.Evicted) {
		return
	}
	log.Printf("%8.3f eviction of %s run %d undone (the Workload is reserved, not evicted)", d.now(), run.ID, run.Run)
	run.Evicted, run.EvictReason = math.NaN(), ""
	if run.Admitted+d.jobs[run.ID].Duration <= d.now() {
		d.finish(ctx, run) // its timer (observe) found it evicted
	}
}

// update applies change to the Workload's status in a goroutine, retrying
// on conflicts with a fresh copy.
func (d *driver) update(ctx context.Context, id string, change func(*unstructured.Unstructured, []metav1.Condition) ([]metav1.Condition, bool)) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		for attempt := 0; attempt < 20; attempt++ {
			o, err := d.api.Get(ctx, id, metav1.GetOptions{})
			if err != nil {
				d.fail(fmt.Errorf("get workload %s: %w", id, err))
				return
			}
			conds, ok := change(o, conditions(o))
			if !ok {
				return
			}
			if err := setConditions(o, conds); err != nil {
				d.fail(err)
				return
			}
			_, err = d.api.UpdateStatus(ctx, o, metav1.UpdateOptions{FieldManager: "gpusim-kueuefid-driver"})
			if err == nil {
				return
			}
			if !apierrors.IsConflict(err) {
				d.fail(fmt.Errorf("update workload %s status: %w", id, err))
				return
			}
		}
		d.fail(fmt.Errorf("update workload %s status: conflicts 20 times", id))
	}()
}

func (d *driver) fail(err error) {
	if strings.Contains(err.Error(), "context canceled") {
		return
	}
	d.msgs <- func() { d.errs = append(d.errs, err) }
}

// result lists every run of every job.
func (d *driver) result() []kueuefid.Run {
	var out []kueuefid.Run
	for _, rs := range d.runs {
		for _, r := range rs {
			out = append(out, *r)
		}
	}
	return out
}
