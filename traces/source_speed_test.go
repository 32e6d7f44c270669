package traces

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

// jobChunks keeps every job in order across chunk boundaries, and flatten
// returns an exact-size slice.
func TestJobChunksFlatten(t *testing.T) {
	for _, n := range []int{0, 1, jobChunkLen - 1, jobChunkLen, jobChunkLen + 1, 3*jobChunkLen + 5} {
		var c jobChunks
		for i := 0; i < n; i++ {
			c.add(sim.JobSpec{ID: sim.JobID(fmt.Sprint(i)), Submit: sim.Time(i)})
		}
		out := c.flatten()
		if len(out) != n || cap(out) != n {
			t.Fatalf("n=%d: len %d cap %d", n, len(out), cap(out))
		}
		for i := range out {
			if out[i].Submit != sim.Time(i) || out[i].ID != sim.JobID(fmt.Sprint(i)) {
				t.Fatalf("n=%d: job %d is %+v", n, i, out[i])
			}
		}
		if n == 0 && out != nil {
			t.Error("no jobs should give nil")
		}
	}
}

// SortJobs orders by (Submit, ID) and keeps equal keys in input order, whether
// the input is already sorted (only checked) or not.
func TestSortJobsStable(t *testing.T) {
	mk := func(id string, s sim.Time, q string) sim.JobSpec {
		return sim.JobSpec{ID: sim.JobID(id), Submit: s, Queue: q}
	}
	jobs := []sim.JobSpec{mk("b", 2, ""), mk("a", 2, "first"), mk("a", 2, "second"), mk("c", 1, "")}
	SortJobs(jobs)
	var got []string
	for _, j := range jobs {
		got = append(got, string(j.ID)+j.Queue)
	}
	if want := []string{"c", "afirst", "asecond", "b"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	before := slices.Clone(jobs)
	SortJobs(jobs)
	if !slices.EqualFunc(before, jobs, func(a, b sim.JobSpec) bool { return a.ID == b.ID && a.Queue == b.Queue }) {
		t.Error("sorting sorted input changed it")
	}
}
