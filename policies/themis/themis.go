// Package themis is Themis's finish-time-fair scheduler (Mahajan et al.,
// "Themis: Fair and Efficient GPU Cluster Scheduling", NSDI'20), adapted to
// rigid gang jobs: GPUs are handed out as leases; whenever GPUs are free or a
// lease expires, the arbiter offers them to the (1-f) fraction of active jobs
// with the largest finish-time fairness ratio ρ, which bid their ρ with and
// without the GPUs; a partial-allocation auction picks the winners that
// maximise the product of ρ improvements (Nash social welfare); what the
// auction leaves is handed to the other jobs in ρ order (work conservation).
// Jobs whose lease expired and that get nothing are preempted at the lease
// boundary, keeping their progress. The paper has no public code; every
// adaptation is listed in docs/themis.md.
package themis

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/sim"
)

// Params are the themis policy's parameters.
type Params struct {
	// Lease is the length of a GPU lease (default 10m): a job keeps the GPUs it
	// won until then, and they are auctioned again at its end.
	Lease *policies.Dur `yaml:"lease"`
	// FairnessKnob f in [0, 1] (default 0.8): the auction is open to the
	// ceil((1-f) x N) active jobs with the largest ρ (at least one); f = 0 lets
	// every job bid (most efficient), f near 1 only the worst-treated one
	// (most fair).
	FairnessKnob *float64 `yaml:"fairnessKnob"`
	// Placement places the jobs an auction starts (default best-fit).
	Placement string `yaml:"placement"`
	// MaxAuctionCells bounds the exact auction (bidders x free GPUs of its
	// knapsack table, default 4,000,000); larger auctions are solved greedily
	// by welfare gain per GPU, and counted in Themis.GreedyAuctions.
	MaxAuctionCells int `yaml:"maxAuctionCells"`
}

func init() {
	policies.RegisterDecoded[Params](policies.Info{
		Name:    "themis",
		Summary: "Themis (NSDI'20): GPU leases auctioned to the (1-f) fraction of jobs with the worst finish-time fairness ρ = T_shared/T_independent; partial-allocation auction maximising the product of ρ improvements, leftovers to the rest; expired leases not renewed are preempted (progress kept).",
		Params:  "lease (10m); fairnessKnob f (0.8); placement (best-fit); maxAuctionCells (4000000)",
	}, New)
}

// New builds the policy.
func New(p Params) (*Themis, error) {
	t := &Themis{lease: 10 * sim.Minute, f: 0.8, cells: 4_000_000}
	var errs []error
	if p.Lease != nil {
		if t.lease = sim.Duration(*p.Lease); t.lease < sim.Second {
			errs = append(errs, errors.New("lease: must be at least 1s"))
		}
	}
	if p.FairnessKnob != nil {
		if t.f = *p.FairnessKnob; !(t.f >= 0 && t.f <= 1) {
			errs = append(errs, errors.New("fairnessKnob: must be in [0, 1]"))
		}
	}
	if p.MaxAuctionCells != 0 {
		if t.cells = p.MaxAuctionCells; t.cells < 0 {
			errs = append(errs, errors.New("maxAuctionCells: must be >= 0"))
		}
	}
	name := p.Placement
	if name == "" {
		name = "best-fit"
	}
	var err error
	if t.placer, err = placement.New(name); err != nil {
		errs = append(errs, fmt.Errorf("placement: %w", err))
	}
	if len(errs) > 0 {
		return nil, &policies.ConfigError{Err: errors.Join(errs...)}
	}
	return t, nil
}

// tjob is the policy's state of one active job.
type tjob struct {
	j        *sim.Job
	leaseEnd sim.Time // while running: when its lease expires
	rho      float64  // ρ with its current allocation continued (ranking)
	gain     float64  // ln(ρ waiting / ρ running): its welfare gain if it wins
	bidder   bool
	selected bool
}

// Themis is the themis policy. See the package documentation.
type Themis struct {
	lease  sim.Duration
	f      float64
	cells  int
	placer placement.Placer

	jobs     []*tjob // by ref; nil until arrival and after the end
	live     []*tjob
	prepared *sim.Cluster
	pl       placement.Placement
	order    []*tjob
	bidders  []*tjob
	// Auctions, GreedyAuctions and LeasePreemptions count what the policy did
	// (tests, explain).
	Auctions, GreedyAuctions, LeasePreemptions int
}

// Name returns "themis".
func (t *Themis) Name() string { return "themis" }

