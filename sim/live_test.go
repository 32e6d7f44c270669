package sim_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// recBackend records what a live run asks of its backend and, like a real
// system whose jobs take their trace duration, knows when each run will end.
type recBackend struct {
	calls []string
	ends  map[sim.JobRef]sim.Time // running job -> end time (LastStart + Duration)
	fail  map[sim.JobID]bool      // Start refuses these
}

func newRec() *recBackend {
	return &recBackend{ends: map[sim.JobRef]sim.Time{}, fail: map[sim.JobID]bool{}}
}

func (b *recBackend) Start(j *sim.Job) error {
	b.calls = append(b.calls, fmt.Sprintf("start %s@%s gpus=%v", j.Spec.ID, j.LastStart, j.GPUs))
	if b.fail[j.Spec.ID] {
		return errors.New("exec failed")
	}
	b.ends[j.Ref] = j.LastStart.Add(j.Spec.Duration - j.Done)
	return nil
}

func (b *recBackend) Stop(p *sim.Preempt) error {
	b.calls = append(b.calls, fmt.Sprintf("stop #%d %s grace=%s", p.Job, p.Mode, p.Grace))
	delete(b.ends, p.Job)
	return nil
}

// next returns the earliest reported end time and the jobs ending then, in
// JobRef order.
func (b *recBackend) next() (sim.Time, []sim.Ended) {
	t := sim.Never
	for _, at := range b.ends {
		t = min(t, at)
	}
	var out []sim.Ended
	for r, at := range b.ends {
		if at == t {
			out = append(out, sim.Ended{Job: r, Outcome: sim.OutcomeCompleted})
		}
	}
	slices.SortFunc(out, func(a, c sim.Ended) int { return int(a.Job - c.Job) })
	return t, out
}

// driveLive runs l to the end as a perfect real system would: every run ends
// exactly its remaining duration after it started.
func driveLive(t *testing.T, l *sim.Live, b *recBackend) *sim.Result {
	t.Helper()
	for steps := 0; !l.Idle(); steps++ {
		if steps > 1_000_000 || l.Stuck() {
			t.Fatalf("live run does not finish (stuck=%v)", l.Stuck())
		}
		te, ends := b.next()
		now := min(te, l.NextTimer())
		if now != te {
			ends = nil
		}
		for _, x := range ends {
			delete(b.ends, x.Job)
		}
		if err := l.Advance(now, ends); err != nil {
			t.Fatal(err)
		}
		if err := l.Schedule(false); err != nil {
			t.Fatal(err)
		}
	}
	return l.Result()
}

func logString(res *sim.Result) string {
	var sb strings.Builder
	for _, e := range res.Log {
		fmt.Fprintf(&sb, "%s %s %s %d\n", e.Time, e.Kind, res.Jobs[e.Job].Spec.ID, e.Value)
	}
	return sb.String()
}

// TestLiveMatchesSimulation: a live run whose backend ends every run after its
// trace duration is the simulation: the same event log, job times and
// utilization integral, for policies with and without reservations/wake-ups.
func TestLiveMatchesSimulation(t *testing.T) {
	r := sim.Stream(3, "live-test")
	jobs := make([]sim.JobSpec, 300)
	var at sim.Time
	for i := range jobs {
		at += sim.Time(r.ExpFloat64() * 20e6)
		jobs[i] = simtest.MakeJob(fmt.Sprintf("j%03d", i)).GPUs(int32(1 << r.IntN(3))).Dur(30 + r.ExpFloat64()*300).Wall(1000).Obj()
		jobs[i].Submit = at
	}
	nodes := simtest.Nodes(2, 8)
	for _, pol := range []string{"fifo", "sjf", "easy-backfill", "conservative-backfill"} {
		t.Run(pol, func(t *testing.T) {
			c := simtest.Cluster(t, nodes)
			p1, _ := policies.New(pol, nil)
			e, err := sim.NewEngine(sim.Config{Cluster: c, Jobs: jobs, Policy: p1, SampleInterval: 60 * sim.Second})
			if err != nil {
				t.Fatal(err)
			}
			want, err := e.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			p2, _ := policies.New(pol, nil)
			b := newRec()
			l, err := sim.NewLive(sim.Config{Cluster: c, Jobs: jobs, Policy: p2, SampleInterval: 60 * sim.Second}, b, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			got := driveLive(t, l, b)
			if g, w := logString(got), logString(want); g != w {
				t.Fatalf("live log differs from the simulation's:\n%s", firstDiff(g, w))
			}
			if got.Makespan != want.Makespan || got.BusyMilliSeconds != want.BusyMilliSeconds || len(got.Samples) != len(want.Samples) {
				t.Errorf("makespan %v/%v busy %v/%v samples %d/%d", got.Makespan, want.Makespan, got.BusyMilliSeconds, want.BusyMilliSeconds, len(got.Samples), len(want.Samples))
			}
		})
	}
}

func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d: live %q, sim %q", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("lengths %d vs %d", len(la), len(lb))
}

