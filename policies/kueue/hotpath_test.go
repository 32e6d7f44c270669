package kueue

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// The scheduling hot paths' shortcuts (issue 16) must give exactly what the
// straightforward code gives: these properties compare them on random inputs.

// candOrder (keys, insertion sort or lazy heap) hands out candidates in
// classicalCandCmp's sorted order, with and without a comparator.
func TestCandOrderMatchesSort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := &Kueue{}
		n := rapid.IntRange(0, 3*candSortMax).Draw(t, "n")
		prios := []int32{math.MinInt32, -3, -1, 0, 0, 1, 1, 2, 7, math.MaxInt32}
		seqs := rapid.Permutation(func() []int64 {
			s := make([]int64, n)
			for i := range s {
				s[i] = int64(i*3 + 1)
			}
			return s
		}()).Draw(t, "seqs")
		ws := make([]*workload, n)
		for i := range ws {
			ws[i] = &workload{job: &sim.Job{Ref: sim.JobRef(rapid.IntRange(0, 1000).Draw(t, "ref"))},
				prio:     rapid.SampledFrom(prios).Draw(t, "prio"),
				pv:       pvariant(rapid.IntRange(0, 3).Draw(t, "pv")),
				evicting: rapid.IntRange(0, 3).Draw(t, "evicting") == 0, // preemptorReservation false
				admitSeq: seqs[i]}
			if rapid.IntRange(0, 5).Draw(t, "dupSeq") == 0 && i > 0 {
				ws[i].admitSeq = ws[i-1].admitSeq // equal keys: the JobRef decides
				ws[i].job.Ref = ws[i-1].job.Ref + 1
			}
		}
		want := slices.Clone(ws)
		slices.SortStableFunc(want, k.classicalCandCmp)
		for _, useCmp := range []bool{false, true} {
			var o candOrder
			var c func(x, y *workload) int
			if useCmp {
				c = k.classicalCandCmp
			}
			o.reset(ws, c)
			// Read in a random pattern: at(i) for growing i, re-reading earlier ones.
			for i := 0; i < n; i++ {
				j := rapid.IntRange(0, i).Draw(t, "reread")
				if got := o.at(j); got != want[j] && k.classicalCandCmp(got, want[j]) != 0 {
					t.Fatalf("cmp=%v: at(%d) = %+v, want %+v", useCmp, j, *got, *want[j])
				}
				if got := o.at(i); got != want[i] && k.classicalCandCmp(got, want[i]) != 0 {
					t.Fatalf("cmp=%v: at(%d) = %+v, want %+v", useCmp, i, *got, *want[i])
				}
			}
			if o.at(n) != nil {
				t.Fatalf("cmp=%v: at(%d) past the end is not nil", useCmp, n)
			}
		}
	})
}

