// Package lucid simulates Lucid (Hu et al., ASPLOS 2023) as the policy "lucid":
// a non-intrusive profiler stand-in (solo sm_util and GPU memory from the
// trace), sharing scores, affine-pair packing under Lucid's three rules (memory,
// score sum, priority ratio), a duration estimator from the history of finished
// jobs, priority = estimated duration x GPUs, and optional indolent packing.
// Non-preemptive. docs/colocation.md lists the rules, the parameters and every
// difference from the paper and its artifact.
package lucid

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/policies/internal/coloc"
	"github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/sim"
)

// Params are lucid's parameters.
type Params struct {
	// Estimator is the duration estimator behind the priority: history
	// (default: mean run time of finished jobs of the same user, workload and
	// GPUs, then user and GPUs, then user, else the walltime estimate) or
	// walltime (the job's walltime estimate only).
	Estimator string `yaml:"estimator"`
	// ScoreSpeeds are the normalised co-located speeds at or above which a job's
	// sharing score is 0 and 1 (default [0.95, 0.85]; below the second: 2).
	ScoreSpeeds []float64 `yaml:"scoreSpeeds"`
	// MaxScore is the largest allowed sum of a pair's sharing scores (default 2).
	MaxScore *int `yaml:"maxScore"`
	// PriorityRatio: a pending job pairs with a running one only when its
	// priority is at most this times the running job's (default 2).
	PriorityRatio float64 `yaml:"priorityRatio"`
	// UnknownUtilisation is the sm_util assumed when the trace gives none
	// (default 1.0: score 2).
	UnknownUtilisation *float64 `yaml:"unknownUtilisation"`
	// Indolent turns on indolent packing: co-location is on only while the
	// forecast of GPU-job arrivals (the mean over the last indolentWindow
	// intervals of indolentInterval) exceeds indolentThreshold (default off:
	// always on, as the artifact for clusters without a forecast).
	Indolent          bool         `yaml:"indolent"`
	IndolentInterval  policies.Dur `yaml:"indolentInterval"`
	IndolentWindow    int          `yaml:"indolentWindow"`
	IndolentThreshold *float64     `yaml:"indolentThreshold"`
	// Placement for exclusive starts (default best-fit: consolidating).
	Placement string `yaml:"placement"`
}

func init() {
	policies.RegisterDecoded[Params](policies.Info{Name: "lucid",
		Summary: "Lucid (ASPLOS'23): non-preemptive, priority = estimated duration x GPUs; affine-pair packing by sharing score, memory and priority ratio; history duration estimator; optional indolent packing.",
		Params:  "estimator: history|walltime; scoreSpeeds ([0.95, 0.85]); maxScore (2); priorityRatio (2); unknownUtilisation (1.0); indolent, indolentInterval (100s), indolentWindow (5), indolentThreshold (2); placement (best-fit)"}, New)
}

// Policy is the lucid policy.
type Policy struct {
	history  bool
	s0, s1   float64
	maxScore int
	ratio    float64
	unknownU float64
	indolent bool
	interval sim.Duration
	window   int
	thresh   float64
	placer   placement.Placer

	est     *Estimator
	prio    []float64 // per JobRef: estimated seconds x GPUs, set at arrival
	score   []int8    // per JobRef: sharing score
	inRun   []bool
	run     []*sim.Job // running jobs in start order
	alone   []*sim.Job // this scheduling point: pair candidates (1-GPU jobs alone on a shared GPU), start order
	memo    coloc.Memo // this scheduling point: smallest failed pairing demand
	whole   coloc.WholeMemo
	pend    []*sim.Job // pending jobs by (priority, JobRef), kept incrementally
	inPend  []bool
	queue   []*sim.Job
	pl      placement.Placement
	cluster *sim.Cluster
	colo    bool
	next    sim.Time // next indolent sample time
	arrived int      // GPU-job arrivals in the current interval
	samples []int
	// Pairs counts co-located starts; Refused counts pair candidates that every
	// engine test allowed but Lucid's rules refused.
	Pairs, Refused int64
}

