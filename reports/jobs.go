package reports

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/gpusim/gpusim/internal/csvutil"
	"github.com/gpusim/gpusim/sim"
)

// JobColumns are the columns of jobs.csv and jobs.parquet, in order.
var JobColumns = []string{"id", "submit_s", "start_s", "end_s", "wait_s", "jct_s", "run_s", "estimate_s",
	"gpus", "gpus_per_replica", "replicas", "gpu_milli", "class", "queue", "user", "priority", "state",
	"preemptions", "nodes", "span", "speed", "wasted_s", "overhead_s"}

// JobRow is one row of jobs.csv / jobs.parquet. Times are seconds since the
// scenario epoch with microsecond precision; a time that did not happen is NaN (an
// empty CSV cell, a Parquet null).
type JobRow struct {
	ID        string
	Submit    float64 // submission time
	Start     float64 // first start; NaN if never started
	End       float64 // completion/kill/timeout time; NaN while unfinished
	Wait      float64 // Start - Submit; NaN if never started
	JCT       float64 // End - Submit (any final state); NaN while unfinished
	Run       float64 // true duration at reference speed
	Estimate  float64 // the run time the policy saw (walltime, or true duration)
	GPUs      int32   // Replicas x GPUsPerReplica
	GPUsPerRe int32   // GPUs per replica
	Replicas  int32
	GPUMilli  int32 // share of each GPU in milli-GPU (1000 = whole)
	Class     string
	Queue     string // as submitted ("" stays "")
	User      string
	Priority  int32
	State     string    // final state: pending, running, completed, killed, timeout
	Preempt   int32     // times preempted
	Nodes     string    // "|"-joined node names of the last placement; "" if never started
	Span      string    // tightest topology level the last placement's GPUs share (nvlink, pcie, socket, node, leaf, spine; cluster = across spines); "" without GPUs
	Speed     float64   // speed factor of the last run (1 = reference; < 1 slower, e.g. communication across the placement); NaN if never started
	Wasted    float64   // wall time of its runs that produced no surviving work (lost work, checkpoint save/restore, killed runs)
	Overhead  float64   // part of Wasted spent saving and restoring checkpoints
	Share     *JobShare // sharing runs only (extra columns SharingJobColumns)
	Fail      *JobFail  // failure runs only (extra columns FailureJobColumns)
	Power     *JobPower // power runs only (extra columns PowerJobColumns)
	Ckpt      *JobCkpt  // checkpoint I/O runs only (extra columns CheckpointJobColumns)
}

func secs(t int64) float64 { return float64(t) / 1e6 }

// JobRows derives the job rows of a result, in JobRef order.
func JobRows(res *sim.Result) []JobRow {
	if res == nil {
		return nil
	}
	return appendJobRows(make([]JobRow, 0, len(res.Jobs)), res, 0, len(res.Jobs))
}

// jobRowChunk is how many job rows the streaming writers derive at a time.
const jobRowChunk = 8192

// forJobRowChunks calls fn with the job rows of res in JobRef order, at most
// jobRowChunk at a time (one reused buffer: fn must not keep the slice), so
// writers never hold every row in memory. It stops at fn's first error.
func forJobRowChunks(res *sim.Result, fn func(rows []JobRow) error) error {
	buf := make([]JobRow, 0, min(jobRowChunk, len(res.Jobs)))
	for lo := 0; lo < len(res.Jobs); lo += jobRowChunk {
		buf = appendJobRows(buf[:0], res, lo, min(lo+jobRowChunk, len(res.Jobs)))
		if err := fn(buf); err != nil {
			return err
		}
	}
	return nil
}

