package traces

import (
	"github.com/gpusim/gpusim/sim"
)

// FormatTiresias is the job trace of Tiresias's simulator (SymbioticLab/Tiresias
// simulator/*_job.csv, e.g. 60_job.csv).
const FormatTiresias = "tiresias"

func init() {
	registerJobs(FormatTiresias, "Tiresias simulator job trace (job_id,num_gpu,submit_time,iterations,model_name,duration,interval)", openTiresias)
}

var tiresiasColumns = []string{"job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration", "interval", "model_scale"}

// openTiresias reads a Tiresias simulator trace (run_sim.py parse_job_file,
// jobs.py add_job). Per job:
//
//	id = job_id; class training
//	submit = submit_time (seconds, as given: the simulator does not shift it)
//	duration = duration (seconds; the simulator truncates it to whole seconds,
//	           int(float(duration)), and so does this reader)
//	gang: num_gpu replicas of 1 GPU (the simulator's dlas schedulers count GPUs
//	      and never place them, so a job runs when its GPU count fits the free
//	      GPUs anywhere: one-GPU replicas reproduce that)
//
// iterations, model_name, model_scale and interval do not affect scheduling
// and are ignored.
func openTiresias(path string, opts ReadOptions) (JobReader, error) {
	required := []string{"job_id", "num_gpu", "submit_time", "duration"}
	return openCSVImporter(path, FormatTiresias, ',', opts, required, func(in *csvIn, rep *ImportReport) (rowParser, error) {
		if err := unknownCols(in, tiresiasColumns); err != nil {
			return nil, err
		}
		return func(in *csvIn, line int) (sim.JobSpec, error) {
			j := sim.JobSpec{GPUMilli: sim.WholeGPU, Class: sim.ClassTraining, GPUsPerReplica: 1}
			id, err := reqStr(in, "job_id")
			if err != nil {
				return j, err
			}
			j.ID = sim.JobID(id)
			sub, err := reqTime(in, "submit_time")
			if err != nil {
				return j, err
			}
			dur, err := reqTime(in, "duration")
			if err != nil {
				return j, err
			}
			g, err := reqInt(in, "num_gpu", 24)
			if err != nil {
				return j, err
			}
			if g == 0 {
				return j, skipf("num_gpu", "no GPUs", "0")
			}
			j.Replicas = int32(g)
			j.Submit = sim.Time(sim.Seconds(sub))
			j.Duration = sim.Seconds(float64(int64(dur)))
			return j, nil
		}, nil
	})
}
