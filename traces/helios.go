package traces

import (
	"github.com/gpusim/gpusim/sim"
)

// FormatHelios is SenseTime Helios (HeliosData) cluster_log.csv.
const FormatHelios = "helios"

func init() {
	registerJobs(FormatHelios, "SenseTime Helios cluster_log.csv (job_id,user,vc,gpu_num,cpu_num,node_num,state,submit/start/end_time,duration,queue)", openHelios)
}

var heliosColumns = []string{"job_id", "user", "vc", "jobname", "gpu_num", "cpu_num", "node_num", "state", "submit_time", "start_time", "end_time", "duration", "queue"}

// openHelios reads a Helios cluster_log.csv. Per job:
//
//	id = job_id; user; queue = vc; class unknown
//	submit = submit_time - (earliest submit_time in the file)   [two passes]
//	duration = duration (seconds) when given, else end_time - start_time
//	gang: node_num replicas of gpu_num/node_num GPUs when node_num divides gpu_num,
//	      else gpu_num split into replicas of at most 8 GPUs (see philly-gavel)
//	cpu_milli = cpu_num * 1000 / replicas (rounded up)
//
// Jobs that never started (empty start_time and no duration) are skipped.
func openHelios(path string, opts ReadOptions) (JobReader, error) {
	origin, _, err := minDateCSV(path, ',', "submit_time")
	if err != nil {
		return nil, err
	}
	required := []string{"job_id", "gpu_num", "submit_time"}
	return openCSVImporter(path, FormatHelios, ',', opts, required, func(in *csvIn, rep *ImportReport) (rowParser, error) {
		if err := unknownCols(in, heliosColumns); err != nil {
			return nil, err
		}
		if in.col("duration") < 0 && (in.col("start_time") < 0 || in.col("end_time") < 0) {
			return nil, rowErr(in.file, 1, "duration", "missing required column (or start_time and end_time)")
		}
		intern := newInterner()
		return func(in *csvIn, line int) (sim.JobSpec, error) {
			j := sim.JobSpec{GPUMilli: sim.WholeGPU, Class: sim.ClassUnknown}
			id, err := reqStr(in, "job_id")
			if err != nil {
				return j, err
			}
			j.ID = sim.JobID(id)
			j.User = intern.get(in.get(in.col("user")))
			j.Queue = intern.get(in.get(in.col("vc")))
			sub, ok, err := dateCol(in, "submit_time")
			if err != nil {
				return j, err
			}
			if !ok {
				return j, &skipError{Column: "submit_time", Reason: "missing value"}
			}
			start, hasStart, err := dateCol(in, "start_time")
			if err != nil {
				return j, err
			}
			end, hasEnd, err := dateCol(in, "end_time")
			if err != nil {
				return j, err
			}
			dur, hasDur, err := optNum(in, "duration")
			if err != nil {
				return j, err
			}
			switch {
			case hasDur:
			case hasStart && hasEnd:
				dur = end - start
			case !hasStart:
				return j, &skipError{Column: "start_time", Reason: "never started"}
			default:
				return j, &skipError{Column: "end_time", Reason: "missing value"}
			}
			if dur < 0 {
				return j, skipf("duration", "negative time", "%v", dur)
			}
			g, err := reqInt(in, "gpu_num", 32)
			if err != nil {
				return j, err
			}
			nodes, err := optInt(in, "node_num", 1, 32)
			if err != nil {
				return j, err
			}
			cpus, err := optInt(in, "cpu_num", 0, 32)
			if err != nil {
				return j, err
			}
			j.Replicas, j.GPUsPerReplica = splitGang(g, nodes)
			j.CPUMilli = ceilDiv(cpus*1000, int64(j.Replicas))
			j.Submit = sim.Time(sim.Seconds(sub - origin))
			j.Duration = sim.Seconds(dur)
			return j, nil
		}, nil
	})
}

// splitGang turns a total GPU count and a node count into replicas x GPUs: node
// replicas when nodes divides gpus, else gangShape(gpus, 8).
func splitGang(gpus, nodes int64) (replicas, perReplica int32) {
	if gpus == 0 {
		return 1, 0
	}
	if nodes >= 1 && gpus%nodes == 0 && gpus/nodes <= 1<<16 {
		return int32(nodes), int32(gpus / nodes)
	}
	return gangShape(gpus, phillyNodeGPUs)
}

func ceilDiv(a, b int64) int64 {
	if b <= 0 {
		return a
	}
	return (a + b - 1) / b
}
