package sim_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
)

// hashInterf gives every multiset of workloads fixed factors derived from the
// workload ids (order-independent, deterministic): job i of a set gets
// 0.3 + 0.5 x frac(sin(product of (id+2)) x 1000 + id) / k-ish, always in (0, 1].
type hashInterf struct{ n int }

func (h hashInterf) WorkloadID(name string) (int32, bool) {
	var id int
	if _, err := fmt.Sscanf(name, "w%d", &id); err != nil || id >= h.n {
		return -1, false
	}
	return int32(id), true
}

func (h hashInterf) Factors(_ string, _ sim.SharingMode, ws []int32, _ []float64, out []float64) bool {
	return hashFactors(ws, out)
}

func hashFactors(ws []int32, out []float64) bool {
	key := 1.0
	for _, w := range ws {
		if w < 0 {
			for i := range out {
				out[i] = 1 / float64(len(ws))
			}
			return false
		}
		key *= float64(w + 2)
	}
	for i, w := range ws {
		x := math.Sin(key*7.1+float64(w)) * 1000
		out[i] = (0.3 + 0.6*(x-math.Floor(x))) / float64(len(ws)-1)
	}
	return true
}

// shareChecker asserts the device-level invariants at every scheduling point: a
// shared GPU's jobs fit its memory and client limit, an exclusive job is alone.
type shareChecker struct {
	sim.Policy
	t *rapid.T
}

func (c *shareChecker) Observe(v *sim.View, e sim.Event) {
	if o, ok := c.Policy.(sim.Observer); ok {
		o.Observe(v, e)
	}
}

func (c *shareChecker) Schedule(v *sim.View, p *sim.Plan) error {
	cl := v.Cluster()
	mem := map[sim.GPUID]int64{}
	n := map[sim.GPUID]int{}
	excl := map[sim.GPUID]int{}
	for _, j := range v.Running() {
		for _, g := range j.GPUs {
			if cl.GPUMode(g) != sim.ShareExclusive && j.Spec.Accepts().Accepts(cl.GPUMode(g)) {
				mem[g] += j.Spec.GPUMemMiB
				n[g]++
			} else {
				excl[g]++
			}
		}
	}
	for g, k := range n {
		nd := cl.Node(cl.GPUNode(g))
		if mem[g] > nd.GPUMemMiB || k > int(nd.SharingClients) || excl[g] > 0 {
			c.t.Fatalf("GPU %d over-allocated: %d jobs (limit %d), %d MiB of %d, %d exclusive", g, k, nd.SharingClients, mem[g], nd.GPUMemMiB, excl[g])
		}
		if cl.Sharers(g) != k || cl.SharedMemUsed(g) != mem[g] {
			c.t.Fatalf("GPU %d: cluster says %d sharers %d MiB, running jobs %d, %d", g, cl.Sharers(g), cl.SharedMemUsed(g), k, mem[g])
		}
	}
	for g, k := range excl {
		if k > 1 {
			c.t.Fatalf("GPU %d held by %d exclusive jobs", g, k)
		}
	}
	return c.Policy.Schedule(v, p)
}

func genShareJobs(t *rapid.T, wls int) []sim.JobSpec {
	n := rapid.IntRange(1, 40).Draw(t, "jobs")
	jobs := make([]sim.JobSpec, n)
	for i := range jobs {
		s := sim.JobSpec{ID: sim.JobID(fmt.Sprintf("j%02d", i)), Replicas: 1, GPUsPerReplica: 1, GPUMilli: sim.WholeGPU,
			Submit:   sim.Time(rapid.IntRange(0, 200).Draw(t, "submit")) * sim.Time(sim.Second),
			Duration: 10*sim.Second + sim.Duration(rapid.IntRange(1, 300_000_000).Draw(t, "dur"))}
		if rapid.IntRange(0, 9).Draw(t, "share") < 7 {
			s.Sharing = sim.AcceptAny
			s.GPUMemMiB = int64(rapid.IntRange(0, 40000).Draw(t, "mem"))
			s.Workload = fmt.Sprintf("w%d", rapid.IntRange(0, wls).Draw(t, "wl"))
		} else if rapid.Bool().Draw(t, "gang") {
			s.GPUsPerReplica = 2
		}
		jobs[i] = s
	}
	return jobs
}

