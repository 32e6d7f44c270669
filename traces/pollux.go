package traces

import (
	"fmt"
	"math"

	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/workloads/pollux"
)

// FormatPollux is a Pollux OSDI'21 artifact workload CSV; FormatPolluxElastic
// is the same file read as elastic gangs (docs/elastic.md).
//
// FormatPolluxAdaptive reads it as elastic gangs for a policy that picks each
// job's batch size (the engine's Pollux and Sia, docs/pollux.md): as
// pollux-elastic, but up to max_batch_size / min_local_bsz replicas (ncf:
// num_replicas), the sizes Pollux's max_replicas allows.
const (
	FormatPollux         = "pollux"
	FormatPolluxElastic  = "pollux-elastic"
	FormatPolluxAdaptive = "pollux-adaptive"
)

func init() {
	registerJobs(FormatPollux, "Pollux OSDI'21 artifact workload CSV (name,time,application,num_replicas,batch_size); duration from the artifact's profiles", openPollux)
	registerJobs(FormatPolluxAdaptive, "the pollux format read as elastic gangs for batch-size-adaptive policies (pollux, sia): as pollux-elastic but up to max_batch_size/min_local_bsz replicas (ncf num_replicas) (docs/pollux.md)", func(path string, opts ReadOptions) (JobReader, error) {
		return openPolluxAs(path, FormatPolluxAdaptive, opts)
	})
	registerJobs(FormatPolluxElastic, "the pollux format read as elastic gangs: 1-GPU replicas, num_replicas preferred, 1..batch_size/min_local_bsz (ncf 1), throughput from the artifact's profiles (docs/elastic.md)", openPolluxElastic)
}

// openPolluxElastic reads a Pollux artifact workload as elastic gangs: per job
// as openPollux, but num_replicas replicas of 1 GPU (the preferred size) with
// sim.ElasticSpec{Min: 1, Max: max(num_replicas, batch_size //
// min_local_bsz) (ncf: num_replicas), Step: 1} and the job's
// pollux.ElasticModel as its rate model; the duration is the same
// TunedRunTime.
func openPolluxElastic(path string, opts ReadOptions) (JobReader, error) {
	return openPolluxAs(path, FormatPolluxElastic, opts)
}

// openPollux reads a Pollux artifact workload (workloads/workload-N.csv). The
// file gives no durations: each job's duration is the run time of its TunedJobs
// configuration under the artifact's profile model (workloads/pollux.
// TunedRunTime: num_replicas GPUs packed 4 to a node, total batch batch_size,
// no restarts). Per job: id = name, submit = time, class training, queue =
// application, workload = application, gang of num_replicas GPUs as replicas of
// at most 4 GPUs (gangShape). The elastic, round-based reproduction of the
// artifact is `gpusim pollux` (docs/pollux.md).
func openPollux(path string, opts ReadOptions) (JobReader, error) {
	return openPolluxAs(path, FormatPollux, opts)
}

func openPolluxAs(path, format string, opts ReadOptions) (JobReader, error) {
	if _, err := pollux.Apps(); err != nil {
		return nil, err
	}
	required := []string{"name", "time", "application", "num_replicas", "batch_size"}
	return openCSVImporter(path, format, ',', opts, required, func(in *csvIn, rep *ImportReport) (rowParser, error) {
		if err := unknownCols(in, required); err != nil {
			return nil, err
		}
		apps, _ := pollux.Apps()
		return func(in *csvIn, line int) (sim.JobSpec, error) {
			j := sim.JobSpec{GPUMilli: sim.WholeGPU, Class: sim.ClassTraining}
			name, err := reqStr(in, "name")
			if err != nil {
				return j, err
			}
			j.ID = sim.JobID(name)
			t, err := reqTime(in, "time")
			if err != nil {
				return j, err
			}
			app, err := reqStr(in, "application")
			if err != nil {
				return j, err
			}
			a, ok := apps[app]
			if !ok {
				return j, skipf("application", "unknown application", "%q", app)
			}
			reps, err := reqInt(in, "num_replicas", 32)
			if err != nil {
				return j, err
			}
			if reps < 1 || reps > 64 {
				return j, skipf("num_replicas", "out of range", "%d (want 1..64)", reps)
			}
			batch, err := reqInt(in, "batch_size", 32)
			if err != nil {
				return j, err
			}
			if batch < int64(a.InitBatchSize) || batch > int64(a.MaxBatchSize) {
				return j, skipf("batch_size", "out of range", "%d (want %d..%d for %s)", batch, a.InitBatchSize, a.MaxBatchSize, app)
			}
			pj := pollux.Job{Name: name, Submit: t, App: app, Replicas: int(reps), BatchSize: int(batch)}
			j.Queue = app
			j.Workload = app
			j.Submit = sim.Time(sim.Seconds(t))
			if format == FormatPolluxElastic || format == FormatPolluxAdaptive {
				m, err := pollux.NewElasticModel(pj, 4)
				if err != nil || m.Duration() < 0 {
					return j, skipf("num_replicas", "no profile", "%v", fmt.Sprint(err))
				}
				hi := int32(reps)
				if app != "ncf" {
					top := batch
					if format == FormatPolluxAdaptive {
						top = int64(a.MaxBatchSize)
					}
					hi = max(hi, int32(top)/int32(a.MinLocalBsz))
				}
				j.Replicas, j.GPUsPerReplica = int32(reps), 1
				j.Elastic = &sim.ElasticSpec{Min: 1, Max: hi, Step: 1, Rate: m}
				if format == FormatPolluxAdaptive {
					j.Elastic.Rate = pollux.AdaptiveModel{ElasticModel: m}
				}
				j.Duration = m.Duration()
				return j, nil
			}
			dur, err := pollux.TunedRunTime(pj, 4)
			if err != nil || math.IsNaN(dur) || dur < 0 {
				return j, skipf("num_replicas", "no profile", "%v", fmt.Sprint(err))
			}
			j.Replicas, j.GPUsPerReplica = gangShape(reps, 4)
			j.Duration = sim.Seconds(dur)
			return j, nil
		}, nil
	})
}
