// Package federation runs several clusters, each with its own engine and
// policy, on one virtual clock, with a dispatcher that sends every job whole to
// exactly one of them (docs/federation.md).
//
// The model is Kueue's MultiKueue (KEP-693, keps/693-multikueue/README.md in
// kubernetes-sigs/kueue; kueue.sigs.k8s.io/docs/concepts/multikueue): a
// manager cluster holds the queue users submit to and worker clusters, each a
// standalone scheduler, run the jobs; a workload is admitted whole in one
// worker, never split. The KEP's dispatching creates the workload in every
// worker and keeps the first that admits it, removing the others; this
// package instead takes one decision per job at submission, from the
// workers' state, with an explicit rule (Strategy). docs/federation.md lists
// the differences.
//
// Timing: the manager sees job j at its Submit time t and decides from the
// workers' state after every event before t (its ends at t not yet applied);
// the job arrives in worker c at t + WAN(c), the latency of that worker's
// link. Jobs are dispatched in (Submit, ID) order, so the outcome does not
// depend on input order or on GOMAXPROCS (the loop is sequential).
package federation

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/sim"
)

// Strategy is the dispatcher's rule for choosing a worker cluster.
type Strategy string

// The dispatching strategies. Each considers only the clusters where the job
// could ever run (sim.Cluster.Feasible on the empty cluster); among those it
// prefers the clusters with room now (free GPUs of the job's allowed models
// minus the GPUs already queued or in flight there, at least the job's GPUs).
const (
	// FirstFit takes the first listed cluster with room, else the first
	// feasible one (MultiKueue's worker order).
	FirstFit Strategy = "first-fit"
	// Cheapest takes the cluster with the lowest cost per GPU-hour among those
	// with room, else among the feasible ones (ties: listed order).
	Cheapest Strategy = "cheapest"
	// LowestCarbon takes the cluster with the lowest grid carbon intensity at
	// the dispatch time among those with room, else among the feasible ones.
	LowestCarbon Strategy = "lowest-carbon"
	// MostFree takes the cluster with the most room (which may be negative:
	// the least backlog), ties in listed order.
	MostFree Strategy = "most-free"
)

// Strategies lists the valid strategies.
func Strategies() []Strategy { return []Strategy{FirstFit, Cheapest, LowestCarbon, MostFree} }

// Valid reports whether s is a known strategy.
func (s Strategy) Valid() bool { return slices.Contains(Strategies(), s) }

// Member is one worker cluster.
type Member struct {
	// Name labels the cluster in decisions and outputs.
	Name string
	// Config is the cluster's engine configuration: cluster, policy, seed and
	// simulation settings. Its Jobs are ignored (Run sets them).
	Config sim.Config
	// CostPerGPUHour prices the cluster's GPU-hours (currency units, >= 0).
	CostPerGPUHour float64
	// CarbonIntensity is the cluster's grid intensity (gCO2e/kWh) when Carbon
	// is nil.
	CarbonIntensity float64
	// Carbon, when set, is the cluster's intensity series (Carbon.At(t)).
	Carbon *sim.CarbonSeries
	// WAN is the one-way latency from the manager to the cluster: a job
	// dispatched at t arrives at t + WAN.
	WAN sim.Duration
}

// Intensity returns the member's carbon intensity at t (gCO2e/kWh).
func (m *Member) Intensity(t sim.Time) float64 {
	if m.Carbon != nil {
		return m.Carbon.At(t)
	}
	return m.CarbonIntensity
}

// Why says how a dispatch decision was reached.
type Why uint8

// Dispatch reasons.
const (
	// WhyRoom: the chosen cluster had room for the job at the dispatch time.
	WhyRoom Why = iota
	// WhyQueued: no feasible cluster had room; the job queues in the chosen one.
	WhyQueued
	// WhyRejected: the job fits no cluster (Cluster = -1); it never runs.
	WhyRejected
	// WhyPastHorizon: it would arrive after the horizon; it is not sent.
	WhyPastHorizon
	// WhySpan: an opted-in gang that fits no single cluster, split over
	// several (Span; Result.Spans lists them).
	WhySpan
)

