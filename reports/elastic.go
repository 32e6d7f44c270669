package reports

import (
	"io"
	"strconv"

	"github.com/gpusim/gpusim/internal/csvutil"
	"github.com/gpusim/gpusim/sim"
)

// ElasticFile is the elastic gangs' output (docs/elastic.md, docs/outputs.md),
// written only when the run has elastic jobs (sim.Result.Elastic != nil).
const ElasticFile = "elastic.csv"

// ElasticColumns are elastic.csv's columns: one row per elastic job and
// replica count it ran at (ascending), with the job's bounds, its resize
// count (repeated on each of its rows) and the wall time at that count.
var ElasticColumns = []string{"job_id", "min", "max", "preferred", "step", "resizes", "replicas", "seconds"}

// WriteElasticCSV writes elastic.csv (ElasticColumns) for a run with elastic
// jobs. Times run to the job's end, or to the run's end for a job still
// running. A job that never ran has one row with replicas 0 and seconds 0.
func WriteElasticCSV(w io.Writer, res *sim.Result) error {
	el := res.Elastic
	return writeCSVRows(w, ElasticColumns, len(res.Jobs), func(b []byte, r int) []byte {
		j := &res.Jobs[r]
		sp := j.Spec.Elastic
		if sp == nil {
			return b
		}
		row := func(b []byte, n int, d sim.Duration) []byte {
			b = csvutil.AppendField(b, string(j.Spec.ID))
			for _, v := range []int32{sp.Min, sp.Max, j.Spec.Replicas, sp.Step, el.Resizes[r], int32(n)} {
				b = strconv.AppendInt(append(b, ','), int64(v), 10)
			}
			return append(appendSecs(append(b, ','), d.Seconds()), '\n')
		}
		at := el.TimeAt(sim.JobRef(r), res.End)
		ran := false
		for n, d := range at {
			if d > 0 {
				b, ran = row(b, n, d), true
			}
		}
		if !ran {
			b = row(b, 0, 0)
		}
		return b
	})
}