// The property: under fifo + first/best-fit on time-slicing GPUs, no GPU memory
// or client limit is ever exceeded; every job's end equals the end recomputed
// from scratch from the log (the co-runner sets over time, the factors and the
// documented floor rule); work is conserved (the integral of speed is the work,
// up to 1 µs per speed segment); and shuffling the input changes nothing.
func TestSharingProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const wls = 4
		jobs := genShareJobs(t, wls)
		nodes := []sim.NodeSpec{
			{Name: "a", GPUModel: "h100", GPUs: 2, GPUMemMiB: 80000, CPUMilli: 1000, MemoryMiB: 1000, Sharing: sim.ShareTimeSlice, SharingClients: 3},
			{Name: "b", GPUModel: "h100", GPUs: 2, GPUMemMiB: 80000, CPUMilli: 1000, MemoryMiB: 1000},
		}
		place := rapid.SampledFrom([]string{"first-fit", "best-fit", "spread"}).Draw(t, "placement")
		run := func(js []sim.JobSpec) *sim.Result {
			cl, err := sim.NewCluster(nodes)
			if err != nil {
				t.Fatal(err)
			}
			pol, err := policies.New("fifo", yamlNode("placement: "+place))
			if err != nil {
				t.Fatal(err)
			}
			e, err := sim.NewEngine(sim.Config{Cluster: cl, Jobs: js, Policy: &shareChecker{Policy: pol, t: t}, Seed: 1,
				Sharing: &sim.SharingConfig{Interference: hashInterf{n: wls}}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		res := run(jobs)
		shuffled := slices.Clone(jobs)
		r := rand.New(rand.NewPCG(uint64(len(jobs)), 9))
		r.Shuffle(len(shuffled), func(i, k int) { shuffled[i], shuffled[k] = shuffled[k], shuffled[i] })
		if a, b := logText(res), logText(run(shuffled)); a != b {
			t.Fatalf("shuffled input changed the log:\n%s\nvs\n%s", a, b)
		}
		checkFromScratch(t, res, hashInterf{n: wls})
	})
}

func logText(res *sim.Result) string {
	var b []byte
	for _, e := range res.Log {
		b = fmt.Appendf(b, "%d %s %s\n", e.Time, e.Kind, res.Jobs[e.Job].Spec.ID)
	}
	for i := range res.Jobs {
		j := &res.Jobs[i]
		b = fmt.Appendf(b, "%s %s %d %v %v %d\n", j.Spec.ID, j.State, j.End, j.MeanSpeed(), j.MinSpeed(), j.SharedTime())
	}
	return string(b)
}