// Observe tracks arrivals and ends.
func (t *Themis) Observe(v *sim.View, e sim.Event) {
	if len(t.jobs) < v.NumJobs() { // first call, or jobs submitted since (live runs)
		t.jobs = append(t.jobs, make([]*tjob, v.NumJobs()-len(t.jobs))...)
	}
	switch e.Kind {
	case sim.EvArrive:
		tj := &tjob{j: v.Job(e.Job)}
		t.jobs[e.Job] = tj
		t.live = append(t.live, tj)
	case sim.EvFinish, sim.EvKill, sim.EvTimeout:
		if tj := t.jobs[e.Job]; tj != nil {
			t.jobs[e.Job] = nil
			if i := slices.Index(t.live, tj); i >= 0 {
				t.live = slices.Delete(t.live, i, i+1)
			}
		}
	}
}

// Remaining is the job's remaining run time at full width by its estimate
// (Job.Estimate, the walltime or, with oracle, the true duration) at now,
// counting the current run's progress; at least 1 s.
func Remaining(j *sim.Job, now sim.Time) sim.Duration {
	rem := j.Estimate - j.Done
	if j.State == sim.StateRunning && now > j.LastStart {
		rem -= now.Sub(j.LastStart)
	}
	return max(rem, sim.Second)
}

// Rho is Themis's finish-time fairness ratio ρ = T_shared / T_independent of a
// job that arrived `elapsed` ago, needs g GPUs and has `rem` of its `dur` left
// at full width, if it starts running after `delay` and then runs to the end,
// among n active jobs on a cluster of c GPUs. T_independent is its finish time
// on 1/n of the cluster: dur when c/n >= g, else dur x n·g/c (time-shared);
// T_shared = elapsed + delay + rem.
func Rho(elapsed, delay, rem, dur sim.Duration, g, n int, c int64) float64 {
	tid := dur.Seconds() * max(1, float64(n)*float64(g)/float64(c))
	return (elapsed + delay + rem).Seconds() / max(tid, 1e-9)
}

// Schedule runs an auction when GPUs are free or leases have expired: it ranks
// the active jobs by ρ, opens the auction to the worst ceil((1-f)·N), picks the
// winners by Nash welfare under the GPUs on offer, hands the rest out in ρ
// order, preempts expired jobs that got nothing and starts the new ones.
func (t *Themis) Schedule(v *sim.View, p *sim.Plan) error {
	if len(t.jobs) < v.NumJobs() { // first call, or jobs submitted since (live runs)
		t.jobs = append(t.jobs, make([]*tjob, v.NumJobs()-len(t.jobs))...)
	}
	c := v.Cluster()
	if t.prepared != c {
		if err := placement.Prepare(t.placer, v); err != nil {
			return err
		}
		t.prepared = c
	}
	now := v.Now()
	// GPUs on offer: the free ones and those of expired leases.
	offer := c.FreeGPUs()
	pending := false
	for _, tj := range t.live {
		switch tj.j.State {
		case sim.StateRunning:
			if tj.leaseEnd == 0 { // started before Themis saw it (not expected)
				tj.leaseEnd = now.Add(t.lease)
			}
			if tj.leaseEnd <= now {
				offer += int64(tj.j.Spec.TotalGPUs())
			}
		case sim.StatePending:
			pending = true
		}
	}
	if !pending || offer == 0 {
		t.wakeAtLeaseEnd(p, now)
		return nil
	}
	t.Auctions++
	n := len(t.live)
	total := c.NumGPUs()
	for _, tj := range t.live {
		j := tj.j
		el := now.Sub(j.Spec.Submit)
		rem := Remaining(j, now)
		dur := max(j.Estimate, sim.Second)
		g := int(j.Spec.TotalGPUs())
		run := Rho(el, 0, rem, dur, g, n, total)
		wait := Rho(el, t.lease, rem, dur, g, n, total)
		tj.rho = wait
		if j.State == sim.StateRunning && tj.leaseEnd > now {
			tj.rho = run
		}
		tj.gain = math.Log(wait / run)
		tj.bidder, tj.selected = false, false
	}
	// Candidates: pending jobs and jobs whose lease expired.
	t.order = t.order[:0]
	for _, tj := range t.live {
		if tj.j.State == sim.StatePending && !tj.j.Suspended() || tj.j.State == sim.StateRunning && tj.leaseEnd <= now {
			t.order = append(t.order, tj)
		}
	}
	slices.SortStableFunc(t.order, func(a, b *tjob) int {
		if c := cmp.Compare(b.rho, a.rho); c != 0 {
			return c
		}
		return cmp.Compare(a.j.Ref, b.j.Ref)
	})
	// The auction is open to the worst ceil((1-f)·N) of all active jobs; those
	// holding unexpired leases cannot take part in this one.
	k := max(1, int(math.Ceil((1-t.f)*float64(n)-1e-9)))
	ranked := slices.Clone(t.live)
	slices.SortStableFunc(ranked, func(a, b *tjob) int {
		if c := cmp.Compare(b.rho, a.rho); c != 0 {
			return c
		}
		return cmp.Compare(a.j.Ref, b.j.Ref)
	})
	t.bidders = t.bidders[:0]
	for _, tj := range ranked[:min(k, len(ranked))] {
		if tj.j.State == sim.StatePending && !tj.j.Suspended() || tj.j.State == sim.StateRunning && tj.leaseEnd <= now {
			tj.bidder = true
			t.bidders = append(t.bidders, tj)
		}
	}
	left := t.auction(offer)
	// Leftovers to the other candidates, in ρ order (work conservation).
	for _, tj := range t.order {
		if tj.selected {
			continue
		}
		if g := int64(tj.j.Spec.TotalGPUs()); g <= left {
			tj.selected = true
			left -= g
		}
	}
	// Expired leases: renewed for the selected, preempted for the others.
	for _, tj := range t.order {
		if tj.j.State != sim.StateRunning {
			continue
		}
		if tj.selected {
			tj.leaseEnd = now.Add(t.lease)
			continue
		}
		if err := p.AddPreempt(tj.j.Ref, sim.PreemptLease, "themis: lease expired, not renewed"); err != nil {
			return err
		}
		t.LeasePreemptions++
	}
	// Starts: winners first (ρ order), then leftovers.
	for pass := 0; pass < 2; pass++ {
		for _, tj := range t.order {
			if tj.j.State != sim.StatePending || tj.bidder != (pass == 0) {
				continue
			}
			if !tj.selected || !t.placer.Place(c, tj.j, &t.pl) {
				p.Wait(tj.j.Ref, sim.ReasonFairShare)
				continue
			}
			if err := p.AddStart(tj.j.Ref, t.pl.Nodes, t.pl.GPUs); err != nil {
				return err
			}
			tj.leaseEnd = now.Add(t.lease)
		}
	}
	t.wakeAtLeaseEnd(p, now)
	return nil
}

