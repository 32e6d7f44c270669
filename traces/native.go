package traces

import (
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/gpusim/gpusim/internal/csvutil"
	"github.com/gpusim/gpusim/sim"
)

// Native column indexes.
const (
	cID = iota
	cSubmit
	cGPUs
	cDuration
	cReplicas
	cWalltime
	cGPUMilli
	cGPUModel
	cQueue
	cUser
	cTeam
	cClass
	cPriority
	cCPUMilli
	cMemory
	numNativeCols
)

// Optional device-level sharing columns (docs/sharing.md, "Scenario fields"),
// read from native CSV and Parquet; traces without them parse exactly as before.
const (
	cSharing = numNativeCols + iota
	cGPUMemMiB
	cMIGProfile
	cSMUtil
	cWorkload
	cServingRate // serving job columns (native_serving.go)
	cServingService
	cServingSLA
	cDeps // DAG columns (native_dag.go)
	cJobName
	numAllCols
)

// SharingColumns are the optional native CSV columns saying what GPU sharing a
// job accepts: sharing (exclusive/any/mig/timeslice/mps), gpu_mem_mib (peak GPU
// memory per GPU), mig_profile, sm_util (solo SM utilisation in [0, 1]) and
// workload (the interference-matrix key). The readers accept them (CSV and
// Parquet); the writers do not write them.
var SharingColumns = []string{"sharing", "gpu_mem_mib", "mig_profile", "sm_util", "workload"}

func colName(c int) string {
	if c < numNativeCols {
		return NativeColumns[c]
	}
	if c < cServingRate {
		return SharingColumns[c-numNativeCols]
	}
	if c < cDeps {
		return ServingColumns[c-cServingRate]
	}
	return DAGColumns[c-cDeps]
}

// NativeColumns lists the native format's columns in the order the writers use.
// The first four are required on input.
var NativeColumns = []string{
	"id", "submit_s", "gpus", "duration_s", "replicas", "walltime_s", "gpu_milli",
	"gpu_model", "queue", "user", "team", "class", "priority", "cpu_milli", "memory_mib",
}

const nativeRequired = 4

// fieldSource is one row of a native table, column by column (CSV or Parquet).
// present is false for a missing column or an empty/null value.
type fieldSource interface {
	str(col int) (s string, present bool)
	num(col int) (v float64, present bool, err error)
	integer(col int, bits int) (v int64, present bool, err error)
	// micros is a decimal seconds value as microseconds (rounded to nearest).
	micros(col int) (us int64, present bool, err error)
}

