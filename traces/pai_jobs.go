package traces

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpusim/gpusim/sim"
)

// FormatPAIJobs is Alibaba cluster-trace-gpu-v2020 (PAI) task table.
const FormatPAIJobs = "pai-jobs"

var paiTaskCols = []string{"job_name", "task_name", "inst_num", "status", "start_time", "end_time", "plan_cpu", "plan_mem", "plan_gpu", "gpu_type"}
var paiJobCols = []string{"job_name", "inst_id", "user", "status", "start_time", "end_time"}

func init() {
	registerJobs(FormatPAIJobs, "Alibaba cluster-trace-gpu-v2020 pai_task_table.csv (+ pai_job_table.csv beside it for users and submit times)", openPAIJobs)
}

type paiJobInfo struct {
	user   string
	submit float64
}

// openPAIJobs reads pai_task_table.csv (job_name,task_name,inst_num,status,
// start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type; the published file has
// no header row, a first row starting with "job_name" is taken as one). Each task
// becomes one job (a job's ps and worker tasks are separate gangs):
//
//	id = job_name/task_name; replicas = inst_num
//	gpus per replica: plan_gpu is a percentage of one GPU per instance. Below 100
//	  it is one shared GPU (gpu_milli = plan_gpu*10) for a single instance and one
//	  whole GPU for several instances (sharing gangs are not modelled; counted in a
//	  note); from 100 up it is ceil(plan_gpu/100) whole GPUs.
//	gpu_model = gpu_type (the type the task ran on, so replays on pai-machines keep
//	  the placement's model); cpu_milli = plan_cpu*10; memory_mib = plan_mem*1024
//	submit = the job's start_time from pai_job_table.csv when that file sits in the
//	  same folder (user comes from it too), else the task's start_time
//	duration = end_time - start_time of the task
//
// Times stay in the trace's own (shifted) seconds. Tasks without a start or end
// time (Waiting, Running) are skipped with a reason. The job table join holds one
// map entry per job in memory.
func openPAIJobs(path string, opts ReadOptions) (JobReader, error) {
	jobs, err := loadPAIJobTable(filepath.Join(filepath.Dir(path), "pai_job_table.csv"))
	if err != nil {
		return nil, err
	}
	var in *csvIn
	if first, ferr := firstField(path); ferr == nil && strings.EqualFold(first, "job_name") {
		in, err = openCSV(path, ',')
	} else {
		in, err = openHeaderless(path, ',', paiTaskCols)
	}
	if err != nil {
		return nil, err
	}
	in.lenient = true
	if err := in.requireCols(paiTaskCols...); err != nil {
		in.close()
		return nil, err
	}
	r := &csvJobReader{in: in, rep: newReport(path, FormatPAIJobs), opts: opts}
	if !opts.AllowDuplicateIDs {
		r.dups = newDupSet()
	}
	if jobs != nil {
		r.rep.Notes = append(r.rep.Notes, fmt.Sprintf("joined %d jobs from pai_job_table.csv (user, submit time)", len(jobs)))
	} else {
		r.rep.Notes = append(r.rep.Notes, "no pai_job_table.csv beside the task table: submit = task start, no users")
	}
	rounded := 0
	noteIdx := len(r.rep.Notes)
	r.rep.Notes = append(r.rep.Notes, "")
	intern := newInterner()
	r.parse = func(in *csvIn, line int) (sim.JobSpec, error) {
		j := sim.JobSpec{GPUMilli: sim.WholeGPU, Class: sim.ClassUnknown}
		jn, err := reqStr(in, "job_name")
		if err != nil {
			return j, err
		}
		tn, err := reqStr(in, "task_name")
		if err != nil {
			return j, err
		}
		j.ID = sim.JobID(jn + "/" + tn)
		reps, err := reqInt(in, "inst_num", 32)
		if err != nil {
			return j, err
		}
		if reps < 1 {
			return j, skipf("inst_num", "no instances", "%d", reps)
		}
		j.Replicas = int32(reps)
		start, ok, err := optNum(in, "start_time")
		if err != nil {
			return j, err
		}
		if !ok {
			return j, &skipError{Column: "start_time", Reason: "never started"}
		}
		end, ok, err := optNum(in, "end_time")
		if err != nil {
			return j, err
		}
		if !ok {
			return j, &skipError{Column: "end_time", Reason: "no end time"}
		}
		if start < 0 {
			return j, skipf("start_time", "negative time", "%v", start)
		}
		if end < start {
			return j, skipf("end_time", "ends before start", "%v < %v", end, start)
		}
		submit := start
		if info, ok := jobs[jn]; ok {
			j.User = intern.get(info.user)
			if info.submit >= 0 && info.submit <= start {
				submit = info.submit
			}
		}
		j.Submit = sim.Time(sim.Seconds(submit))
		j.Duration = sim.Seconds(end) - sim.Seconds(start)
		pct := func(col string) (float64, error) {
			v, ok, err := optNum(in, col)
			if err != nil || !ok {
				return 0, err
			}
			if v < 0 || v > 1e9 {
				return 0, skipf(col, "out of range", "%v", v)
			}
			return v, nil
		}
		cpu, err := pct("plan_cpu")
		if err != nil {
			return j, err
		}
		mem, err := pct("plan_mem")
		if err != nil {
			return j, err
		}
		gpu, err := pct("plan_gpu")
		if err != nil {
			return j, err
		}
		j.CPUMilli = int64(math.Round(cpu * 10))
		j.MemoryMiB = int64(math.Round(mem * 1024))
		switch {
		case gpu <= 0:
		case gpu < 100 && reps == 1:
			j.GPUsPerReplica, j.GPUMilli = 1, sim.MilliGPU(max(1, math.Round(gpu*10)))
		case gpu < 100:
			j.GPUsPerReplica = 1
			rounded++
		default:
			j.GPUsPerReplica = int32(math.Ceil(gpu/100 - 1e-9))
			if float64(j.GPUsPerReplica)*100 != gpu {
				rounded++
			}
		}
		if rounded > 0 {
			r.rep.Notes[noteIdx] = fmt.Sprintf("%d tasks had a GPU share that was rounded up to whole GPUs", rounded)
		}
		if t := in.get(in.col("gpu_type")); t != "" && j.GPUsPerReplica > 0 {
			j.GPUModels = []string{intern.get(t)}
		}
		return j, nil
	}
	return r, nil
}

// loadPAIJobTable reads job_name -> (user, start_time) from pai_job_table.csv; a
// missing file gives nil.
func loadPAIJobTable(path string) (map[string]paiJobInfo, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, nil
	}
	var in *csvIn
	var err error
	if first, ferr := firstField(path); ferr == nil && strings.EqualFold(first, "job_name") {
		in, err = openCSV(path, ',')
	} else {
		in, err = openHeaderless(path, ',', paiJobCols)
	}
	if err != nil {
		return nil, err
	}
	defer in.close()
	if err := in.requireCols("job_name", "user", "start_time"); err != nil {
		return nil, err
	}
	in.lenient = true
	out := map[string]paiJobInfo{}
	intern := newInterner()
	for {
		err := in.next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			if _, ok := err.(*skipError); ok {
				continue
			}
			return nil, err
		}
		name := in.get(in.col("job_name"))
		info := paiJobInfo{user: intern.get(in.get(in.col("user"))), submit: -1}
		if v, err := parseNum(in.get(in.col("start_time"))); err == nil {
			info.submit = v
		}
		if name != "" {
			out[strings.Clone(name)] = info
		}
	}
}