// wakeAtLeaseEnd asks for a scheduling point at the next lease expiry.
func (t *Themis) wakeAtLeaseEnd(p *sim.Plan, now sim.Time) {
	next := sim.Never
	for _, tj := range t.live {
		if tj.j.State == sim.StateRunning && tj.leaseEnd > now {
			next = min(next, tj.leaseEnd)
		}
	}
	if next != sim.Never {
		p.Wake(next)
	}
}

// auction selects the winners among t.bidders for `offer` GPUs: the set with
// the largest total gain Σ ln(ρ_wait/ρ_run) (the log of the product of ρ
// improvements, Nash social welfare) whose GPUs fit, exactly by a 0/1
// knapsack over GPU counts, or greedily by gain per GPU when the table would
// exceed maxAuctionCells. Ties go to the earlier bidder (ρ order). It marks
// the winners selected and returns the GPUs left.
func (t *Themis) auction(offer int64) int64 {
	b := t.bidders
	if len(b) == 0 {
		return offer
	}
	capG := int(offer)
	if int64(len(b))*(offer+1) > int64(t.cells) {
		t.GreedyAuctions++
		idx := make([]int, len(b))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(x, y int) int {
			return cmp.Compare(b[y].gain/float64(b[y].j.Spec.TotalGPUs()), b[x].gain/float64(b[x].j.Spec.TotalGPUs()))
		})
		left := offer
		for _, i := range idx {
			if g := int64(b[i].j.Spec.TotalGPUs()); g <= left {
				b[i].selected = true
				left -= g
			}
		}
		return left
	}
	// best[i][w]: the largest gain using bidders i.. with w GPUs; filled from
	// the last bidder back so that ties keep earlier bidders (take before skip).
	n := len(b)
	best := make([][]float64, n+1)
	for i := range best {
		best[i] = make([]float64, capG+1)
	}
	for i := n - 1; i >= 0; i-- {
		g := int(b[i].j.Spec.TotalGPUs())
		for w := 0; w <= capG; w++ {
			skip := best[i+1][w]
			best[i][w] = skip
			if g <= w {
				if take := b[i].gain + best[i+1][w-g]; take >= skip {
					best[i][w] = take
				}
			}
		}
	}
	w := capG
	for i := 0; i < n; i++ {
		g := int(b[i].j.Spec.TotalGPUs())
		if g <= w && b[i].gain+best[i+1][w-g] >= best[i+1][w] {
			b[i].selected = true
			w -= g
		}
	}
	return int64(w)
}
