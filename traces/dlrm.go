package traces

import (
	"fmt"
	"math"

	"github.com/gpusim/gpusim/sim"
)

// FormatAlibabaDLRM is Alibaba cluster-trace-gpu-v2025 (DLRM serving instances).
const FormatAlibabaDLRM = "alibaba-dlrm"

// DLRMTraceEnd is the end of the cluster-trace-gpu-v2025 observation window in
// seconds: the largest time in the full trace (deletion time 2,677,541 s).
// Instances alive at the end (empty deletion_time) run until then.
const DLRMTraceEnd = 2677541.0

var dlrmColumns = []string{
	"instance_sn", "role", "app_name", "cpu_request", "cpu_limit", "gpu_request", "gpu_limit",
	"rdma_request", "rdma_limit", "memory_request", "memory_limit", "disk_request", "disk_limit",
	"max_instance_per_node", "creation_time", "scheduled_time", "deletion_time",
}

func init() {
	registerJobs(FormatAlibabaDLRM, "Alibaba cluster-trace-gpu-v2025 DLRM service instances", openDLRM)
}

// openDLRM reads a cluster-trace-gpu-v2025 instance table. Per instance:
//
//	id = instance_sn; user = app_name (the service); queue = role (CN or HN)
//	class serving; replicas 1; gpus = gpu_request (whole GPUs)
//	cpu_milli = cpu_request * 1000; memory_mib = memory_request (GiB) * 1024
//	submit = creation_time, or 0 when empty (existed before the trace)
//	start  = scheduled_time, else the submit time
//	duration = deletion_time - start, or DLRMTraceEnd - start when deletion_time
//	           is empty (still alive at the end)
//
// max_instance_per_node (anti-affinity per service) cannot be expressed in
// sim.JobSpec; it is read, validated and counted in a report note but not enforced.
// rdma and disk requests are ignored.
func openDLRM(path string, opts ReadOptions) (JobReader, error) {
	required := []string{"instance_sn", "role", "app_name", "cpu_request", "gpu_request", "memory_request", "creation_time", "deletion_time"}
	return openCSVImporter(path, FormatAlibabaDLRM, ',', opts, required, func(in *csvIn, rep *ImportReport) (rowParser, error) {
		if err := unknownCols(in, dlrmColumns); err != nil {
			return nil, err
		}
		intern := newInterner()
		limited := 0
		noteIdx := len(rep.Notes)
		rep.Notes = append(rep.Notes, "")
		return func(in *csvIn, line int) (sim.JobSpec, error) {
			j := sim.JobSpec{Replicas: 1, GPUMilli: sim.WholeGPU, Class: sim.ClassServing}
			id, err := reqStr(in, "instance_sn")
			if err != nil {
				return j, err
			}
			j.ID = sim.JobID(id)
			role, err := reqStr(in, "role")
			if err != nil {
				return j, err
			}
			if role != "CN" && role != "HN" {
				return j, skipf("role", "unknown role", "%q (want CN or HN)", role)
			}
			j.Queue = intern.get(role)
			app, err := reqStr(in, "app_name")
			if err != nil {
				return j, err
			}
			j.User = intern.get(app)
			cpu, err := reqNum(in, "cpu_request")
			if err != nil {
				return j, err
			}
			mem, err := reqNum(in, "memory_request")
			if err != nil {
				return j, err
			}
			if cpu < 0 || cpu > 1e9 {
				return j, skipf("cpu_request", "out of range", "%v", cpu)
			}
			if mem < 0 || mem > 1e9 {
				return j, skipf("memory_request", "out of range", "%v", mem)
			}
			j.CPUMilli = int64(math.Round(cpu * 1000))
			j.MemoryMiB = int64(math.Round(mem * 1024))
			g, err := reqInt(in, "gpu_request", 32)
			if err != nil {
				return j, err
			}
			j.GPUsPerReplica = int32(g)
			if in.col("max_instance_per_node") >= 0 {
				s := in.get(in.col("max_instance_per_node"))
				if s != "" {
					v, err := parseInt(s, 32)
					if err != nil || v < -1 || v == 0 {
						return j, skipf("max_instance_per_node", "bad value", "%q (want -1 or a positive count)", s)
					}
					if v > 0 {
						limited++
						rep.Notes[noteIdx] = fmt.Sprintf("max_instance_per_node (anti-affinity) is not enforced: %d instances had a limit", limited)
					}
				}
			}
			c, hasC, err := optNum(in, "creation_time")
			if err != nil {
				return j, err
			}
			if !hasC {
				c = 0
			}
			start := c
			if s, ok, err := optNum(in, "scheduled_time"); err != nil {
				return j, err
			} else if ok {
				start = s
			}
			end, hasD, err := optNum(in, "deletion_time")
			if err != nil {
				return j, err
			}
			if !hasD {
				end = DLRMTraceEnd
			}
			switch {
			case c < 0:
				return j, skipf("creation_time", "negative time", "%v", c)
			case start < c:
				return j, skipf("scheduled_time", "scheduled before creation", "%v < %v", start, c)
			case end < start:
				return j, skipf("deletion_time", "deleted before start", "%v < %v", end, start)
			}
			j.Submit = sim.Time(sim.Seconds(c))
			j.Duration = sim.Seconds(end) - sim.Seconds(start)
			return j, nil
		}, nil
	})
}
