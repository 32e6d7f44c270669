package kube

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpusim/gpusim/sim"
)

// adoptAtStart rebuilds the model from the pods gpusim already bound (a
// restart, or a new leader): every gang with a bound, unfinished pod is
// submitted and adopted (sim.Live.Adopt) at its pods' nodes and recorded
// GPUs. A half-bound gang (some pods bound, the others pending with the
// gpusim.io/node annotation written before any bind) is completed by binding
// the rest to their recorded nodes, or, if that fails, rolled back (its
// bound pods deleted); it is never left half-bound. The bound members may
// already have finished when the restart comes (a leader stopped between two
// binds of short pods): finished pods that carry the same gpusim.io/placement
// as a pending, annotated member count as bound members of that gang, so it
// is completed too rather than waiting for --gang-timeout and being skipped.
// Shadow runs adopt every bound pod at its real node (the cluster state
// gpusim decides against).
func (s *scheduler) adoptAtStart(ctx context.Context) error {
	all, err := s.pods.List(everything)
	if err != nil {
		return fmt.Errorf("kube: pods: %w", err)
	}
	byGang := map[string][]*corev1.Pod{}
	finished := map[string][]*corev1.Pod{}
	bound := map[string]bool{}
	for _, p := range all {
		if !s.mine(p) || p.DeletionTimestamp != nil {
			continue
		}
		kind, name := gangOf(p)
		k := gangKey(p.Namespace, kind, name)
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			if p.Spec.NodeName != "" && p.Annotations[AnnotationPlacement] != "" {
				finished[k] = append(finished[k], p)
			}
			continue
		}
		byGang[k] = append(byGang[k], p)
		if p.Spec.NodeName != "" {
			bound[k] = true
		}
	}
	// Half-bound gangs whose bound members have all finished.
	for k, done := range finished {
		if s.opt.Shadow {
			break
		}
		if joined := finishedMembers(byGang[k], done); len(joined) > 0 {
			byGang[k] = append(byGang[k], joined...)
			bound[k] = true
		}
	}
	keys := make([]string, 0, len(bound))
	for k := range bound {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		pods := byGang[k]
		kind, name := gangOf(pods[0])
		g := &gang{key: k, kind: kind, ns: pods[0].Namespace, name: name, id: jobID(pods[0].Namespace, name), pods: map[string]*corev1.Pod{}, first: s.opt.Now(), last: s.opt.Now()}
		for _, p := range pods {
			g.pods[p.Name] = p
			s.podGang[p.Namespace+"/"+p.Name] = k
		}
		s.gangs[k] = g
		if err := s.adoptGang(ctx, g); err != nil {
			s.logf("%-14s not adopted: %v", g.id, err)
		}
	}
	return nil
}

// finishedMembers returns the finished pods of a gang that belong to the
// same binding as its pending members: the gang has a pending pod carrying
// a gpusim.io/node annotation, every pending or bound unfinished pod carries
// one same gpusim.io/placement, and the finished pod carries it too (pods of
// an earlier run of the gang, placed elsewhere, are left out). nil when the
// gang is not half-bound in that sense.
func finishedMembers(live, done []*corev1.Pod) []*corev1.Pod {
	place, pendingAnnotated := "", false
	for _, p := range live {
		pl := p.Annotations[AnnotationPlacement]
		if pl == "" || place != "" && pl != place {
			return nil
		}
		place = pl
		if p.Spec.NodeName == "" && p.Annotations[AnnotationNode] != "" {
			pendingAnnotated = true
		}
	}
	if !pendingAnnotated {
		return nil
	}
	var out []*corev1.Pod
	for _, p := range done {
		if p.Annotations[AnnotationPlacement] == place {
			out = append(out, p)
		}
	}
	return out
}