// appendJobRows appends the rows of jobs [lo, hi) of res to rows.
func appendJobRows(rows []JobRow, res *sim.Result, lo, hi int) []JobRow {
	nan := math.NaN()
	var sb strings.Builder
	for i := lo; i < hi; i++ {
		j := &res.Jobs[i]
		sp := &j.Spec
		rows = append(rows, JobRow{})
		r := &rows[len(rows)-1]
		r.ID = string(sp.ID)
		r.Submit = secs(int64(sp.Submit))
		r.Start, r.End, r.Wait, r.JCT = nan, nan, nan, nan
		if j.FirstStart != sim.Never {
			r.Start = secs(int64(j.FirstStart))
			r.Wait = secs(int64(j.FirstStart - sp.Submit))
		}
		if j.End != sim.Never {
			r.End = secs(int64(j.End))
			r.JCT = secs(int64(j.End - sp.Submit))
		}
		r.Run = secs(int64(sp.Duration))
		r.Estimate = secs(int64(j.Estimate))
		r.GPUs = sp.TotalGPUs()
		r.GPUsPerRe = sp.GPUsPerReplica
		r.Replicas = sp.Replicas
		r.GPUMilli = int32(sp.GPUMilli)
		r.Class = classOf(sp.Class)
		r.Queue = sp.Queue
		r.User = sp.User
		r.Priority = sp.Priority
		r.State = j.State.String()
		r.Preempt = j.Preempted
		if len(j.Nodes) > 0 && j.FirstStart != sim.Never && res.Cluster != nil {
			sb.Reset()
			for k, n := range j.Nodes {
				if k > 0 {
					sb.WriteByte('|')
				}
				if n >= 0 && int(n) < res.Cluster.NumNodes() {
					sb.WriteString(res.Cluster.Node(n).Name)
				} else {
					sb.WriteString("?")
				}
			}
			r.Nodes = sb.String()
			if lv, ok := res.Cluster.SpanLevel(j.GPUs); ok {
				r.Span = SpanName(lv)
			}
		}
		r.Wasted = secs(int64(j.Wasted))
		r.Overhead = secs(int64(j.Overhead))
		r.Speed = math.NaN()
		if sp := j.Speed(); sp > 0 {
			r.Speed = math.Round(sp*1e6) / 1e6
		}
		if res.Sharing != nil {
			r.Share = jobShare(j)
		}
		if res.Failures != nil {
			r.Fail = jobFail(res, i)
		}
		if res.Power != nil {
			r.Power = jobPower(res.Power, i)
		}
		if res.Storage != nil {
			r.Ckpt = jobCkpt(res.Storage, i)
		}
	}
	return rows
}

// appendSecs appends a seconds value in the fixed CSV format (shortest decimal
// that round-trips; empty for NaN).
func appendSecs(b []byte, x float64) []byte {
	if math.IsNaN(x) {
		return b
	}
	if us, ok := wholeMicros(x); ok {
		return appendMicros(b, us)
	}
	return strconv.AppendFloat(b, x, 'f', -1, 64)
}

// wholeMicros reports whether x is float64(us)/1e6 for an integer us (as every
// time and duration of a job row is: secs of sim's microseconds) with 0 < |x| <
// 2^32 s. There a float64's spacing is under 1e-6, so no other decimal of at
// most six places rounds to x and the exact decimal us/10^6 is the shortest one
// that does: the text strconv.AppendFloat(x, 'f', -1) writes, which
// appendMicros writes without the float formatting.
func wholeMicros(x float64) (int64, bool) {
	if !(math.Abs(x) < 1<<32) || x == 0 {
		return 0, false
	}
	us := int64(math.Round(x * 1e6))
	return us, float64(us)/1e6 == x
}

// appendMicros appends us/10^6 in decimal without trailing fractional zeros
// (and without a point for whole seconds).
func appendMicros(b []byte, us int64) []byte {
	if us < 0 {
		b = append(b, '-')
		us = -us
	}
	b = strconv.AppendInt(b, us/1e6, 10)
	frac := us % 1e6
	if frac == 0 {
		return b
	}
	var d [7]byte
	d[0] = '.'
	for i := 6; i >= 1; i-- {
		d[i] = byte('0' + frac%10)
		frac /= 10
	}
	n := 7
	for d[n-1] == '0' {
		n--
	}
	return append(b, d[:n]...)
}

