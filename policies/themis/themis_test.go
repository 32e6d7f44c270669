package themis

import (
	"math"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

func newT(t *testing.T, params string) *Themis {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(params), &doc); err != nil {
		t.Fatal(err)
	}
	var n *yaml.Node
	if len(doc.Content) > 0 {
		n = doc.Content[0]
	}
	p, err := policies.New("themis", n)
	if err != nil {
		t.Fatal(err)
	}
	return p.(*Themis)
}

// ρ by hand. A 4-GPU job of 100 s that arrived 20 s ago and has 90 s left,
// among 3 active jobs on 8 GPUs: 1/3 of the cluster is 2.67 GPUs < 4, so
// T_independent = 100 x 3·4/8 = 150 s; running on, T_shared = 20 + 90 = 110 s
// and ρ = 0.733; kept waiting one 600 s lease, 710 s and ρ = 4.733. Among 2
// jobs (4 GPUs each of 8) T_independent is its own 100 s: ρ = 1.1.
func TestRhoByHand(t *testing.T) {
	for _, c := range []struct {
		delay sim.Duration
		n     int
		want  float64
	}{{0, 3, 110.0 / 150}, {600 * sim.Second, 3, 710.0 / 150}, {0, 2, 1.1}} {
		got := Rho(20*sim.Second, c.delay, 90*sim.Second, 100*sim.Second, 4, c.n, 8)
		if math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Rho(delay %v, n %d) = %v, want %v", c.delay, c.n, got, c.want)
		}
	}
}

// The auction by hand, on one 4-GPU node with 100 s leases and every job
// bidding (f = 0). At 0: A (4 GPUs, 1000 s), B (2 GPUs, 100 s), C (2 GPUs,
// 300 s). A job's gain is ln(ρ_wait/ρ_run) = ln((el + 100 + rem)/(el + rem)):
// A 0.095, B 0.693, C 0.288; {B, C} (0.981) beats {A}: B and C start, not A as
// FIFO would. D (4 GPUs, 50 s) arrives at 50: nothing is on offer (the leases
// run to 100), it waits. At 100 B ends and C's lease expires: on offer 4 GPUs;
// gains A 0.087, C ln(400/300) = 0.288, D ln(200/100) = 0.693; {D} wins, the 0
// GPUs left go to nobody, and C, not renewed, is preempted keeping its 100 s of
// work. D ends at 150; then C (0.251 > A's 0.083) takes 2 GPUs again and runs
// its last 200 s to 350, and A, which needs 4, starts at 350 and ends at 1350.
func TestAuctionByHand(t *testing.T) {
	th := newT(t, "lease: 100s\nfairnessKnob: 0")
	res := Run(t, Nodes(1, 4), th,
		MakeJob("A").GPUs(4).Dur(1000).Obj(),
		MakeJob("B").GPUs(2).Dur(100).Obj(),
		MakeJob("C").GPUs(2).Dur(300).Obj(),
		MakeJob("D").GPUs(4).Dur(50).At(50).Obj())
	ends := map[string]float64{}
	for i := range res.Jobs {
		ends[string(res.Jobs[i].Spec.ID)] = res.Jobs[i].End.Seconds()
	}
	want := map[string]float64{"A": 1350, "B": 100, "C": 350, "D": 150}
	for id, w := range want {
		if ends[id] != w {
			t.Errorf("%s ends at %v, want %v\n%s", id, ends[id], w, Schedule(res))
		}
	}
	if c := &res.Jobs[2]; c.Preempted != 1 || c.Wasted != 0 {
		t.Errorf("C preempted %d times, wasted %v; want once, nothing lost", c.Preempted, c.Wasted)
	}
	if th.LeasePreemptions != 1 || th.GreedyAuctions != 0 {
		t.Errorf("lease preemptions %d, greedy auctions %d; want 1 and 0", th.LeasePreemptions, th.GreedyAuctions)
	}
}

// The fairness knob: with f = 1 only the job with the worst ρ bids, and the
// rest go to the others in ρ order. At 0 on 4 GPUs (N = 3): ρ_wait of A (4 GPUs,
// 1000 s) = 1100/3000, of B (2 GPUs, 100 s) = 200/150, of C (2 GPUs, 300 s) =
// 400/450. B, the worst, bids alone and wins 2 GPUs; the 2 left go to C (next
// by ρ); A waits until 300. With a greedy auction forced (maxAuctionCells 1) the
// outcome of these small auctions is the same.
func TestFairnessKnobAndGreedy(t *testing.T) {
	for _, params := range []string{"lease: 100s\nfairnessKnob: 1", "lease: 100s\nfairnessKnob: 0\nmaxAuctionCells: 1"} {
		th := newT(t, params)
		res := Run(t, Nodes(1, 4), th,
			MakeJob("A").GPUs(4).Dur(1000).Obj(),
			MakeJob("B").GPUs(2).Dur(100).Obj(),
			MakeJob("C").GPUs(2).Dur(300).Obj())
		st := Starts(res)
		if st["B"] != 0 || st["C"] != 0 || st["A"] != 300 {
			t.Errorf("%q: starts %v, want B and C at 0, A at 300\n%s", params, st, Schedule(res))
		}
	}
}

func TestParams(t *testing.T) {
	for _, bad := range []Params{{FairnessKnob: ptr(1.5)}, {Lease: ptrDur(0)}, {Placement: "nope"}, {MaxAuctionCells: -1}} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%+v) accepted", bad)
		}
	}
}

func ptr(f float64) *float64 { return &f }

func ptrDur(d sim.Duration) *policies.Dur { x := policies.Dur(d); return &x }

// The auction itself: bidders in ρ order X (4 GPUs, gain 0.5), Y (2, 0.4),
// Z (2, 0.3) for 4 GPUs. Nash welfare (the largest total gain) takes Y and Z
// (0.7 > 0.5), not X, the worst-treated bidder; the greedy fallback, by gain
// per GPU (0.2, 0.15, 0.125), takes Y and Z too. With X's gain 0.7 the exact
// auction ties ({X} = {Y, Z} = 0.7) and keeps the earlier bidder, X.
func TestAuctionNashWelfare(t *testing.T) {
	mk := func(gx float64) []*tjob {
		spec := func(g int32) *sim.Job { return &sim.Job{Spec: sim.JobSpec{Replicas: 1, GPUsPerReplica: g}} }
		return []*tjob{{j: spec(4), gain: gx}, {j: spec(2), gain: 0.4}, {j: spec(2), gain: 0.3}}
	}
	sel := func(b []*tjob) (s string) {
		for i, tj := range b {
			if tj.selected {
				s += string(rune('X' + i))
			}
		}
		return s
	}
	for _, c := range []struct {
		gx    float64
		cells int
		want  string
	}{{0.5, 1 << 20, "YZ"}, {0.5, 1, "YZ"}, {0.7, 1 << 20, "X"}} {
		th := &Themis{cells: c.cells}
		th.bidders = mk(c.gx)
		left := th.auction(4)
		if got := sel(th.bidders); got != c.want || left != 0 {
			t.Errorf("gain X %v, cells %d: winners %q, %d GPUs left; want %q, 0", c.gx, c.cells, got, left, c.want)
		}
	}
}