// fitsWithout (usage removed summed per queue run) answers like removing every
// candidate (but the excluded ones) one by one, and leaves the quota tree as it found it, on random
// cohort trees with borrowing and lending limits.
func TestFitsWithoutMatchesOneByOne(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m, names := randomTree(t, "")
		k, err := New(Params{Inline: m}, policies.Env{})
		if err != nil {
			t.Fatal(err)
		}
		nfr := len(k.frIndex)
		drawAssign := func(label string) []frQ {
			var a []frQ
			for fr := 0; fr < nfr; fr++ {
				if rapid.Bool().Draw(t, label+"Uses") {
					a = append(a, frQ{fr, int64(rapid.IntRange(1, 6).Draw(t, label+"Q"))})
				}
			}
			return a
		}
		var cands []*workload
		for i, n := 0, rapid.IntRange(0, 12).Draw(t, "cands"); i < n; i++ {
			x := &workload{job: &sim.Job{Ref: sim.JobRef(i)}, cq: k.cqByName[rapid.SampledFrom(names).Draw(t, "cq")], assign: drawAssign("cand"),
				pv: pvariant(rapid.IntRange(0, 3).Draw(t, "pv"))}
			k.take(x, +1)
			cands = append(cands, x)
		}
		// Others hold quota too, without being candidates.
		for i, n := 0, rapid.IntRange(0, 4).Draw(t, "others"); i < n; i++ {
			k.take(&workload{cq: k.cqByName[rapid.SampledFrom(names).Draw(t, "otherCQ")], assign: drawAssign("other")}, +1)
		}
		e := &entry{w: &workload{cq: k.cqByName[rapid.SampledFrom(names).Draw(t, "preemptor")]}, assign: drawAssign("entry")}
		snap := func() [][]int64 {
			var s [][]int64
			seen := map[*qnode]bool{}
			for _, name := range names {
				for x := k.cqByName[name].node; x != nil && !seen[x]; x = x.parent {
					seen[x] = true
					s = append(s, slices.Clone(x.usage))
				}
			}
			return s
		}
		allowBorrow, exclWB := rapid.Bool().Draw(t, "allowBorrow"), rapid.Bool().Draw(t, "exclWB")
		var removed []*workload
		for _, x := range cands {
			if !exclWB || x.cq == e.w.cq || x.pv != pvWithoutBorrowing {
				removed = append(removed, x)
			}
		}
		before := snap()
		for _, x := range removed {
			k.take(x, -1)
		}
		want := k.fitsEntry(e, allowBorrow)
		for _, x := range removed {
			k.take(x, +1)
		}
		if !slices.EqualFunc(before, snap(), slices.Equal) {
			t.Fatal("one-by-one removal did not restore the tree (test bug)")
		}
		if got := k.fitsWithout(e, cands, allowBorrow, exclWB); got != want {
			t.Fatalf("fitsWithout = %v, one by one %v", got, want)
		}
		if after := snap(); !slices.EqualFunc(before, after, slices.Equal) {
			t.Fatalf("fitsWithout left usage %v, was %v", after, before)
		}
	})
}

// parkWholeBucket gives the same queue and inadmissible set as parkGeneral.
func TestParkWholeBucketMatchesGeneral(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 30).Draw(t, "n")
		prio := make([]int32, n)
		qts := make([]sim.Time, n)
		for i := range prio {
			prio[i] = int32(rapid.IntRange(0, 2).Draw(t, "prio"))
			qts[i] = sim.Time(rapid.IntRange(0, 5).Draw(t, "qts"))
		}
		preParks := rapid.SliceOfN(rapid.IntRange(0, n-1), 0, 4).Draw(t, "preParks")
		build := func() (*Kueue, []*workload) {
			k, err := New(Params{Inline: manyQueues(1, 1, 8)}, policies.Env{})
			if err != nil {
				t.Fatal(err)
			}
			spec := simtest.MakeJob("j").Queue("lq-000").GPUs(2).Obj()
			ws := make([]*workload, n)
			for i := range ws {
				ws[i] = &workload{job: &sim.Job{Spec: spec, Ref: sim.JobRef(i)}, cq: k.cqs[0], prio: prio[i]}
				ws[i].qts = qts[i]
				k.push(ws[i])
			}
			for _, i := range preParks { // an inadmissible set to merge with
				if ws[i].queued() {
					k.parkGeneral(ws[i])
				}
			}
			return k, ws
		}
		state := func(k *Kueue, ws []*workload) string {
			b := ws[0].bk
			ids := func(l []*workload) (s []sim.JobRef) {
				for _, w := range l {
					s = append(s, w.job.Ref)
				}
				return s
			}
			var flags []string
			for _, w := range ws {
				flags = append(flags, fmt.Sprint(w.queued(), w.parked()))
			}
			return fmt.Sprintf("queue %v parked %v nQueued %d nParked %d %v", ids(*b.heap()), ids(*b.parked()), k.cqs[0].nQueued, k.cqs[0].nParked, flags)
		}
		k1, ws1 := build()
		if len(*ws1[0].bk.heap()) == 0 {
			t.Skip("everything parked")
		}
		head := (*ws1[0].bk.heap())[0].job.Ref
		if !k1.parkWholeBucket(ws1[head]) {
			t.Fatal("parkWholeBucket refused the bucket's first workload")
		}
		k2, ws2 := build()
		k2.parkGeneral(ws2[head])
		if s1, s2 := state(k1, ws1), state(k2, ws2); s1 != s2 {
			t.Fatalf("parkWholeBucket: %s\nparkGeneral:     %s", s1, s2)
		}
	})
}