// New builds the policy from its parameters; errors name the field.
func New(p Params) (*Policy, error) {
	var errs []error
	l := &Policy{history: true, s0: 0.95, s1: 0.85, maxScore: 2, ratio: 2, unknownU: 1,
		indolent: p.Indolent, interval: 100 * sim.Second, window: 5, thresh: 2, colo: true}
	switch p.Estimator {
	case "", "history":
	case "walltime":
		l.history = false
	default:
		errs = append(errs, fmt.Errorf("estimator: want history or walltime, got %q", p.Estimator))
	}
	if p.ScoreSpeeds != nil {
		if len(p.ScoreSpeeds) != 2 || !(p.ScoreSpeeds[0] <= 1 && p.ScoreSpeeds[1] <= p.ScoreSpeeds[0] && p.ScoreSpeeds[1] > 0) {
			errs = append(errs, fmt.Errorf("scoreSpeeds: want two speeds 1 >= a >= b > 0, got %v", p.ScoreSpeeds))
		} else {
			l.s0, l.s1 = p.ScoreSpeeds[0], p.ScoreSpeeds[1]
		}
	}
	if p.MaxScore != nil {
		if *p.MaxScore < 0 || *p.MaxScore > 4 {
			errs = append(errs, fmt.Errorf("maxScore: must be in 0..4, got %d", *p.MaxScore))
		}
		l.maxScore = *p.MaxScore
	}
	if p.PriorityRatio < 0 {
		errs = append(errs, fmt.Errorf("priorityRatio: must be > 0, got %v", p.PriorityRatio))
	} else if p.PriorityRatio > 0 {
		l.ratio = p.PriorityRatio
	}
	if u := p.UnknownUtilisation; u != nil {
		if !(*u >= 0 && *u <= 1) {
			errs = append(errs, fmt.Errorf("unknownUtilisation: must be in [0, 1], got %v", *u))
		}
		l.unknownU = *u
	}
	if p.IndolentInterval > 0 {
		l.interval = sim.Duration(p.IndolentInterval)
	}
	if p.IndolentWindow < 0 {
		errs = append(errs, fmt.Errorf("indolentWindow: must be >= 1, got %d", p.IndolentWindow))
	} else if p.IndolentWindow > 0 {
		l.window = p.IndolentWindow
	}
	if p.IndolentThreshold != nil {
		if *p.IndolentThreshold < 0 {
			errs = append(errs, fmt.Errorf("indolentThreshold: must be >= 0, got %v", *p.IndolentThreshold))
		}
		l.thresh = *p.IndolentThreshold
	}
	name := p.Placement
	if name == "" {
		name = "best-fit"
	}
	var err error
	if l.placer, err = placement.New(name); err != nil {
		errs = append(errs, fmt.Errorf("placement: %w", err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if l.indolent {
		l.colo = false // no forecast yet: the cluster is not known to be busy
	}
	return l, nil
}

// Name implements sim.Policy.
func (l *Policy) Name() string { return "lucid" }

// Score is the sharing score (0, 1 or 2) the profiler stand-in gives a job: its
// predicted normalised speed when packed with a job of the same solo
// utilisation u, 1 when 2u <= 1 else 1/(2u) (the utilisation model of
// docs/sharing.md), against the thresholds scoreSpeeds.
func (l *Policy) Score(s *sim.JobSpec) int {
	u := coloc.Util(s, l.unknownU)
	sp := 1.0
	if 2*u > 1 {
		sp = 1 / (2 * u)
	}
	switch {
	case sp >= l.s0:
		return 0
	case sp >= l.s1:
		return 1
	}
	return 2
}

func (l *Policy) init(v *sim.View) {
	if l.est == nil {
		l.est = NewEstimator()
	}
	if n := v.NumJobs(); len(l.prio) < n { // first call, or jobs submitted since (live runs)
		k := n - len(l.prio)
		l.prio = append(l.prio, make([]float64, k)...)
		l.score = append(l.score, make([]int8, k)...)
		l.inRun = append(l.inRun, make([]bool, k)...)
		l.inPend = append(l.inPend, make([]bool, k)...)
	}
}

// Observe keeps the estimator, the priorities and the start-ordered running
// list.
func (l *Policy) Observe(v *sim.View, e sim.Event) {
	l.init(v)
	j := v.Job(e.Job)
	switch e.Kind {
	case sim.EvArrive:
		est := j.Estimate.Seconds()
		if l.history {
			if h, ok := l.est.Estimate(&j.Spec); ok {
				est = h
			}
		}
		l.prio[j.Ref] = est * float64(max(j.Spec.TotalGPUs(), 1))
		l.score[j.Ref] = int8(l.Score(&j.Spec))
		if j.Spec.TotalGPUs() > 0 {
			l.arrived++
		}
		l.pendAdd(j)
	case sim.EvStart:
		l.pendDel(j)
		l.running(j)
	case sim.EvFinish:
		l.est.Add(&j.Spec, j.End.Sub(j.FirstStart).Seconds())
		l.stopped(j)
	case sim.EvKill, sim.EvTimeout:
		l.stopped(j)
		l.pendDel(j)
	case sim.EvPreempt, sim.EvSuspend:
		l.stopped(j)
		l.pendAdd(j)
	}
}

func (l *Policy) cmp(a, b *sim.Job) int {
	if pa, pb := l.prio[a.Ref], l.prio[b.Ref]; pa != pb {
		if pa < pb {
			return -1
		}
		return 1
	}
	return int(a.Ref - b.Ref)
}

func (l *Policy) pendAdd(j *sim.Job) {
	if !l.inPend[j.Ref] {
		l.inPend[j.Ref] = true
		i, _ := slices.BinarySearchFunc(l.pend, j, l.cmp)
		l.pend = slices.Insert(l.pend, i, j)
	}
}

func (l *Policy) pendDel(j *sim.Job) {
	if l.inPend[j.Ref] {
		l.inPend[j.Ref] = false
		if i, ok := slices.BinarySearchFunc(l.pend, j, l.cmp); ok {
			l.pend = slices.Delete(l.pend, i, i+1)
		}
	}
}

func (l *Policy) running(j *sim.Job) {
	if !l.inRun[j.Ref] {
		l.inRun[j.Ref] = true
		l.run = append(l.run, j)
	}
}

func (l *Policy) stopped(j *sim.Job) {
	if l.inRun[j.Ref] {
		l.inRun[j.Ref] = false
		if i := slices.Index(l.run, j); i >= 0 {
			l.run = slices.Delete(l.run, i, i+1)
		}
	}
}

// Schedule implements sim.Policy: pending jobs by ascending priority (ties:
// submit order); with co-location on, each 1-GPU job first tries an affine
// pair, else an exclusive start, skipping jobs that fit neither; with it off,
// exclusive starts stop at the first job that does not fit (the artifact).
func (l *Policy) Schedule(v *sim.View, p *sim.Plan) error {
	l.init(v)
	c := v.Cluster()
	l.cluster = c
	if l.indolent {
		l.sample(v, p)
	}
	l.queue = append(l.queue[:0], l.pend...)
	l.alone = l.alone[:0]
	l.memo.Reset()
	l.whole.Reset()
	if l.colo {
		for _, r := range l.run {
			if len(r.GPUs) == 1 && r.Spec.Replicas == 1 && c.Sharers(r.GPUs[0]) == 1 {
				l.alone = append(l.alone, r)
			}
		}
	}
	for i, j := range l.queue {
		if l.colo && coloc.Shareable(c, &j.Spec) {
			if t := l.pick(c, j); t >= 0 {
				l.Pairs++
				if err := l.start(p, j, []sim.NodeID{c.GPUNode(t)}, []sim.GPUID{t}); err != nil {
					return err
				}
				continue
			}
		}
		if l.whole.Place(c, l.placer, j, &l.pl) {
			if err := l.start(p, j, l.pl.Nodes, l.pl.GPUs); err != nil {
				return err
			}
			continue
		}
		p.Wait(j.Ref, sim.ReasonNoCapacity)
		if !l.colo {
			for _, k := range l.queue[i+1:] {
				p.Wait(k.Ref, sim.ReasonBlocked)
			}
			break
		}
	}
	return nil
}

func (l *Policy) start(p *sim.Plan, j *sim.Job, nodes []sim.NodeID, gpus []sim.GPUID) error {
	if err := p.AddStart(j.Ref, nodes, gpus); err != nil {
		return err
	}
	l.pendDel(j)
	l.running(j)
	if l.colo && len(j.GPUs) == 1 && j.Spec.Replicas == 1 && l.cluster.Sharers(j.GPUs[0]) == 1 {
		l.alone = append(l.alone, j) // a new pair candidate
		l.memo.Reset()
	}
	return nil
}

// pick is Lucid's affine-pair picker: the first running job, in start order,
// that runs alone on a shared GPU the new job may join (the engine's test:
// mode, clients, memory) and that Lucid's rules allow: both GPU memories known
// (the profiler measured them), sharing scores summing to at most maxScore,
// and the new job's priority at most priorityRatio times the running one's.
//
// Within a scheduling point the queue is in ascending priority, so a job that
// needs at least as much as one that found no partner (score, memory, node
// resources, same accepted mode) finds none either (coloc.Memo).
func (l *Policy) pick(c *sim.Cluster, j *sim.Job) sim.GPUID {
	s := &j.Spec
	sc := float64(l.score[j.Ref])
	if s.GPUMemMiB <= 0 || l.memo.Skip(s, sc) {
		return -1 // no profiled memory: never paired
	}
	for _, r := range l.alone {
		g := r.GPUs[0]
		if c.Sharers(g) != 1 || !coloc.CanJoin(c, s, g) {
			continue
		}
		if r.Spec.GPUMemMiB <= 0 ||
			int(l.score[j.Ref])+int(l.score[r.Ref]) > l.maxScore ||
			l.prio[j.Ref] > l.ratio*l.prio[r.Ref] {
			l.Refused++
			continue
		}
		return g
	}
	l.memo.Fail(s, sc)
	return -1
}

// sample is indolent packing: at every multiple of the interval it records the
// GPU-job arrivals of the interval just ended and sets co-location on when the
// mean of the last window intervals (a persistence forecast of the next ones)
// exceeds the threshold.
func (l *Policy) sample(v *sim.View, p *sim.Plan) {
	now := v.Now()
	if l.next == 0 {
		l.next = sim.Time(l.interval)
	}
	for now >= l.next {
		l.push(l.arrived)
		l.arrived = 0
		l.next = l.next.Add(l.interval)
		if gap := now.Sub(l.next); gap >= sim.Duration(l.window)*l.interval {
			// a long idle gap: the window holds only empty intervals
			for range l.window {
				l.push(0)
			}
			l.next = l.next.Add(gap / l.interval * l.interval)
		}
	}
	sum := 0
	for _, s := range l.samples {
		sum += s
	}
	l.colo = len(l.samples) > 0 && float64(sum)/float64(len(l.samples)) > l.thresh
	if v.PendingCount() > 0 || len(v.Running()) > 0 {
		p.Wake(l.next)
	}
}

func (l *Policy) push(n int) {
	l.samples = append(l.samples, n)
	if len(l.samples) > l.window {
		l.samples = l.samples[1:]
	}
}

// Estimator is the history-based duration estimator (a stand-in for Lucid's
// workload-estimate model): the mean run time (first start to finish) of the
// finished jobs with the same user, workload and GPU count, else the same user
// and GPU count, else the same user.
type Estimator struct {
	m map[string]*mean
}

type mean struct {
	sum float64
	n   int
}

// NewEstimator returns an empty estimator.
func NewEstimator() *Estimator { return &Estimator{m: map[string]*mean{}} }

func keys(s *sim.JobSpec) [3]string {
	g := strconv.Itoa(int(s.TotalGPUs()))
	return [3]string{"uwg\x00" + s.User + "\x00" + s.Workload + "\x00" + g, "ug\x00" + s.User + "\x00" + g, "u\x00" + s.User}
}

// Add records a finished job's run time in seconds.
func (e *Estimator) Add(s *sim.JobSpec, runSeconds float64) {
	for _, k := range keys(s) {
		m := e.m[k]
		if m == nil {
			m = &mean{}
			e.m[k] = m
		}
		m.sum += runSeconds
		m.n++
	}
}

// Estimate returns the estimated run time in seconds, or false when no
// finished job matches.
func (e *Estimator) Estimate(s *sim.JobSpec) (float64, bool) {
	for _, k := range keys(s) {
		if m := e.m[k]; m != nil && m.n > 0 {
			return m.sum / float64(m.n), true
		}
	}
	return 0, false
}