// nativeRow turns one row into a JobSpec, checking every field. It returns a
// *RowError naming the first bad column.
func nativeRow(src fieldSource, file string, line int, in interner) (sim.JobSpec, error) {
	var j sim.JobSpec
	bad := func(col int, format string, args ...any) (sim.JobSpec, error) {
		return sim.JobSpec{}, rowErr(file, line, NativeColumns[col], format, args...)
	}
	id, ok := src.str(cID)
	if !ok {
		return bad(cID, "missing value")
	}
	j.ID = sim.JobID(strings.Clone(id))
	secs := func(col int, required bool) (sim.Duration, error) {
		us, ok, err := src.micros(col)
		if err != nil {
			return 0, rowErr(file, line, NativeColumns[col], "%v", err)
		}
		if !ok {
			if required {
				return 0, rowErr(file, line, NativeColumns[col], "missing value")
			}
			return 0, nil
		}
		if us < 0 {
			return 0, rowErr(file, line, NativeColumns[col], "negative time %v", sim.Duration(us).Seconds())
		}
		return sim.Duration(us), nil
	}
	d, err := secs(cSubmit, true)
	if err != nil {
		return sim.JobSpec{}, err
	}
	j.Submit = sim.Time(d)
	if j.Duration, err = secs(cDuration, true); err != nil {
		return sim.JobSpec{}, err
	}
	if j.Walltime, err = secs(cWalltime, false); err != nil {
		return sim.JobSpec{}, err
	}
	ints := func(col, bits int, def int64, required bool) (int64, error) {
		v, ok, err := src.integer(col, bits)
		if err != nil {
			return 0, rowErr(file, line, NativeColumns[col], "%v", err)
		}
		if !ok {
			if required {
				return 0, rowErr(file, line, NativeColumns[col], "missing value")
			}
			return def, nil
		}
		return v, nil
	}
	gpus, err := ints(cGPUs, 32, 0, true)
	if err != nil {
		return sim.JobSpec{}, err
	}
	if gpus < 0 {
		return bad(cGPUs, "must be >= 0, got %d", gpus)
	}
	j.GPUsPerReplica = int32(gpus)
	reps, err := ints(cReplicas, 32, 1, false)
	if err != nil {
		return sim.JobSpec{}, err
	}
	if reps < 1 {
		return bad(cReplicas, "must be >= 1, got %d", reps)
	}
	j.Replicas = int32(reps)
	milli, err := ints(cGPUMilli, 32, 1000, false)
	if err != nil {
		return sim.JobSpec{}, err
	}
	if gpus > 0 && (milli < 1 || milli > 1000) {
		return bad(cGPUMilli, "must be in 1..1000, got %d", milli)
	}
	if gpus == 0 && (milli < 0 || milli > 1000) {
		return bad(cGPUMilli, "must be in 0..1000, got %d", milli)
	}
	if gpus > 0 && milli < 1000 && (gpus != 1 || reps != 1) {
		return bad(cGPUMilli, "a fractional share (%d) needs gpus=1 and replicas=1", milli)
	}
	j.GPUMilli = sim.MilliGPU(milli)
	if gpus == 0 {
		j.GPUMilli = sim.WholeGPU
	}
	if m, ok := src.str(cGPUModel); ok {
		j.GPUModels = splitModels(m, in)
	}
	if s, ok := src.str(cQueue); ok {
		j.Queue = in.get(s)
	}
	if s, ok := src.str(cUser); ok {
		j.User = in.get(s)
	}
	if s, ok := src.str(cTeam); ok {
		j.Team = in.get(s)
	}
	cls, _ := src.str(cClass)
	if j.Class, err = sim.ParseClass(strings.TrimSpace(cls)); err != nil {
		return bad(cClass, "%v", err)
	}
	p, err := ints(cPriority, 32, 0, false)
	if err != nil {
		return sim.JobSpec{}, err
	}
	j.Priority = int32(p)
	if j.CPUMilli, err = ints(cCPUMilli, 64, 0, false); err != nil {
		return sim.JobSpec{}, err
	}
	if j.CPUMilli < 0 {
		return bad(cCPUMilli, "must be >= 0, got %d", j.CPUMilli)
	}
	if j.MemoryMiB, err = ints(cMemory, 64, 0, false); err != nil {
		return sim.JobSpec{}, err
	}
	if j.MemoryMiB < 0 {
		return bad(cMemory, "must be >= 0, got %d", j.MemoryMiB)
	}
	if err := sharingCols(src, &j, file, line, in); err != nil {
		return sim.JobSpec{}, err
	}
	if err := servingCols(src, &j, file, line); err != nil {
		return sim.JobSpec{}, err
	}
	if err := dagCols(src, &j, file, line, in); err != nil {
		return sim.JobSpec{}, err
	}
	if col, msg := checkLimits(&j); col != "" {
		return sim.JobSpec{}, rowErr(file, line, col, "%s", msg)
	}
	if err := j.Validate(); err != nil {
		return sim.JobSpec{}, validationRowErr(file, line, err)
	}
	return j, nil
}

// Limits that keep jobs far from integer overflow in the engine.
const (
	maxGangGPUs = 1 << 24           // replicas x gpus
	maxTimeUS   = int64(1e12) * 1e6 // 10^12 seconds (about 31,700 years)
)

// checkLimits returns the column and message of a value beyond the limits above
// (col is "" when the job is within them).
func checkLimits(j *sim.JobSpec) (col, msg string) {
	switch {
	case int64(j.Replicas)*int64(j.GPUsPerReplica) > maxGangGPUs:
		return "gpus", fmt.Sprintf("gang of %d x %d GPUs is too large (at most %d GPUs)", j.Replicas, j.GPUsPerReplica, maxGangGPUs)
	case int64(j.Submit) > maxTimeUS:
		return "submit_s", "time beyond 10^12 seconds"
	case int64(j.Duration) > maxTimeUS:
		return "duration_s", "time beyond 10^12 seconds"
	case int64(j.Walltime) > maxTimeUS:
		return "walltime_s", "time beyond 10^12 seconds"
	}
	return "", ""
}