// checkFromScratch replays the log: for each GPU of a time-slicing node, the set
// of sharers over time; for each sharer, its work from its start through every
// interval between changes (credit = floor(wall x factor), the documented rule),
// and the time its work reaches the total.
func checkFromScratch(t *rapid.T, res *sim.Result, in hashInterf) {
	byGPU := map[sim.GPUID][]sim.JobRef{}
	starts := map[sim.JobRef]sim.Time{}
	gpuOf := map[sim.JobRef]sim.GPUID{}
	cl := res.Cluster
	// the engine keeps Job.GPUs after the end; use it
	for _, e := range res.Log {
		if e.Kind == sim.EvStart {
			starts[e.Job] = e.Time
		}
	}
	for r := range starts {
		j := &res.Jobs[r]
		if len(j.GPUs) != 1 || cl.GPUMode(j.GPUs[0]) != sim.ShareTimeSlice || j.Spec.Sharing == sim.AcceptExclusive {
			continue
		}
		gpuOf[r] = j.GPUs[0]
		byGPU[j.GPUs[0]] = append(byGPU[j.GPUs[0]], r)
	}
	// segments break where the GPU's job set changes: at its jobs' starts and ends
	brk := map[sim.GPUID][]sim.Time{}
	for g, rs := range byGPU {
		for _, o := range rs {
			brk[g] = append(brk[g], starts[o], res.Jobs[o].End)
		}
		slices.Sort(brk[g])
		brk[g] = slices.Compact(brk[g])
	}
	for r, g := range gpuOf {
		times := brk[g]
		j := &res.Jobs[r]
		work := sim.Duration(0)
		integral := 0.0
		segs := 0
		start := starts[r]
		var end sim.Time = -1
		for i, tm := range times {
			if tm < start || j.End <= tm {
				continue
			}
			next := j.End
			if i+1 < len(times) && times[i+1] < next {
				next = times[i+1]
			}
			// co-runners running during [tm, next)
			var set []sim.JobRef
			for _, o := range byGPU[g] {
				oj := &res.Jobs[o]
				if starts[o] <= tm && oj.End > tm {
					set = append(set, o)
				}
			}
			slices.Sort(set)
			f := 1.0
			if len(set) > 1 {
				ws := make([]int32, len(set))
				for k, o := range set {
					ws[k], _ = in.WorkloadID(res.Jobs[o].Spec.Workload)
				}
				out := make([]float64, len(set))
				hashFactors(ws, out)
				f = out[slices.Index(set, r)]
			}
			f = max(f, 1e-3)
			el := next.Sub(tm)
			need := refWallFor(j.Spec.Duration-work, f)
			if el >= need {
				end = tm.Add(need)
				integral += f * float64(need)
				work = j.Spec.Duration
				segs++
				break
			}
			work += refCredit(el, f)
			integral += f * float64(el)
			segs++
		}
		if end != j.End {
			t.Fatalf("job %s on GPU %d: engine end %d, from scratch %d (work %d of %d)\n%s", j.Spec.ID, g, j.End, end, work, j.Spec.Duration, logText(res))
		}
		if d := integral - float64(j.Spec.Duration); d < -1e-6 || d > float64(segs)+1e-6 {
			t.Fatalf("job %s: integral of speed %v vs work %d (%d segments)", j.Spec.ID, integral, j.Spec.Duration, segs)
		}
		if got := j.MeanSpeed() * float64(j.End.Sub(start)); math.Abs(got-integral) > 1e-6*integral+1e-6 {
			t.Fatalf("job %s: engine integral %v, from scratch %v", j.Spec.ID, got, integral)
		}
	}
}

// refCredit and refWallFor restate the documented rounding rule (docs/sharing.md,
// "Rate-based progress") independently of the engine's code.
func refCredit(w sim.Duration, s float64) sim.Duration {
	x := float64(w) * s
	f := math.Floor(x)
	if f+1-x <= x*4e-16 {
		f++
	}
	return sim.Duration(f)
}