var whyNames = [...]string{"room", "queued", "rejected", "past-horizon", "span"}

// String returns the reason's name (the dispatch.csv value).
func (w Why) String() string {
	if int(w) < len(whyNames) {
		return whyNames[w]
	}
	return fmt.Sprintf("why(%d)", w)
}

// Decision is the dispatch of one job.
type Decision struct {
	Job     sim.JobID
	Submit  sim.Time // when the manager saw it (its trace submit time)
	GPUs    int64    // GPUs it asks for (replicas x GPUs per replica)
	Cluster int      // index into the members; -1 when rejected
	Arrive  sim.Time // Submit + the cluster's WAN latency (Never when not sent)
	Why     Why
	// Feasible counts the clusters it could ever run on; Room those with room
	// at the dispatch time.
	Feasible, Room int
}

// SpanSplit is a spanning gang's split (Result.Spans): the clusters of its
// parts and their replicas. Its Decision has Why WhySpan, Cluster -1 and
// Arrive the parts' common start (Never if they never started).
type SpanSplit struct {
	Clusters []int
	Replicas []int32
}

// Result is the outcome of a federated run.
type Result struct {
	// Clusters holds each member's result, over the jobs dispatched to it
	// (same order as the members).
	Clusters []*sim.Result
	// Decisions holds one decision per job, in dispatch order (Submit, ID).
	Decisions []Decision
	// Spans gives the split of each spanning gang, by index into Decisions
	// (nil without cross-cluster gangs).
	Spans map[int]SpanSplit
}

// Run dispatches jobs over members with strategy st and runs every member to
// the end (or its horizon). Every member must have the same horizon.
func Run(ctx context.Context, members []Member, jobs []sim.JobSpec, st Strategy) (*Result, error) {
	return RunWith(ctx, members, jobs, st, nil)
}