// WriteJobsCSV writes rows as jobs.csv (header line, "\n" line ends).
func WriteJobsCSV(w io.Writer, rows []JobRow) error {
	b := make([]byte, 0, 64<<10)
	b = append(b, strings.Join(JobColumns, ",")...)
	if len(rows) > 0 && rows[0].Share != nil {
		b = append(b, ',')
		b = append(b, strings.Join(SharingJobColumns, ",")...)
	}
	if len(rows) > 0 && rows[0].Fail != nil {
		b = append(b, ',')
		b = append(b, strings.Join(FailureJobColumns, ",")...)
	}
	if len(rows) > 0 && rows[0].Power != nil {
		b = append(b, ',')
		b = append(b, strings.Join(PowerJobColumns, ",")...)
	}
	if len(rows) > 0 && rows[0].Ckpt != nil {
		b = append(b, ',')
		b = append(b, strings.Join(CheckpointJobColumns, ",")...)
	}
	b = append(b, '\n')
	b, err := appendJobsCSV(w, b, rows)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// writeJobsCSVOf writes the job rows of res as jobs.csv, deriving them a chunk at
// a time; the bytes equal WriteJobsCSV(w, JobRows(res)).
func writeJobsCSVOf(w io.Writer, res *sim.Result) error {
	b := make([]byte, 0, 64<<10)
	b = append(b, strings.Join(JobColumns, ",")...)
	if res.Sharing != nil {
		b = append(b, ',')
		b = append(b, strings.Join(SharingJobColumns, ",")...)
	}
	if res.Failures != nil {
		b = append(b, ',')
		b = append(b, strings.Join(FailureJobColumns, ",")...)
	}
	if res.Power != nil {
		b = append(b, ',')
		b = append(b, strings.Join(PowerJobColumns, ",")...)
	}
	if res.Storage != nil {
		b = append(b, ',')
		b = append(b, strings.Join(CheckpointJobColumns, ",")...)
	}
	b = append(b, '\n')
	err := forJobRowChunks(res, func(rows []JobRow) (err error) {
		b, err = appendJobsCSV(w, b, rows)
		return err
	})
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// appendJobsCSV appends the CSV lines of rows to b, writing b to w (and
// truncating it) whenever it passes 60 KiB; it returns the unwritten rest.
func appendJobsCSV(w io.Writer, b []byte, rows []JobRow) ([]byte, error) {
	for i := range rows {
		r := &rows[i]
		b = csvutil.AppendField(b, r.ID)
		for _, x := range [...]float64{r.Submit, r.Start, r.End, r.Wait, r.JCT, r.Run, r.Estimate} {
			b = append(b, ',')
			b = appendSecs(b, x)
		}
		for _, x := range [...]int32{r.GPUs, r.GPUsPerRe, r.Replicas, r.GPUMilli} {
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(x), 10)
		}
		for _, s := range [...]string{r.Class, r.Queue, r.User} {
			b = append(b, ',')
			b = csvutil.AppendField(b, s)
		}
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(r.Priority), 10)
		b = append(b, ',')
		b = csvutil.AppendField(b, r.State)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(r.Preempt), 10)
		b = append(b, ',')
		b = csvutil.AppendField(b, r.Nodes)
		b = append(b, ',')
		b = csvutil.AppendField(b, r.Span)
		b = append(b, ',')
		b = appendSecs(b, r.Speed)
		b = append(b, ',')
		b = appendSecs(b, r.Wasted)
		b = append(b, ',')
		b = appendSecs(b, r.Overhead)
		b = appendJobShareCSV(b, r)
		b = appendJobFailCSV(b, r)
		b = appendJobPowerCSV(b, r)
		b = appendJobCkptCSV(b, r)
		b = append(b, '\n')
		if len(b) > 60<<10 {
			if _, err := w.Write(b); err != nil {
				return b, err
			}
			b = b[:0]
		}
	}
	return b, nil
}