func refWallFor(r sim.Duration, s float64) sim.Duration {
	if r <= 0 {
		return 0
	}
	lo, hi := sim.Duration(0), sim.Duration(float64(r)/s)+2
	for lo < hi { // least w with refCredit(w) >= r, by bisection
		mid := (lo + hi) / 2
		if refCredit(mid, s) >= r {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// shareChaos wraps a policy and, at each scheduling point, preempts a drawn running
// job (requeue or kill: fifo does not resume suspended jobs on their nodes) and
// sometimes reconfigures an empty MIG GPU.
type shareChaos struct {
	sim.Policy
	t     *rapid.T
	n     int
	modes []sim.PreemptMode
}

func (c *shareChaos) Observe(v *sim.View, e sim.Event) {
	if o, ok := c.Policy.(sim.Observer); ok {
		o.Observe(v, e)
	}
}

func (c *shareChaos) Schedule(v *sim.View, p *sim.Plan) error {
	c.n++
	run := v.Running()
	if len(run) > 0 {
		p.Wake(v.Now().Add(7 * sim.Second)) // more scheduling points to act at
	}
	if len(run) > 0 && c.n%2 == 0 {
		j := run[c.n%len(run)]
		if j.Preemptible(v.Now()) {
			mode := c.modes[c.n%len(c.modes)]
			if err := p.AddPreemptAfterGrace(j.Ref, mode, "chaos", sim.Duration(c.n%5)*sim.Second); err != nil {
				return err
			}
		}
	}
	cl := v.Cluster()
	for g := sim.GPUID(0); int64(g) < cl.NumGPUs(); g++ {
		if cl.GPUMode(g) == sim.ShareMIG && cl.Sharers(g) == 0 && !cl.MIGReconfiguring(g) && c.n%4 == 1 {
			layouts := [][]string{{"7g.80gb"}, {"3g.40gb", "3g.40gb"}, {"4g.40gb", "2g.20gb", "1g.10gb"}, {"2g.20gb", "2g.20gb", "2g.20gb", "1g.10gb"}}
			if err := p.AddReconfigure(g, layouts[c.n%len(layouts)]); err != nil {
				return err
			}
		}
	}
	if err := c.Policy.Schedule(v, p); err != nil {
		return err
	}
	// invariants after the decisions: memory and clients per shared GPU, MIG
	// instances disjoint and each held by its one running job
	used := map[sim.GPUID]int64{}
	for _, j := range v.Running() {
		if len(j.GPUs) == 1 && cl.GPUMode(j.GPUs[0]) != sim.ShareExclusive && j.Spec.Accepts().Accepts(cl.GPUMode(j.GPUs[0])) {
			used[j.GPUs[0]] += j.Spec.GPUMemMiB
		}
	}
	for g := sim.GPUID(0); int64(g) < cl.NumGPUs(); g++ {
		nd := cl.Node(cl.GPUNode(g))
		switch cl.GPUMode(g) {
		case sim.ShareTimeSlice, sim.ShareMPS:
			if used[g] > nd.GPUMemMiB || cl.Sharers(g) > int(max(nd.SharingClients, sim.DefaultSharingClients)) {
				c.t.Fatalf("GPU %d: %d MiB of %d, %d sharers", g, used[g], nd.GPUMemMiB, cl.Sharers(g))
			}
		case sim.ShareMIG:
			var slices uint8
			held := 0
			geo := cl.MIGGeometryOf(g)
			for _, in := range cl.MIGInstances(g) {
				mask := uint8((1<<fakeProfiles[in.Profile].mem - 1) << in.Start)
				if slices&mask != 0 {
					c.t.Fatalf("GPU %d: MIG instances overlap: %+v", g, cl.MIGInstances(g))
				}
				slices |= mask
				if in.Job >= 0 {
					held++
					if j := v.Job(in.Job); j.State != sim.StateRunning || j.GPUs[0] != g || geo.MemoryMiB(int(in.Profile)) < j.Spec.GPUMemMiB && j.Spec.MIGProfile == "" {
						c.t.Fatalf("GPU %d: instance %+v held by %s (%s)", g, in, j.Spec.ID, j.State)
					}
				}
			}
			if held != cl.Sharers(g) {
				c.t.Fatalf("GPU %d: %d instances held, %d sharers", g, held, cl.Sharers(g))
			}
		}
	}
	return nil
}

// Requeue and kill preemptions, checkpoints, MIG reconfigurations, time slicing and
// MPS together: the invariants hold at every scheduling point, every job ends
// in a final state with its work within [0, duration], and the run is
// deterministic under input shuffles.
func TestSharingChaos(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		jobs := genShareJobs(t, 4)
		for i := range jobs {
			if jobs[i].Sharing == sim.AcceptAny && rapid.IntRange(0, 3).Draw(t, "mig") == 0 {
				jobs[i].Sharing = sim.AcceptMIG
				jobs[i].GPUMemMiB %= 20000
			}
		}
		nodes := []sim.NodeSpec{
			{Name: "ts", GPUModel: "h100", GPUs: 2, GPUMemMiB: 80000, CPUMilli: 1000, MemoryMiB: 1000, Sharing: sim.ShareTimeSlice, SharingClients: 3},
			{Name: "mps", GPUModel: "h100", GPUs: 2, GPUMemMiB: 80000, CPUMilli: 1000, MemoryMiB: 1000, Sharing: sim.ShareMPS},
			{Name: "mig", GPUModel: "a100", GPUs: 2, GPUMemMiB: 81920, CPUMilli: 1000, MemoryMiB: 1000, Sharing: sim.ShareMIG,
				MIGProfiles: []string{"3g.40gb", "2g.20gb", "1g.10gb"}, MIGReconfigureCost: sim.Duration(rapid.IntRange(0, 30).Draw(t, "reconf")) * sim.Second},
			{Name: "x", GPUModel: "h100", GPUs: 2, GPUMemMiB: 80000, CPUMilli: 1000, MemoryMiB: 1000},
		}
		iv := sim.Duration(rapid.IntRange(0, 3).Draw(t, "ckpt")) * 20 * sim.Second
		save := sim.Duration(rapid.IntRange(0, 3).Draw(t, "save")) * sim.Second
		place := rapid.SampledFrom([]string{"first-fit", "best-fit", "spread"}).Draw(t, "placement")
		run := func(js []sim.JobSpec) *sim.Result {
			cl, err := sim.NewCluster(nodes)
			if err != nil {
				t.Fatal(err)
			}
			pol, err := policies.New("fifo", yamlNode("placement: "+place))
			if err != nil {
				t.Fatal(err)
			}
			e, err := sim.NewEngine(sim.Config{Cluster: cl, Jobs: js, Seed: 1, EnforceWalltime: true,
				Policy:             &shareChaos{Policy: pol, t: t, modes: []sim.PreemptMode{sim.PreemptRequeue, sim.PreemptKill, sim.PreemptRequeue}},
				CheckpointInterval: iv, CheckpointSave: save, CheckpointRestore: save, CheckpointOnSignal: true,
				Sharing: &sim.SharingConfig{Interference: hashInterf{n: 4}, MIG: migLookup}, LivelockPreemptions: -1, SampleInterval: 30 * sim.Second})
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		res := run(jobs)
		if os.Getenv("GPUSIM_CHAOS_DEBUG") != "" {
			pre := 0
			for i := range res.Jobs {
				pre += int(res.Jobs[i].Preempted)
			}
			fmt.Println("chaos:", len(jobs), "jobs", pre, "preemptions", res.Sharing.MIGReconfigurations, "reconfigurations", res.Sharing.Measured, "measured")
		}
		for i := range res.Jobs {
			j := &res.Jobs[i]
			switch j.State {
			case sim.StateCompleted, sim.StateKilled, sim.StateTimeout:
			default:
				if cl := res.Cluster; j.Spec.Sharing != sim.AcceptMIG || cl == nil {
					t.Fatalf("job %s ended %s", j.Spec.ID, j.State)
				}
			}
			if j.Done < 0 || j.Done > j.Spec.Duration || j.Overhead < 0 || j.Wasted < 0 {
				t.Fatalf("job %s: done %d of %d, wasted %d, overhead %d", j.Spec.ID, j.Done, j.Spec.Duration, j.Wasted, j.Overhead)
			}
		}
		shuffled := slices.Clone(jobs)
		slices.Reverse(shuffled)
		if a, b := logText(res), logText(run(shuffled)); a != b {
			t.Fatalf("shuffled input changed the log")
		}
	})
}