// RunWith is Run with cross-cluster gangs (span; nil: none, Run).
func RunWith(ctx context.Context, members []Member, jobs []sim.JobSpec, st Strategy, span *Span) (*Result, error) {
	if len(members) == 0 {
		return nil, errors.New("federation: no clusters")
	}
	if !st.Valid() {
		return nil, fmt.Errorf("federation: unknown dispatcher %q", st)
	}
	for i := range jobs {
		if jobs[i].DAG != nil {
			// a stage and its predecessors could land in different clusters
			return nil, fmt.Errorf("federation: job %s: job dependencies (deps) are not supported with federation yet", jobs[i].ID)
		}
	}
	nUser := len(jobs)
	jobs, spans := splitSpans(members, jobs, span)
	if len(spans) > 0 {
		for c := range members {
			if members[c].Config.Telemetry != nil {
				return nil, fmt.Errorf("federation: cluster %s: cross-cluster gangs are not supported with telemetry stragglers", members[c].Name)
			}
		}
	}
	// Dispatch order is JobRef order: NewEngine sorts the same way.
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		sa, sb := &jobs[a], &jobs[b]
		if sa.Submit != sb.Submit {
			if sa.Submit < sb.Submit {
				return -1
			}
			return 1
		}
		return strings.Compare(string(sa.ID), string(sb.ID))
	})
	steps := make([]*sim.Stepper, len(members))
	feasible := make([][]bool, len(members)) // [member][ref]
	for c := range members {
		m := &members[c]
		if m.WAN < 0 {
			return nil, fmt.Errorf("federation: cluster %s: negative WAN latency", m.Name)
		}
		if m.Config.Horizon != members[0].Config.Horizon {
			return nil, fmt.Errorf("federation: cluster %s: horizon differs from cluster %s's", m.Name, members[0].Name)
		}
		cfg := m.Config
		cfg.Jobs = jobs
		s, err := sim.NewStepper(cfg)
		if err != nil {
			return nil, fmt.Errorf("federation: cluster %s: %w", m.Name, err)
		}
		steps[c] = s
		feasible[c] = make([]bool, len(jobs))
		for r, i := range order {
			feasible[c][r] = cfg.Cluster.Feasible(&jobs[i]) == nil
		}
	}
	d := &dispatcher{members: members, steps: steps, strategy: st, inflight: make([]int64, len(members))}
	var spanOf map[int]int // user job index -> spans index
	var placer placement.Placer
	if len(spans) > 0 {
		spanOf = make(map[int]int, len(spans))
		refOf := make([]sim.JobRef, len(jobs))
		for r, i := range order {
			refOf[i] = sim.JobRef(r)
		}
		k := nUser
		for g := range spans {
			spanOf[spans[g].job] = g
			for p := range spans[g].parts {
				spans[g].parts[p].ref = refOf[k]
				k++
			}
		}
		var err error
		if placer, err = placement.New("first-fit"); err != nil {
			return nil, err
		}
	}
	var waiting []int // spans dispatched, not started, in dispatch order
	var spanBuf []sim.SpanPart
	queues := make([][]pending, len(members)) // per member, in arrival order
	heads := make([]int, len(members))
	horizon := steps[0].Horizon()
	res := &Result{Decisions: make([]Decision, 0, len(jobs)), Clusters: make([]*sim.Result, len(members))}
	next := 0
	var arr []sim.JobRef
	last := sim.Time(-1)
	for iter := 0; ; iter++ {
		for next < len(order) && order[next] >= nUser {
			next++ // a span part: started by the manager, never dispatched
		}
		t := sim.Never
		if next < len(order) {
			t = jobs[order[next]].Submit
		}
		for _, g := range waiting {
			if r := spans[g].ready; r > last {
				t = min(t, r)
			}
		}
		for c, s := range steps {
			t = min(t, s.Next())
			if heads[c] < len(queues[c]) {
				t = min(t, queues[c][heads[c]].at)
			}
		}
		if t == sim.Never || t > horizon {
			break
		}
		if iter&1023 == 0 && ctx != nil {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		last = t
		for ; next < len(order) && jobs[order[next]].Submit == t; next++ {
			if order[next] >= nUser {
				continue
			}
			r := sim.JobRef(next)
			if g, ok := spanOf[order[next]]; ok {
				sg := &spans[g]
				dec := Decision{Job: jobs[order[next]].ID, Submit: t, GPUs: wholeGPUs(&jobs[order[next]]), Cluster: -1, Arrive: sim.Never, Why: WhySpan}
				var wan sim.Duration
				var split SpanSplit
				for _, p := range sg.parts {
					split.Clusters = append(split.Clusters, p.member)
					split.Replicas = append(split.Replicas, p.replicas)
					wan = max(wan, members[p.member].WAN)
				}
				sg.ready, sg.dec = t.Add(wan), len(res.Decisions)
				if res.Spans == nil {
					res.Spans = map[int]SpanSplit{}
				}
				res.Spans[sg.dec] = split
				waiting = append(waiting, g)
				res.Decisions = append(res.Decisions, dec)
				continue
			}
			dec := d.decide(&jobs[order[next]], r, feasible, t)
			if dec.Cluster >= 0 {
				if dec.Arrive > horizon {
					dec.Why = WhyPastHorizon
					dec.Arrive = sim.Never
				} else {
					queues[dec.Cluster] = append(queues[dec.Cluster], pending{at: dec.Arrive, ref: r, gpus: dec.GPUs})
					d.inflight[dec.Cluster] += dec.GPUs
				}
			}
			res.Decisions = append(res.Decisions, dec)
		}
		for c, s := range steps {
			arr = arr[:0]
			q := queues[c]
			for heads[c] < len(q) && q[heads[c]].at == t {
				arr = append(arr, q[heads[c]].ref)
				d.inflight[c] -= q[heads[c]].gpus
				heads[c]++
			}
			if next == len(order) && heads[c] == len(q) && len(waiting) == 0 {
				s.Done()
			}
			if len(arr) == 0 && s.Next() != t {
				continue
			}
			if err := s.Step(t, arr); err != nil {
				return nil, &MemberError{Index: c, Name: members[c].Name, Err: err}
			}
		}
		// Spanning gangs, after the clusters' own scheduling at t: each
		// ready one starts, all parts at once, if every part fits now.
		kept := waiting[:0]
		for _, g := range waiting {
			sg := &spans[g]
			if sg.ready <= t {
				var ok bool
				var err error
				if spanBuf, ok, err = tryStart(sg, steps, placer, t, spanBuf); err != nil {
					return nil, fmt.Errorf("federation: job %s: %w", jobs[sg.job].ID, err)
				} else if ok {
					res.Decisions[sg.dec].Arrive = t
					continue
				}
			}
			kept = append(kept, g)
		}
		waiting = kept
	}
	for ; next < len(order); next++ { // submitted after the horizon: never seen
		if order[next] >= nUser {
			continue
		}
		j := &jobs[order[next]]
		res.Decisions = append(res.Decisions, Decision{Job: j.ID, Submit: j.Submit, GPUs: wholeGPUs(j), Cluster: -1, Arrive: sim.Never, Why: WhyPastHorizon})
	}
	for c, s := range steps {
		res.Clusters[c] = s.Result()
		res.Clusters[c].Policy = members[c].Name
	}
	return res, nil
}

