package reports

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/array"

	"github.com/gpusim/gpusim/sim"
)

// TestEventsDetail checks the detail column: the reason name for wait events,
// empty for others, and that six-column files (before detail) still read.
func TestEventsDetail(t *testing.T) {
	res := &sim.Result{
		Jobs: []sim.Job{{Spec: sim.JobSpec{ID: "a"}}},
		Log: []sim.Event{
			{Time: 0, Kind: sim.EvArrive, Job: 0},
			{Time: 5, Kind: sim.EvWait, Job: 0, Value: int64(sim.ReasonTopology)},
			{Time: 6, Kind: sim.EvReserve, Job: 0, Value: 1000},
			{Time: 7, Kind: sim.EvWait, Job: 0, Value: int64(sim.ReasonReservation)},
		},
	}
	dir := t.TempDir()
	var buf bytes.Buffer
	if err := WriteEventsParquet(&buf, res); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "new.parquet")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadEventsParquet(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"", "topology", "", "reservation"}
	for i, r := range rows {
		if r.Detail != want[i] {
			t.Errorf("row %d detail %q, want %q", i, r.Detail, want[i])
		}
	}
	// Old layout: the first six columns only.
	buf.Reset()
	err = writeParquet(&buf, eventsSchemaV0, len(res.Log), func(b *array.RecordBuilder, lo, hi int) {
		for i := lo; i < hi; i++ {
			e := res.Log[i]
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			b.Field(1).(*array.Float64Builder).Append(e.Time.Seconds())
			b.Field(2).(*array.Int64Builder).Append(int64(e.Time))
			b.Field(3).(*array.StringBuilder).Append(e.Kind.String())
			b.Field(4).(*array.StringBuilder).Append("a")
			b.Field(5).(*array.Int64Builder).Append(e.Value)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	p0 := filepath.Join(dir, "old.parquet")
	if err := os.WriteFile(p0, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	old, err := ReadEventsParquet(p0)
	if err != nil {
		t.Fatal(err)
	}
	if len(old) != len(rows) {
		t.Fatalf("old: %d rows", len(old))
	}
	for i := range old {
		if old[i] != rows[i] {
			t.Errorf("old row %d = %+v, want %+v", i, old[i], rows[i])
		}
	}
}
