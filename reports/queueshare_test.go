package reports

import (
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpusim/gpusim/sim"
)

// TestQueueSharesSumToAllocation checks that the per-queue allocation sampled on
// the time-series grid adds up to timeseries.parquet's gpus_allocated at every
// sample (same event cut-off), and that both queues of the workload appear.
func TestQueueSharesSumToAllocation(t *testing.T) {
	for _, pol := range []sim.Policy{fifo{}, greedy{}} {
		res := mixedResult(t, pol, 3)
		d := filepath.Join(t.TempDir(), pol.Name())
		if err := WriteRunDir(d, res, Summarize(res, Provenance{}, time.Second)); err != nil {
			t.Fatal(err)
		}
		r, err := ReadRunDir(d, true)
		if err != nil {
			t.Fatal(err)
		}
		qs := QueueShares(r)
		if qs == nil || len(qs.Queues) != 2 || qs.Queues[0] != "prod" || qs.Queues[1] != "research" {
			t.Fatalf("%s: queues %+v", pol.Name(), qs)
		}
		busy := 0
		for i, s := range r.Timeseries {
			sum := 0.0
			for q := range qs.Queues {
				sum += qs.GPUs[q][i]
			}
			if math.Abs(sum-s.GPUsAllocated) > 1e-9 {
				t.Fatalf("%s: t=%v: queues sum to %v, timeseries has %v", pol.Name(), s.TimeS, sum, s.GPUsAllocated)
			}
			if qs.GPUs[0][i] > 0 && qs.GPUs[1][i] > 0 {
				busy++
			}
		}
		if busy == 0 {
			t.Errorf("%s: the two queues never share the cluster", pol.Name())
		}
	}
}
