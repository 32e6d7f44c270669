package traces

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gpusim/gpusim/sim"
)

// FormatSlurmSacct is `sacct --parsable2` output.
const FormatSlurmSacct = "slurm-sacct"

func init() {
	registerJobs(FormatSlurmSacct, "Slurm `sacct --parsable2` output ('|'-separated, header row)", openSlurm)
}

// openSlurm reads `sacct -a -X --parsable2 --format=...` output: '|'-separated with
// a header row of sacct field names (any case, any order, unknown fields ignored).
// Used fields:
//
//	JobID (required; steps such as 123.batch are skipped), Submit (required),
//	Start, End, Elapsed, Timelimit, State, User, Account, Partition, Priority,
//	NNodes, NCPUS, AllocTRES / ReqTRES (cpu=, mem=, gres/gpu[:model]=),
//	AllocGRES / ReqGRES (gpu[:model]:N, older Slurm), ReqMem.
//
// Mapping: id = JobID; queue = Partition; user = User; team = Account;
// priority = Priority; submit = Submit - earliest Submit in the file; duration =
// Elapsed, else End - Start; walltime = Timelimit (UNLIMITED = none); GPUs from
// AllocTRES when set, else ReqTRES, else the GRES columns, split into NNodes
// replicas when NNodes divides the count; GPU model from a typed gres
// (gres/gpu:a100=4 -> a100); CPUs = NCPUS (or TRES cpu) and memory = TRES mem (or
// ReqMem) divided by replicas. Jobs that never started (Start Unknown/None) are
// skipped.
func openSlurm(path string, opts ReadOptions) (JobReader, error) {
	origin, _, err := minDateCSV(path, '|', "submit")
	if err != nil {
		return nil, err
	}
	return openCSVImporter(path, FormatSlurmSacct, '|', opts, []string{"jobid", "submit"}, func(in *csvIn, rep *ImportReport) (rowParser, error) {
		if in.col("elapsed") < 0 && (in.col("start") < 0 || in.col("end") < 0) {
			return nil, rowErr(in.file, 1, "elapsed", "missing required column (or start and end)")
		}
		in.r.lazy = true
		intern := newInterner()
		return func(in *csvIn, line int) (sim.JobSpec, error) {
			j := sim.JobSpec{GPUMilli: sim.WholeGPU, Class: sim.ClassUnknown}
			id, err := reqStr(in, "jobid")
			if err != nil {
				return j, err
			}
			if strings.Contains(id, ".") {
				return j, &skipError{Column: "jobid", Reason: "job step"}
			}
			j.ID = sim.JobID(id)
			j.User = intern.get(in.get(in.col("user")))
			j.Team = intern.get(in.get(in.col("account")))
			j.Queue = intern.get(in.get(in.col("partition")))
			if s := in.get(in.col("priority")); s != "" {
				p, err := parseInt(s, 64)
				if err != nil {
					return j, skipf("priority", "bad integer", "%q", s)
				}
				j.Priority = int32(max(min(p, math.MaxInt32), math.MinInt32))
			}
			sub, ok, err := dateCol(in, "submit")
			if err != nil {
				return j, err
			}
			if !ok {
				return j, &skipError{Column: "submit", Reason: "missing value"}
			}
			start, hasStart, err := dateCol(in, "start")
			if err != nil {
				return j, err
			}
			if !hasStart && in.col("start") >= 0 {
				return j, &skipError{Column: "start", Reason: "never started"}
			}
			var dur float64
			if s := in.get(in.col("elapsed")); s != "" {
				if dur, err = parseSlurmDuration(s); err != nil {
					return j, skipf("elapsed", "bad duration", "%v", err)
				}
			} else {
				end, hasEnd, err := dateCol(in, "end")
				if err != nil {
					return j, err
				}
				if !hasEnd || !hasStart {
					return j, &skipError{Column: "end", Reason: "no end time"}
				}
				dur = end - start
			}
			if dur < 0 {
				return j, skipf("elapsed", "negative time", "%v", dur)
			}
			if s := in.get(in.col("timelimit")); s != "" && !slurmUnlimited(s) {
				w, err := parseSlurmDuration(s)
				if err != nil {
					return j, skipf("timelimit", "bad duration", "%v", err)
				}
				j.Walltime = sim.Seconds(w)
			}
			nodes, err := optInt(in, "nnodes", 1, 32)
			if err != nil {
				return j, err
			}
			res, err := slurmResources(in)
			if err != nil {
				return j, err
			}
			cpus := res.cpus
			if s := in.get(in.col("ncpus")); s != "" {
				v, err := parseInt(s, 32)
				if err != nil || v < 0 {
					return j, skipf("ncpus", "bad integer", "%q", s)
				}
				cpus = v
			}
			j.Replicas, j.GPUsPerReplica = splitGang(res.gpus, nodes)
			if res.gpus == 0 && nodes > 1 {
				j.Replicas = int32(nodes)
			}
			if res.model != "" && res.gpus > 0 {
				j.GPUModels = []string{intern.get(res.model)}
			}
			j.CPUMilli = ceilDiv(cpus*1000, int64(j.Replicas))
			mem := res.memMiB
			if mem == 0 {
				if mem, err = slurmReqMem(in.get(in.col("reqmem")), cpus, nodes); err != nil {
					return j, skipf("reqmem", "bad memory", "%v", err)
				}
			}
			j.MemoryMiB = ceilDiv(mem, int64(j.Replicas))
			j.Submit = sim.Time(sim.Seconds(sub - origin))
			j.Duration = sim.Seconds(dur)
			return j, nil
		}, nil
	})
}