// TestLiveHandWorked drives a fifo live run step by step on one 2-GPU node:
//
//	t=0  a (2 GPUs) arrives, starts on GPUs 0,1
//	t=1  b (1 GPU) arrives: waits (no capacity, logged as a wait event)
//	t=2  c (1 GPU, its start will fail) arrives: waits behind b
//	t=5  a completes: b starts on GPU 0, c's start fails -> killed (value 1)
//	t=6  b is interrupted (operator): requeued, backend stopped with 3 s grace;
//	     b restarts at once on a free GPU
//	t=9  d is submitted live (1 GPU) and starts
//	t=10 b times out, d completes; t=11 a stale end is refused (the clock
//	     moved to 11: the run ends there)
func TestLiveHandWorked(t *testing.T) {
	c := simtest.Cluster(t, simtest.Nodes(1, 2))
	jobs := []sim.JobSpec{
		simtest.MakeJob("a").GPUs(2).Dur(5).At(0).Obj(),
		simtest.MakeJob("b").GPUs(1).Dur(100).At(1).Obj(),
		simtest.MakeJob("c").GPUs(1).Dur(3).At(2).Obj(),
	}
	pol, _ := policies.New("fifo", nil)
	b := newRec()
	b.fail["c"] = true
	l, err := sim.NewLive(sim.Config{Cluster: c, Jobs: jobs, Policy: pol}, b, 1, 2*sim.Second)
	if err != nil {
		t.Fatal(err)
	}
	s := func(sec float64) sim.Time { return sim.Time(sim.Seconds(sec)) }
	step := func(at float64, ends ...sim.Ended) {
		t.Helper()
		if err := l.Advance(s(at), ends); err != nil {
			t.Fatal(err)
		}
		if err := l.Schedule(false); err != nil {
			t.Fatal(err)
		}
	}
	step(0)
	step(1)
	step(2)
	if got := l.NextTimer(); got != sim.Never {
		t.Fatalf("NextTimer = %v, want never (all arrived, no wake-up)", got)
	}
	step(5, sim.Ended{Job: 0, Outcome: sim.OutcomeCompleted})
	if err := l.Advance(s(6), nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Interrupt(1, "operator", 3*sim.Second); err != nil {
		t.Fatal(err)
	}
	if err := l.Schedule(false); err != nil {
		t.Fatal(err)
	}
	if err := l.Advance(s(9), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Submit(simtest.MakeJob("d").GPUs(1).Dur(1).Obj()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Submit(simtest.MakeJob("e").GPUs(1).Dur(1).Obj()); !errors.Is(err, sim.ErrLiveFull) {
		t.Fatalf("Submit beyond capacity: %v, want ErrLiveFull", err)
	}
	if err := l.Schedule(false); err != nil {
		t.Fatal(err)
	}
	step(10, sim.Ended{Job: 1, Outcome: sim.OutcomeTimeout}, sim.Ended{Job: 3, Outcome: sim.OutcomeCompleted})
	if err := l.Advance(s(11), []sim.Ended{{Job: 3, Outcome: sim.OutcomeCompleted}}); err == nil {
		t.Fatal("a stale end was accepted")
	}
	if !l.Idle() {
		t.Fatal("not idle at the end")
	}
	wantCalls := []string{
		"start a@0s gpus=[0 1]",
		"start b@5s gpus=[0]",
		"start c@5s gpus=[1]",
		"stop #1 requeue grace=3s",
		"start b@6s gpus=[0]",
		"start d@9s gpus=[1]",
	}
	if !slices.Equal(b.calls, wantCalls) {
		t.Errorf("backend calls\n%s\nwant\n%s", strings.Join(b.calls, "\n"), strings.Join(wantCalls, "\n"))
	}
	res := l.Result()
	wantLog := `0s arrive a 0
0s start a 0
1s arrive b 0
1s wait b 1
2s arrive c 0
5s finish a 0
5s start b 0
5s start c 0
5s kill c 1
6s preempt b 0
6s start b 0
9s arrive d 0
9s start d 0
10s timeout b 0
10s finish d 0
`
	if got := logString(res); got != wantLog {
		t.Errorf("log:\n%s\nwant:\n%s", got, wantLog)
	}
	st := func(id string) sim.JobState { r, _ := l.Lookup(sim.JobID(id)); return res.Jobs[r].State }
	if st("a") != sim.StateCompleted || st("b") != sim.StateTimeout || st("c") != sim.StateKilled || st("d") != sim.StateCompleted {
		t.Errorf("states a=%s b=%s c=%s d=%s", st("a"), st("b"), st("c"), st("d"))
	}
	if res.Jobs[1].Preempted != 1 || res.Makespan != s(10) || res.End != s(11) {
		t.Errorf("b preempted %d, makespan %v, end %v", res.Jobs[1].Preempted, res.Makespan, res.End)
	}
	// GPU-seconds: a 2x5, b 1 (5..6) + 4 (6..10), c 0, d 1 = 16 GPU-s = 16000 milli-GPU-s.
	if res.BusyMilliSeconds != 16000 {
		t.Errorf("busy %v milli-GPU-s, want 16000", res.BusyMilliSeconds)
	}
}

func TestLiveRejectsSharing(t *testing.T) {
	c := simtest.Cluster(t, simtest.Nodes(1, 2))
	pol, _ := policies.New("fifo", nil)
	if _, err := sim.NewLive(sim.Config{Cluster: c, Policy: pol, Sharing: &sim.SharingConfig{}}, newRec(), 0, 0); err == nil {
		t.Fatal("sharing accepted in live mode")
	}
	if _, err := sim.NewLive(sim.Config{Cluster: c, Policy: pol}, nil, 0, 0); err == nil {
		t.Fatal("nil backend accepted")
	}
}

// preemptor starts pending jobs first-fit; a pending job with priority > 0
// preempts the running jobs in the given mode (with a 4 s grace) until it fits.
type preemptor struct{ mode sim.PreemptMode }

func (p *preemptor) Name() string { return "preemptor" }

func (p *preemptor) Schedule(v *sim.View, pl *sim.Plan) error {
	c := v.Cluster()
	for j := v.PendingHead(); j != nil; {
		next := v.NextPending(j)
		if j.Spec.Priority > 0 {
			for _, r := range append([]*sim.Job(nil), v.Running()...) {
				if c.NodeFreeGPUs(0) >= j.Spec.GPUsPerReplica {
					break
				}
				if err := pl.AddPreemptAfterGrace(r.Ref, p.mode, "priority", 4*sim.Second); err != nil {
					return err
				}
			}
		}
		if c.NodeFreeGPUs(0) >= j.Spec.GPUsPerReplica {
			var gpus []sim.GPUID
			first, end := c.NodeGPUs(0)
			for g := first; g < end && int32(len(gpus)) < j.Spec.GPUsPerReplica; g++ {
				if c.GPUUsed(g) == 0 {
					gpus = append(gpus, g)
				}
			}
			if err := pl.AddStart(j.Ref, []sim.NodeID{0}, gpus); err != nil {
				return err
			}
		}
		j = next
	}
	return nil
}

// TestLivePolicyPreemption: a policy's preemption reaches the backend as a
// Stop (with the plan's grace) before the start that needed the GPUs; a
// suspension is refused in live mode.
func TestLivePolicyPreemption(t *testing.T) {
	c := simtest.Cluster(t, simtest.Nodes(1, 2))
	jobs := []sim.JobSpec{
		simtest.MakeJob("low").GPUs(2).Dur(100).At(0).Obj(),
		simtest.MakeJob("high").GPUs(2).Dur(10).At(5).Prio(1).Obj(),
	}
	b := newRec()
	l, err := sim.NewLive(sim.Config{Cluster: c, Jobs: jobs, Policy: &preemptor{mode: sim.PreemptRequeue}}, b, 0, sim.Second)
	if err != nil {
		t.Fatal(err)
	}
	res := driveLive(t, l, b)
	want := []string{"start low@0s gpus=[0 1]", "stop #0 requeue grace=4s", "start high@5s gpus=[0 1]", "start low@15s gpus=[0 1]"}
	if !slices.Equal(b.calls, want) {
		t.Errorf("backend calls %q, want %q", b.calls, want)
	}
	if res.Jobs[0].Preempted != 1 || res.Jobs[0].End != sim.Time(115*sim.Second) {
		t.Errorf("low: preempted %d, end %v", res.Jobs[0].Preempted, res.Jobs[0].End)
	}

	b = newRec()
	l, err = sim.NewLive(sim.Config{Cluster: c, Jobs: jobs, Policy: &preemptor{mode: sim.PreemptSuspend}}, b, 0, sim.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []float64{0, 5} {
		if err := l.Advance(sim.Time(sim.Seconds(at)), nil); err != nil {
			t.Fatal(err)
		}
		err = l.Schedule(false)
	}
	if err == nil || !strings.Contains(err.Error(), "suspension is not supported in live mode") {
		t.Errorf("suspend in live mode: %v", err)
	}
}