// adoptGang completes (or rolls back) a half-bound gang, then submits and
// adopts it.
func (s *scheduler) adoptGang(ctx context.Context, g *gang) error {
	pods := g.sortedPods()
	var pending, boundPods []*corev1.Pod
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			pending = append(pending, p)
		} else {
			boundPods = append(boundPods, p)
		}
	}
	if len(pending) > 0 && !s.opt.Shadow {
		if s.opt.DryRun {
			g.skipped = true
			return fmt.Errorf("half-bound (%d of %d pods bound); a dry run does not complete it", len(boundPods), len(pods))
		}
		var err error
		for _, p := range pending {
			node := p.Annotations[AnnotationNode]
			if node == "" || len(node) > maxAnnotation {
				err = fmt.Errorf("pod %s has no %s annotation", p.Name, AnnotationNode)
				break
			}
			if _, ok := s.model.names[node]; !ok {
				err = fmt.Errorf("pod %s: recorded node %q is not a GPU node of the cluster", p.Name, node)
				break
			}
			if err = s.b.bind(p, node); err != nil {
				break
			}
			q := p.DeepCopy()
			q.Spec.NodeName = node
			g.pods[p.Name] = q
			boundPods = append(boundPods, q)
		}
		if err != nil {
			s.stats.RolledBack++
			s.observe(func(o Observer) { o.Decision("rollback") })
			for _, p := range boundPods {
				s.b.deletePod(p)
				s.b.event(ctx, p, corev1.EventTypeWarning, "GpusimRollback", "half-bound gang found at start could not be completed and was rolled back: "+err.Error())
				delete(g.pods, p.Name)
			}
			g.done = true
			return fmt.Errorf("half-bound gang rolled back: %w", err)
		}
		s.stats.Completed++
		s.stats.Binds += len(pending)
		s.logf("%-14s half-bound gang completed (%d pods bound now)", g.id, len(pending))
	}
	pods = g.sortedPods()
	for _, p := range pods {
		if podGPUs(p) > 0 {
			g.replicas = append(g.replicas, p.Name)
		} else {
			g.helpers = append(g.helpers, p.Name)
		}
	}
	if len(g.replicas) == 0 {
		g.replicas, g.helpers = g.helpers, nil
	}
	spec, _, err := translate(s.model, g.id, pods, s.priority, s.opt.DefaultDuration)
	if err != nil {
		g.skipped = true
		return err
	}
	spec.GPUModels = nil // it runs where it runs
	ref, err := s.live.Submit(spec)
	if err != nil {
		g.skipped = true
		return err
	}
	g.submitted, g.ref = true, ref
	s.byRef[ref] = g
	c := s.live.View().Cluster()
	var nodes []sim.NodeID
	var gpus []sim.GPUID
	for r, name := range g.replicas {
		p := g.pods[name]
		n, ok := s.model.names[p.Spec.NodeName]
		if !ok {
			return s.adoptFailed(g, fmt.Errorf("pod %s runs on %q, not a GPU node of the cluster", name, p.Spec.NodeName))
		}
		nodes = append(nodes, n)
		first, end := c.NodeGPUs(n)
		idx := recordedGPUs(p.Annotations[AnnotationGPUs], int(end-first), int(spec.ReplicaGPUs(r)))
		for _, i := range idx {
			gpus = append(gpus, first+sim.GPUID(i))
		}
		if idx == nil {
			// No (valid) record: the node's free GPUs, lowest first.
			k := int(spec.ReplicaGPUs(r))
			for gpu := first; gpu < end && k > 0; gpu++ {
				if c.GPUUsed(gpu) == 0 && !slices.Contains(gpus, gpu) {
					gpus = append(gpus, gpu)
					k--
				}
			}
		}
	}
	if err := s.live.Adopt(ref, nodes, gpus); err != nil {
		return s.adoptFailed(g, err)
	}
	g.running = true
	s.stats.Adopted++
	s.logf("%-14s adopted on %s", g.id, sim.PlacementString(c, s.live.View().Job(ref)))
	if s.opt.DryRun || s.opt.Shadow {
		j := s.live.View().Job(ref)
		s.b.predicted = append(s.b.predicted, predictedEnd{at: s.live.Now().Add(max(j.Spec.Duration, 1)), job: ref})
	}
	return nil
}

// adoptFailed marks a submitted job that could not be adopted as broken:
// the backend refuses its start, so the engine ends it as failed the first
// time the policy picks it (its pods keep running, outside the model, and are
// never touched).
func (s *scheduler) adoptFailed(g *gang, err error) error {
	g.broken = true
	return err
}

// recordedGPUs parses a gpusim.io/gpus annotation: want distinct indexes in
// [0, n). nil when absent or malformed.
func recordedGPUs(v string, n, want int) []int {
	if v == "" || len(v) > maxAnnotation {
		return nil
	}
	parts := strings.Split(v, ",")
	if len(parts) != want {
		return nil
	}
	out := make([]int, 0, want)
	for _, p := range parts {
		i, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || i < 0 || i >= n || slices.Contains(out, i) {
			return nil
		}
		out = append(out, i)
	}
	return out
}
