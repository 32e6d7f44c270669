package reports

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

// writeEventsFrom over a log that grows while it writes gives the bytes of the
// whole-log writer, for logs that end before, on and after row-group
// boundaries (and for an empty log: one empty row group).
func TestWriteEventsFromGrowingLog(t *testing.T) {
	full := streamResult(t, rowGroupRows+jobRowChunk+17)
	for _, n := range []int{0, 1, rowGroupRows - 1, rowGroupRows, rowGroupRows + 1, 2 * rowGroupRows} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			if n > len(full.Log) {
				t.Skipf("the test log has %d events", len(full.Log))
			}
			res := *full
			res.Log = full.Log[:n]
			want := writeBytes(t, func(w io.Writer) error { return WriteEventsParquet(w, &res) })
			// The source hands out a little more than asked for, in odd steps,
			// and the whole log only at the end.
			have := 0
			got := writeBytes(t, func(w io.Writer) error {
				return writeEventsFrom(w, res.Jobs, func(want int) ([]sim.Event, error) {
					have = min(max(have, want)+7, n)
					return res.Log[:have], nil
				})
			})
			if !bytes.Equal(got, want) {
				t.Errorf("%d events: growing-log writer differs (%d vs %d bytes)", n, len(got), len(want))
			}
		})
	}
}

// A real run fed to StartEventsFeed while it goes on writes the events.parquet
// the finished run's writer writes, byte for byte (a log longer than a row
// group and many feed steps); a failed run leaves no file.
func TestStartEventsFeedMatchesFinishedRun(t *testing.T) {
	n := 50_000 // ~150k events: more than a row group, ~10 feed publications
	jobs := make([]sim.JobSpec, n)
	for i := range jobs {
		jobs[i] = job(fmt.Sprintf("j%06d", i), float64(i), float64(30+i%97), 1, int32(1+i%8), sim.ClassTraining, "q", "u")
	}
	feed := sim.NewLogFeed()
	e, err := sim.NewEngine(sim.Config{Cluster: testCluster(t, 64, 8), Jobs: jobs, Policy: greedy{}, Seed: 1, LogFeed: feed})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	wait := StartEventsFeed(dir, feed)
	res, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if len(res.Log) <= rowGroupRows {
		t.Fatalf("%d events, want more than a row group", len(res.Log))
	}
	got, err := os.ReadFile(filepath.Join(dir, EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := writeBytes(t, func(w io.Writer) error { return WriteEventsParquet(w, res) }); !bytes.Equal(got, want) {
		t.Errorf("streamed events.parquet differs from the finished run's (%d vs %d bytes)", len(got), len(want))
	}

	// A cancelled run: the writer stops with ErrRunAborted and leaves nothing.
	feed = sim.NewLogFeed()
	e, err = sim.NewEngine(sim.Config{Cluster: testCluster(t, 64, 8), Jobs: jobs, Policy: greedy{}, Seed: 1, LogFeed: feed})
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	wait = StartEventsFeed(dir, feed)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Run(ctx); err == nil {
		t.Fatal("a cancelled run succeeded")
	}
	if err := wait(); !errors.Is(err, sim.ErrRunAborted) {
		t.Fatalf("writer after a failed run: %v, want ErrRunAborted", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("a failed run left %v", ents)
	}
}