// validationRowErr turns a sim.JobSpec.Validate error ("field: msg; ...") into a
// RowError naming the first field.
func validationRowErr(file string, line int, err error) *RowError {
	msg := err.Error()
	col := ""
	if i := strings.Index(msg, ": "); i > 0 && !strings.ContainsAny(msg[:i], " ;") {
		col, msg = msg[:i], msg[i+2:]
	}
	return &RowError{File: file, Line: line, Column: col, Err: errors.New(msg)}
}

// splitModels splits a "|"-separated model list, dropping empty and repeated
// entries. Lists are cached per distinct text in the interner's model cache, so jobs
// read from one file may share GPUModels slices (callers must not modify them).
func splitModels(s string, in interner) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	if v, ok := in.lists[s]; ok {
		return v
	}
	parts := strings.Split(s, "|")
	out := parts[:0]
next:
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			for _, q := range out {
				if q == p {
					continue next
				}
			}
			out = append(out, in.get(p))
		}
	}
	if len(out) == 0 {
		out = nil
	}
	out = slices.Clip(out)
	if len(in.lists) < 1<<12 {
		in.lists[strings.Clone(s)] = out
	}
	return out
}

// dupSet remembers job IDs to reject duplicates. It stores a 96-bit hash of each ID
// (two independent maphash values) and the line it was seen on in an
// open-addressing table: 16 bytes a slot at a load of at most 3/4, so 21-43 bytes
// per job (about 270 MB for 10^7 jobs). The chance of a false duplicate is below
// 1e-15 for 10^7 jobs.
type dupSet struct {
	s1, s2 maphash.Seed
	slots  []dupSlot
	n      int
}

type dupSlot struct {
	h1   uint64 // 0 marks an empty slot
	h2   uint32
	line int32
}

func newDupSet() *dupSet {
	return &dupSet{s1: maphash.MakeSeed(), s2: maphash.MakeSeed(), slots: make([]dupSlot, 1<<12)}
}

// add records id at line and returns the earlier line if id was seen before.
func (d *dupSet) add(id sim.JobID, line int) (prev int, dup bool) {
	h1 := maphash.String(d.s1, string(id)) | 1
	h2 := uint32(maphash.String(d.s2, string(id)))
	if (d.n+1)*4 > len(d.slots)*3 {
		d.grow()
	}
	mask := uint64(len(d.slots) - 1)
	for i := h1 & mask; ; i = (i + 1) & mask {
		s := &d.slots[i]
		if s.h1 == 0 {
			*s = dupSlot{h1: h1, h2: h2, line: int32(min(line, 1<<31-1))}
			d.n++
			return 0, false
		}
		if s.h1 == h1 && s.h2 == h2 {
			return int(s.line), true
		}
	}
}

func (d *dupSet) grow() {
	old := d.slots
	d.slots = make([]dupSlot, 2*len(old))
	mask := uint64(len(d.slots) - 1)
	for _, s := range old {
		if s.h1 == 0 {
			continue
		}
		i := s.h1 & mask
		for d.slots[i].h1 != 0 {
			i = (i + 1) & mask
		}
		d.slots[i] = s
	}
}

// csvFields adapts one CSV record to fieldSource through a column map.
type csvFields struct {
	rec []string
	idx [numAllCols]int
}

func (c *csvFields) raw(col int) string {
	if i := c.idx[col]; i >= 0 && i < len(c.rec) {
		return c.rec[i]
	}
	return ""
}

func (c *csvFields) get(col int) string { return trimFast(c.raw(col)) }

func (c *csvFields) str(col int) (string, bool) {
	s := c.raw(col)
	if trimFast(s) == "" {
		return "", false
	}
	return s, true
}

func (c *csvFields) micros(col int) (int64, bool, error) {
	s := c.get(col)
	if s == "" {
		return 0, false, nil
	}
	if us, ok := parseMicros(s); ok {
		return us, true, nil
	}
	v, err := parseNum(s)
	return int64(sim.Seconds(v)), true, err
}