func slurmUnlimited(s string) bool {
	switch strings.ToLower(s) {
	case "unlimited", "partition_limit", "infinite", "none", "invalid":
		return true
	}
	return false
}

// parseSlurmDuration parses Slurm's time formats: "minutes", "minutes:seconds",
// "hours:minutes:seconds", "days-hours", "days-hours:minutes",
// "days-hours:minutes:seconds", with optional fractional seconds ("00:00:01.5").
func parseSlurmDuration(s string) (float64, error) {
	bad := fmt.Errorf("bad duration %q", s)
	days := 0.0
	rest := s
	hasDays := false
	if i := strings.IndexByte(s, '-'); i >= 0 {
		d, err := strconv.ParseUint(s[:i], 10, 32)
		if err != nil {
			return 0, bad
		}
		days, rest, hasDays = float64(d), s[i+1:], true
	}
	parts := strings.Split(rest, ":")
	if len(parts) > 3 || rest == "" {
		return 0, bad
	}
	vals := make([]float64, len(parts))
	for i, p := range parts {
		var v float64
		var err error
		if i == len(parts)-1 && strings.Contains(p, ".") {
			v, err = strconv.ParseFloat(p, 64)
		} else {
			var u uint64
			u, err = strconv.ParseUint(p, 10, 32)
			v = float64(u)
		}
		if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, bad
		}
		vals[i] = v
	}
	var sec float64
	switch {
	case hasDays && len(vals) == 1: // days-hours
		sec = vals[0] * 3600
	case hasDays && len(vals) == 2: // days-hours:minutes
		sec = vals[0]*3600 + vals[1]*60
	case len(vals) == 3:
		sec = vals[0]*3600 + vals[1]*60 + vals[2]
	case len(vals) == 2: // minutes:seconds
		sec = vals[0]*60 + vals[1]
	default: // minutes
		sec = vals[0] * 60
	}
	return days*86400 + sec, nil
}

type slurmRes struct {
	gpus, cpus, memMiB int64
	model              string
}

// slurmResources reads GPUs/CPUs/memory from AllocTRES, else ReqTRES, else the
// GRES columns.
func slurmResources(in *csvIn) (slurmRes, error) {
	for _, col := range []string{"alloctres", "reqtres"} {
		s := in.get(in.col(col))
		if s == "" {
			continue
		}
		r, err := parseTRES(s)
		if err != nil {
			return r, skipf(col, "bad TRES", "%v", err)
		}
		return r, nil
	}
	for _, col := range []string{"allocgres", "reqgres"} {
		s := in.get(in.col(col))
		if s == "" {
			continue
		}
		var r slurmRes
		for _, item := range strings.Split(s, ",") {
			f := strings.Split(strings.TrimSpace(item), ":")
			if len(f) < 2 || f[0] != "gpu" {
				continue
			}
			n, err := strconv.ParseInt(strings.SplitN(f[len(f)-1], "(", 2)[0], 10, 32)
			if err != nil || n < 0 {
				return r, skipf(col, "bad GRES", "%q", item)
			}
			r.gpus += n
			if len(f) == 3 {
				r.model = f[1]
			}
		}
		return r, nil
	}
	return slurmRes{}, nil
}

// parseTRES parses "cpu=8,mem=64G,node=1,billing=8,gres/gpu=4,gres/gpu:a100=4".
func parseTRES(s string) (slurmRes, error) {
	var r slurmRes
	var typed int64
	generic := int64(-1)
	for _, item := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			continue
		}
		switch {
		case k == "cpu":
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 0 {
				return r, fmt.Errorf("bad cpu %q", v)
			}
			r.cpus = n
		case k == "mem":
			m, err := parseMemMiB(v)
			if err != nil {
				return r, err
			}
			r.memMiB = m
		case k == "gres/gpu":
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 0 {
				return r, fmt.Errorf("bad gres/gpu %q", v)
			}
			generic = n
		case strings.HasPrefix(k, "gres/gpu:"):
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 0 {
				return r, fmt.Errorf("bad %s %q", k, v)
			}
			typed += n
			r.model = strings.TrimPrefix(k, "gres/gpu:")
		}
	}
	r.gpus = typed
	if generic >= 0 {
		r.gpus = generic
	}
	return r, nil
}

// parseMemMiB parses a Slurm memory amount ("64G", "4000M", "512K", "1.5T"; no
// suffix = MiB) into MiB, rounding up.
func parseMemMiB(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := 1.0
	if s != "" {
		switch s[len(s)-1] {
		case 'K', 'k':
			mult = 1.0 / 1024
		case 'M', 'm':
			mult = 1
		case 'G', 'g':
			mult = 1024
		case 'T', 't':
			mult = 1024 * 1024
		}
		if s[len(s)-1] > '9' {
			s = s[:len(s)-1]
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || v*mult > 1e15 || math.IsNaN(v) {
		return 0, fmt.Errorf("bad memory %q", s)
	}
	return int64(math.Ceil(v * mult)), nil
}

// slurmReqMem parses the old ReqMem form: "4000Mn" (per node) or "4000Mc" (per
// CPU); newer Slurm prints a plain amount (per node). Returns the job total.
func slurmReqMem(s string, cpus, nodes int64) (int64, error) {
	if s == "" || s == "0" {
		return 0, nil
	}
	per := byte('n')
	if c := s[len(s)-1]; c == 'n' || c == 'c' {
		per, s = c, s[:len(s)-1]
	}
	m, err := parseMemMiB(s)
	if err != nil {
		return 0, err
	}
	if per == 'c' {
		return m * max(cpus, 1), nil
	}
	return m * max(nodes, 1), nil
}
