package traces

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gpusim/gpusim/calibrate"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/workloads"
)

// FormatGavel is Gavel's job trace (scheduler/traces/*.trace, parsed by Gavel's
// scheduler/utils.py parse_trace): tab-separated, no header, ten fields.
const FormatGavel = "gavel"

func init() {
	registerJobs(FormatGavel, "Gavel job trace (.trace, 10 tab-separated fields); needs a throughput table (scenario throughputs:)", openGavelTrace)
}

// openGavelTrace reads a Gavel trace: job_type, command, working_directory,
// num_steps_arg, needs_data_dir, total_steps, scale_factor, priority_weight,
// SLO, arrival_time. Jobs: id "<file base>-<line-1>" (Gavel's job id is the
// 0-based line), submit = arrival_time, a gang of scale_factor 1-GPU replicas
// (Gavel registers every GPU as its own worker and gives a job scale_factor
// workers of one type), workload = calibrate.GavelWorkloadName(job_type), and a
// duration of total_steps / T, where T is the table's throughput of (job_type,
// scale_factor) on the reference GPU type: the job's length in reference-GPU
// time, which ThroughputSpeed turns into the right time on every type.
// command, working_directory, num_steps_arg, needs_data_dir and SLO only matter
// on a real cluster and are ignored; priority_weight must be 1 (weights are
// not modelled yet).
func openGavelTrace(path string, opts ReadOptions) (JobReader, error) {
	if opts.Throughputs == nil {
		return nil, fmt.Errorf("%s: the gavel format gives work in steps and needs a throughput table to turn it into time: add throughputs: to the scenario", path)
	}
	r, err := openHeaderlessTSV(path, FormatGavel, opts, "job_type", "command", "working_directory", "num_steps_arg", "needs_data_dir", "total_steps", "scale_factor", "priority_weight", "SLO", "arrival_time")
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	tt, ref := opts.Throughputs, opts.ThroughputRef
	r.parse = func(in *csvIn, line int) (sim.JobSpec, error) {
		typ := strings.TrimSpace(in.get(0))
		steps, err := reqInt(in, "total_steps", 63)
		if err != nil {
			return sim.JobSpec{}, err
		}
		sf, err := reqInt(in, "scale_factor", 31)
		if err != nil {
			return sim.JobSpec{}, err
		}
		if sf < 1 {
			return sim.JobSpec{}, &RowError{Column: "scale_factor", Err: fmt.Errorf("must be >= 1, got %d", sf)}
		}
		if w, err := strconv.ParseFloat(strings.TrimSpace(in.get(7)), 64); err != nil || w != 1 {
			return sim.JobSpec{}, &RowError{Column: "priority_weight", Err: fmt.Errorf("only 1 is supported (got %q)", in.get(7))}
		}
		arr, err := reqTime(in, "arrival_time")
		if err != nil {
			return sim.JobSpec{}, err
		}
		wl := calibrate.GavelWorkloadName(typ)
		t, ok := tt.Throughput(wl, int32(sf), ref)
		if !ok {
			return sim.JobSpec{}, &RowError{Column: "job_type", Err: fmt.Errorf("no throughput for (%q, %d) on the reference GPU type %s in the throughput table", typ, sf, tt.GPUTypes()[ref])}
		}
		d := float64(steps) / t
		if steps <= 0 || d > 1e12 || math.IsNaN(d) {
			return sim.JobSpec{}, &RowError{Column: "total_steps", Err: fmt.Errorf("must be > 0 and below 1e12 s of work, got %d", steps)}
		}
		return sim.JobSpec{
			ID:             sim.JobID(base + "-" + strconv.Itoa(line-1)),
			Submit:         sim.Time(sim.Seconds(arr)),
			Class:          sim.ClassTraining,
			Replicas:       int32(sf),
			GPUsPerReplica: 1,
			GPUMilli:       sim.WholeGPU,
			Duration:       sim.Seconds(d),
			Workload:       wl,
		}, nil
	}
	return r, nil
}

// GavelSteps returns the steps of job j on a throughput table: its duration
// (reference-GPU time) times the reference throughput. It is how round-based
// policies recover a Gavel job's work.
func GavelSteps(tt *workloads.ThroughputTable, ref int, j *sim.JobSpec) (float64, bool) {
	t, ok := tt.Throughput(j.Workload, j.TotalGPUs(), ref)
	if !ok {
		return 0, false
	}
	return j.Duration.Seconds() * t, true
}