func (c *csvFields) num(col int) (float64, bool, error) {
	s := c.get(col)
	if s == "" {
		return 0, false, nil
	}
	v, err := parseNum(s)
	return v, true, err
}

func (c *csvFields) integer(col, bits int) (int64, bool, error) {
	s := c.get(col)
	if s == "" {
		return 0, false, nil
	}
	v, err := parseInt(s, bits)
	return v, true, err
}

// mapNativeColumns fills idx (column -> position in header, -1 if absent) and
// rejects unknown and missing required columns.
func mapNativeColumns(file string, header []string, idx []int) error {
	for i := range idx {
		idx[i] = -1
	}
	var unknown []string
	for pos, h := range header {
		h = strings.ToLower(strings.TrimSpace(h))
		found := false
		for c := 0; c < len(idx); c++ {
			if h == colName(c) {
				if idx[c] >= 0 {
					return rowErr(file, 1, h, "duplicate column")
				}
				idx[c] = pos
				found = true
				break
			}
		}
		if !found {
			unknown = append(unknown, strconv.Quote(h))
		}
	}
	if len(unknown) > 0 {
		cols := strings.Join(NativeColumns, ",")
		if len(idx) > numNativeCols {
			cols += "," + strings.Join(SharingColumns, ",") + "," + strings.Join(ServingColumns, ",") + "," + strings.Join(DAGColumns, ",")
		}
		return rowErr(file, 1, "", "unknown column(s) %s (native columns: %s)", strings.Join(unknown, ", "), cols)
	}
	var miss []string
	for c := 0; c < nativeRequired; c++ {
		if idx[c] < 0 {
			miss = append(miss, NativeColumns[c])
		}
	}
	if len(miss) > 0 {
		return rowErr(file, 1, strings.Join(miss, ", "), "missing required column")
	}
	return nil
}

// JobWriter receives jobs one at a time; Close flushes and finishes the output (it
// does not close the underlying io.Writer).
type JobWriter interface {
	Write(j *sim.JobSpec) error
	Close() error
}

// NativeCSVWriter writes jobs as native CSV with every column, in NativeColumns
// order. Seconds are written with the shortest decimal that reads back to the same
// microsecond; string fields are quoted when needed.
type NativeCSVWriter struct {
	w      io.Writer
	buf    []byte
	header bool
}

// NewNativeCSVWriter returns a writer to w. The header is written with the first
// job, or by Close for an empty trace.
func NewNativeCSVWriter(w io.Writer) *NativeCSVWriter {
	return &NativeCSVWriter{w: w, buf: make([]byte, 0, 64<<10)}
}

func (n *NativeCSVWriter) writeHeader() {
	if !n.header {
		n.buf = append(n.buf, strings.Join(NativeColumns, ",")...)
		n.buf = append(n.buf, '\n')
		n.header = true
	}
}

// Write appends one job.
func (n *NativeCSVWriter) Write(j *sim.JobSpec) error {
	n.writeHeader()
	b := n.buf
	b = csvutil.AppendField(b, string(j.ID))
	b = append(b, ',')
	b = appendSeconds(b, int64(j.Submit))
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(j.GPUsPerReplica), 10)
	b = append(b, ',')
	b = appendSeconds(b, int64(j.Duration))
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(j.Replicas), 10)
	b = append(b, ',')
	if j.Walltime > 0 {
		b = appendSeconds(b, int64(j.Walltime))
	}
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(j.GPUMilli), 10)
	b = append(b, ',')
	b = csvutil.AppendField(b, strings.Join(j.GPUModels, "|"))
	b = append(b, ',')
	b = csvutil.AppendField(b, j.Queue)
	b = append(b, ',')
	b = csvutil.AppendField(b, j.User)
	b = append(b, ',')
	b = csvutil.AppendField(b, j.Team)
	b = append(b, ',')
	if j.Class != sim.ClassUnknown {
		b = csvutil.AppendField(b, string(j.Class))
	}
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(j.Priority), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, j.CPUMilli, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, j.MemoryMiB, 10)
	b = append(b, '\n')
	n.buf = b
	if len(b) >= 60<<10 {
		return n.flush()
	}
	return nil
}

