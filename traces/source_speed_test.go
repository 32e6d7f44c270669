package traces

import (
	"fmt"
	"os"
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

// With reserve (the reader's row bound), jobs that fit are returned in the
// reserved slice without a copy; more than reserved still come back in order.
func TestJobChunksReserve(t *testing.T) {
	for _, tc := range []struct{ reserve, n int }{{10, 0}, {10, 7}, {10, 10}, {10, 11}, {5, jobChunkLen + 9}} {
		var c jobChunks
		c.reserve(tc.reserve)
		first := c.cur[:1]
		for i := 0; i < tc.n; i++ {
			c.add(sim.JobSpec{Submit: sim.Time(i)})
		}
		out := c.flatten()
		if len(out) != tc.n {
			t.Fatalf("%+v: len %d", tc, len(out))
		}
		for i := range out {
			if out[i].Submit != sim.Time(i) {
				t.Fatalf("%+v: job %d is %+v", tc, i, out[i])
			}
		}
		if tc.n > 0 && tc.n <= tc.reserve && &out[0] != &first[0] {
			t.Errorf("%+v: the reserved slice was copied", tc)
		}
	}
}

// The native reader's row bound is the file's line count.
func TestNativeRowsHint(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/jobs.csv"
	if err := os.WriteFile(path, []byte("id,submit_s,gpus,duration_s\na,0,1,10\nb,1,1,10"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := OpenJobsWith(FormatNative, path, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if h := r.(rowsHinter).rowsHint(); h < 2 || h > 3 {
		t.Errorf("rowsHint = %d, want 2 or 3", h)
	}
	r.(*stickyReader).JobReader.(*nativeCSVReader).in.file = dir // not a regular file
	if h := r.(rowsHinter).rowsHint(); h != 0 {
		t.Errorf("rowsHint of a directory = %d, want 0", h)
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