// MemberError is an error of one member's engine or policy during the run.
type MemberError struct {
	Index int    // into the members
	Name  string // the member's name
	Err   error
}

func (e *MemberError) Error() string { return fmt.Sprintf("federation: cluster %s: %v", e.Name, e.Err) }

// Unwrap returns the member's error.
func (e *MemberError) Unwrap() error { return e.Err }

// pending is a dispatched job on its way to a cluster.
type pending struct {
	at   sim.Time
	ref  sim.JobRef
	gpus int64
}

type dispatcher struct {
	members  []Member
	steps    []*sim.Stepper
	strategy Strategy
	inflight []int64 // GPUs dispatched to each cluster, not arrived yet
}

// wholeGPUs is the GPUs a job asks for: replicas x GPUs per replica (a
// fractional replica counts its device, as the engine's pending GPUs do).
func wholeGPUs(s *sim.JobSpec) int64 { return int64(s.TotalGPUs()) }

// room is cluster c's free GPUs of the job's allowed models at t, less what
// is queued or in flight there.
func (d *dispatcher) room(c int, s *sim.JobSpec) int64 {
	cl := d.steps[c].View().Cluster()
	var free int64
	for m, name := range cl.Models() {
		if s.AllowsModel(name) {
			free += cl.ModelFree(m)
		}
	}
	return free - d.steps[c].PendingGPUs() - d.inflight[c]
}

// score is the strategy's key for cluster c (lower is better).
func (d *dispatcher) score(c int, room int64, t sim.Time) float64 {
	switch d.strategy {
	case Cheapest:
		return d.members[c].CostPerGPUHour
	case LowestCarbon:
		return d.members[c].Intensity(t)
	case MostFree:
		return -float64(room)
	}
	return float64(c) // first-fit: listed order
}

func (d *dispatcher) decide(s *sim.JobSpec, r sim.JobRef, feasible [][]bool, t sim.Time) Decision {
	dec := Decision{Job: s.ID, Submit: s.Submit, GPUs: wholeGPUs(s), Cluster: -1, Arrive: sim.Never, Why: WhyRejected}
	bestRoom, bestAny := -1, -1
	scoreRoom, scoreAny := math.Inf(1), math.Inf(1)
	for c := range d.members {
		if !feasible[c][r] {
			continue
		}
		dec.Feasible++
		room := d.room(c, s)
		sc := d.score(c, room, t)
		if sc < scoreAny {
			bestAny, scoreAny = c, sc
		}
		if room >= dec.GPUs {
			dec.Room++
			if sc < scoreRoom {
				bestRoom, scoreRoom = c, sc
			}
		}
	}
	switch {
	case bestRoom >= 0:
		dec.Cluster, dec.Why = bestRoom, WhyRoom
	case bestAny >= 0:
		dec.Cluster, dec.Why = bestAny, WhyQueued
	default:
		return dec
	}
	dec.Arrive = t.Add(d.members[dec.Cluster].WAN)
	return dec
}