func (n *NativeCSVWriter) flush() error {
	if len(n.buf) == 0 {
		return nil
	}
	_, err := n.w.Write(n.buf)
	n.buf = n.buf[:0]
	return err
}

// Close writes the header if no job was written and flushes.
func (n *NativeCSVWriter) Close() error {
	n.writeHeader()
	return n.flush()
}

// appendSeconds writes microseconds us as decimal seconds, exactly.
func appendSeconds(b []byte, us int64) []byte {
	if us < 0 {
		b = append(b, '-')
		us = -us
	}
	b = strconv.AppendInt(b, us/1e6, 10)
	if frac := us % 1e6; frac != 0 {
		var d [7]byte
		d[0] = '.'
		for i := 6; i >= 1; i-- {
			d[i] = byte('0' + frac%10)
			frac /= 10
		}
		k := 7
		for d[k-1] == '0' {
			k--
		}
		b = append(b, d[:k]...)
	}
	return b
}

// WriteNativeCSV writes jobs as a native CSV trace to w.
func WriteNativeCSV(w io.Writer, jobs []sim.JobSpec) error {
	n := NewNativeCSVWriter(w)
	for i := range jobs {
		if err := n.Write(&jobs[i]); err != nil {
			return err
		}
	}
	return n.Close()
}

// CopyJobs streams every job from src to dst and returns how many were copied. It
// does not close either end. Reading runs on its own goroutine, one batch of jobs
// ahead of writing (order is kept; memory is two batches).
func CopyJobs(dst JobWriter, src JobReader) (int, error) {
	const batch = 4096
	type chunk struct {
		jobs []sim.JobSpec
		err  error
	}
	ch := make(chan chunk, 1)
	done := make(chan struct{})
	exited := make(chan struct{})
	defer func() {
		close(done)
		<-exited // src must not be in use once CopyJobs returns
	}()
	free := make(chan []sim.JobSpec, 2)
	go func() {
		defer close(exited)
		defer close(ch)
		for {
			var buf []sim.JobSpec
			select {
			case buf = <-free:
				buf = buf[:0]
			default:
				buf = make([]sim.JobSpec, 0, batch)
			}
			var err error
			for len(buf) < batch {
				var j sim.JobSpec
				j, err = src.Next()
				if err != nil {
					break
				}
				buf = append(buf, j)
			}
			select {
			case ch <- chunk{buf, err}:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	n := 0
	for c := range ch {
		for i := range c.jobs {
			if err := dst.Write(&c.jobs[i]); err != nil {
				return n, fmt.Errorf("write: %w", err)
			}
			n++
		}
		clear(c.jobs)
		select {
		case free <- c.jobs:
		default:
		}
		if c.err == io.EOF {
			return n, nil
		}
		if c.err != nil {
			return n, c.err
		}
	}
	return n, nil
}

// sharingCols reads the optional sharing columns of a native CSV row into j.
func sharingCols(src fieldSource, j *sim.JobSpec, file string, line int, in interner) error {
	if s, ok := src.str(cSharing); ok {
		a, err := sim.ParseJobSharing(strings.TrimSpace(s))
		if err != nil {
			return rowErr(file, line, colName(cSharing), "%v", err)
		}
		j.Sharing = a
	}
	v, ok, err := src.integer(cGPUMemMiB, 64)
	if err != nil {
		return rowErr(file, line, colName(cGPUMemMiB), "%v", err)
	}
	if ok {
		if v < 0 {
			return rowErr(file, line, colName(cGPUMemMiB), "must be >= 0, got %d", v)
		}
		j.GPUMemMiB = v
	}
	if s, ok := src.str(cMIGProfile); ok {
		j.MIGProfile = in.get(strings.TrimSpace(s))
	}
	u, ok, err := src.num(cSMUtil)
	if err != nil {
		return rowErr(file, line, colName(cSMUtil), "%v", err)
	}
	if ok {
		if !(u >= 0 && u <= 1) {
			return rowErr(file, line, colName(cSMUtil), "must be in [0, 1], got %v", u)
		}
		j.SMUtil = u
	}
	if s, ok := src.str(cWorkload); ok {
		j.Workload = in.get(strings.TrimSpace(s))
	}
	return nil
}