// ParseJobsCSV parses jobs.csv text (as written by WriteJobsCSV); name is used in
// errors, which give the line and column.
func ParseJobsCSV(name string, r io.Reader) ([]JobRow, error) {
	cr := newCSVReader(r)
	cr.FieldsPerRecord = 0 // the header's count: sharing and power runs add columns
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", name, err)
	}
	shared, failed, powered, ckpt, ok := jobExtras(head)
	if !ok {
		return nil, fmt.Errorf("%s: line 1: unexpected header (want %s)", name, strings.Join(JobColumns, ","))
	}
	var rows []JobRow
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		var r JobRow
		var perr error
		f := func(col int) float64 {
			if rec[col] == "" {
				return math.NaN()
			}
			x, err := strconv.ParseFloat(rec[col], 64)
			if err != nil && perr == nil {
				perr = fmt.Errorf("%s: line %d: column %s: %w", name, line, JobColumns[col], err)
			}
			return x
		}
		n := func(col int) int32 {
			x, err := strconv.ParseInt(rec[col], 10, 32)
			if err != nil && perr == nil {
				perr = fmt.Errorf("%s: line %d: column %s: %w", name, line, JobColumns[col], err)
			}
			return int32(x)
		}
		r.ID = rec[0]
		r.Submit, r.Start, r.End, r.Wait, r.JCT, r.Run, r.Estimate = f(1), f(2), f(3), f(4), f(5), f(6), f(7)
		r.GPUs, r.GPUsPerRe, r.Replicas, r.GPUMilli = n(8), n(9), n(10), n(11)
		r.Class, r.Queue, r.User = rec[12], rec[13], rec[14]
		r.Priority = n(15)
		r.State = rec[16]
		r.Preempt = n(17)
		r.Nodes = rec[18]
		r.Span = rec[19]
		r.Speed = f(20)
		r.Wasted, r.Overhead = f(21), f(22)
		c := len(JobColumns) // the extra column groups follow in a fixed order
		if shared {
			r.Share = &JobShare{MeanSpeed: f(c), MinSpeed: f(c + 1), SharedS: f(c + 2)}
			c += len(SharingJobColumns)
		}
		if failed {
			x, err := strconv.ParseInt(rec[c], 10, 32)
			if err != nil && perr == nil {
				perr = fmt.Errorf("%s: line %d: column interruptions: %w", name, line, err)
			}
			r.Fail = &JobFail{Interruptions: int32(x), LostS: f(c + 1), LostGPUHours: f(c + 2)}
			c += len(FailureJobColumns)
		}
		if powered {
			r.Power = &JobPower{EnergyKWh: f(c), CarbonKg: f(c + 1), PeakPowerW: f(c + 2)}
			c += len(PowerJobColumns)
		}
		if ckpt {
			x, err := strconv.ParseInt(rec[c], 10, 32)
			if err != nil && perr == nil {
				perr = fmt.Errorf("%s: line %d: column ckpt_saves: %w", name, line, err)
			}
			r.Ckpt = &JobCkpt{Saves: int32(x), GB: f(c + 1), SaveS: f(c + 2)}
		}
		if perr != nil {
			return nil, perr
		}
		rows = append(rows, r)
	}
}

// The extra column groups of jobs.csv and jobs.parquet, in their fixed order.
const (
	extraShare = iota
	extraFail
	extraPower
	extraCkpt
)

// extraField is the jobs.parquet field index where extra group g starts in r's
// row: jobsSchema's fields, then the groups before g that r has.
func (r *JobRow) extraField(g int) int {
	n := len(jobsSchema.Fields())
	for i, on := range [...]bool{r.Share != nil, r.Fail != nil, r.Power != nil} {
		if i < g && on {
			n += [...]int{len(SharingJobColumns), len(FailureJobColumns), len(PowerJobColumns)}[i]
		}
	}
	return n
}

// jobExtras matches a jobs.csv header: JobColumns, then any of the extra column
// groups in their fixed order (SharingJobColumns, FailureJobColumns,
// PowerJobColumns, CheckpointJobColumns). ok is false for any other header.
func jobExtras(head []string) (shared, failed, powered, ckpt, ok bool) {
	if len(head) < len(JobColumns) || strings.Join(head[:len(JobColumns)], ",") != strings.Join(JobColumns, ",") {
		return false, false, false, false, false
	}
	rest := head[len(JobColumns):]
	take := func(group []string) bool {
		if len(rest) >= len(group) && strings.Join(rest[:len(group)], ",") == strings.Join(group, ",") {
			rest = rest[len(group):]
			return true
		}
		return false
	}
	shared = take(SharingJobColumns)
	failed = take(FailureJobColumns)
	powered = take(PowerJobColumns)
	ckpt = take(CheckpointJobColumns)
	return shared, failed, powered, ckpt, len(rest) == 0
}

// SpanName names a topology level for the span column ("cluster" for a placement
// that crosses spine blocks).
func SpanName(l sim.Level) string {
	if l >= sim.NumLevels {
		return "cluster"
	}
	return l.String()
}
