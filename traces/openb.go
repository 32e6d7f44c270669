package traces

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gpusim/gpusim/sim"
)

// Format names of the Alibaba cluster-trace-gpu-v2023 ("openb") importers.
const (
	FormatOpenBPods  = "openb-pods"
	FormatOpenBNodes = "openb-nodes"
)

// openbModels are the GPU models of the openb cluster (G1-G3 are undisclosed codes).
var openbModels = map[string]bool{"G1": true, "G2": true, "G3": true, "T4": true, "P100": true, "V100M16": true, "V100M32": true, "A10": true}

// gpuMemMiB is the memory of the GPU models whose size is public.
var gpuMemMiB = map[string]int64{
	"T4": 16384, "P100": 16384, "V100M16": 16384, "V100M32": 32768, "A10": 24576,
	"V100": 16384, "A100": 40960, "A100-80G": 81920, "H100": 81920, "H800": 81920, "H20": 98304,
	"L20": 49152, "A100-SXM4-80GB": 81920, "A800-SXM4-80GB": 81920, "A800": 81920, "P4": 8192, "K80": 12288, "M40": 12288, "P40": 24576,
}

// openbClass maps the openb qos column to a job class: LS (latency-sensitive) pods
// are online services, BE (best-effort) pods are batch training; the Kubernetes QoS
// names Burstable and Guaranteed carry no workload meaning and map to unknown.
var openbClass = map[string]sim.JobClass{
	"LS": sim.ClassServing, "BE": sim.ClassTraining, "Burstable": sim.ClassUnknown, "Guaranteed": sim.ClassUnknown,
}

func init() {
	registerJobs(FormatOpenBPods, "Alibaba cluster-trace-gpu-v2023 (openb) pod list, 11- or 5-column", openOpenBPods)
	registerNodes(FormatOpenBNodes, "Alibaba cluster-trace-gpu-v2023 (openb) node list", readOpenBNodes)
}

// openOpenBPods reads an openb pod list. Mapping (per pod):
//
//	id = name; queue = qos; class from qos (openbClass); replicas = 1
//	gpus = num_gpu; gpu_milli = gpu_milli (per GPU; 0 with num_gpu 0)
//	gpu_model = gpu_spec split on "|"; cpu_milli, memory_mib as is
//	submit = creation_time
//	duration = deletion_time - scheduled_time, or deletion_time - creation_time
//	           when the pod was never scheduled (Pending: its whole lifetime)
//
// The 5-column multigpu variant has no times: every pod is submitted at 0 with
// duration 0 (a note says so), which suits fill experiments only.
func openOpenBPods(path string, opts ReadOptions) (JobReader, error) {
	required := []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"}
	return openCSVImporter(path, FormatOpenBPods, ',', opts, required, func(in *csvIn, rep *ImportReport) (rowParser, error) {
		timed := in.col("creation_time") >= 0
		if timed {
			if err := in.requireCols("deletion_time"); err != nil {
				return nil, err
			}
		} else {
			rep.Notes = append(rep.Notes, "no creation_time column: every pod is submitted at 0 with duration 0 (fill experiments only)")
		}
		known := append([]string{"gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time"}, required...)
		if err := unknownCols(in, known); err != nil {
			return nil, err
		}
		intern := newInterner()
		return func(in *csvIn, line int) (sim.JobSpec, error) {
			var j sim.JobSpec
			id, err := reqStr(in, "name")
			if err != nil {
				return j, err
			}
			j.ID = sim.JobID(id)
			j.Replicas = 1
			if j.CPUMilli, err = reqInt(in, "cpu_milli", 64); err != nil {
				return j, err
			}
			if j.MemoryMiB, err = reqInt(in, "memory_mib", 64); err != nil {
				return j, err
			}
			n, err := reqInt(in, "num_gpu", 32)
			if err != nil {
				return j, err
			}
			m, err := reqInt(in, "gpu_milli", 32)
			if err != nil {
				return j, err
			}
			j.GPUsPerReplica, j.GPUMilli = int32(n), sim.WholeGPU
			if n > 0 {
				if m < 1 || m > 1000 {
					return j, skipf("gpu_milli", "out of range 1..1000", "%d", m)
				}
				if m < 1000 && n != 1 {
					return j, skipf("gpu_milli", "fractional share with num_gpu > 1", "gpu_milli %d, num_gpu %d", m, n)
				}
				j.GPUMilli = sim.MilliGPU(m)
			}
			j.GPUModels = splitModels(in.get(in.col("gpu_spec")), intern)
			if err := knownModels("gpu_spec", j.GPUModels, openbModels); err != nil {
				return j, err
			}
			qos := in.get(in.col("qos"))
			if qos != "" {
				cls, ok := openbClass[qos]
				if !ok {
					return j, skipf("qos", "unknown qos", "%q (want LS, BE, Burstable or Guaranteed)", qos)
				}
				j.Class, j.Queue = cls, intern.get(qos)
			} else {
				j.Class = sim.ClassUnknown
			}
			if !timed {
				return j, nil
			}
			c, err := reqTime(in, "creation_time")
			if err != nil {
				return j, err
			}
			d, err := reqTime(in, "deletion_time")
			if err != nil {
				return j, err
			}
			start := c
			if s, ok, err := optNum(in, "scheduled_time"); err != nil {
				return j, err
			} else if ok {
				if s < c {
					return j, skipf("scheduled_time", "scheduled before creation", "%v < %v", s, c)
				}
				start = s
			}
			if d < start {
				return j, skipf("deletion_time", "deleted before start", "%v < %v", d, start)
			}
			j.Submit = sim.Time(sim.Seconds(c))
			j.Duration = sim.Seconds(d) - sim.Seconds(start)
			return j, nil
		}, nil
	})
}

// unknownCols rejects header columns outside known.
func unknownCols(in *csvIn, known []string) error {
	set := map[string]bool{}
	for _, k := range known {
		set[k] = true
	}
	var bad []string
	for _, h := range in.header {
		if !set[h] {
			bad = append(bad, fmt.Sprintf("%q", h))
		}
	}
	if len(bad) > 0 {
		sort.Strings(known)
		return rowErr(in.file, 1, "", "unknown column(s) %s (known: %s)", strings.Join(bad, ", "), strings.Join(known, ","))
	}
	return nil
}

// readOpenBNodes reads an openb node list (sn,cpu_milli,memory_mib,gpu,model).
// Each row is one node: Name = sn, GPUs = gpu, GPUModel = model, Pool = model (or
// "cpu" for CPU-only nodes, which are kept with 0 GPUs), GPUMemMiB from the model
// when public. Bad rows are errors (a cluster with silently missing nodes would
// mislead); duplicate node names are errors too.
func readOpenBNodes(path string, opts ReadOptions) ([]sim.NodeSpec, *ImportReport, error) {
	return readCSVNodes(path, FormatOpenBNodes, ',', []string{"sn", "cpu_milli", "memory_mib", "gpu", "model"}, nil,
		func(in *csvIn, line int) (sim.NodeSpec, error) {
			var n sim.NodeSpec
			var err error
			if n.Name, err = reqStr(in, "sn"); err != nil {
				return n, err
			}
			if n.CPUMilli, err = reqInt(in, "cpu_milli", 64); err != nil {
				return n, err
			}
			if n.MemoryMiB, err = reqInt(in, "memory_mib", 64); err != nil {
				return n, err
			}
			g, err := reqInt(in, "gpu", 32)
			if err != nil {
				return n, err
			}
			n.GPUs = int32(g)
			n.GPUModel = in.get(in.col("model"))
			if n.GPUs > 0 && n.GPUModel == "" {
				return n, skipf("model", "missing value", "a node with %d GPUs needs a model", n.GPUs)
			}
			if n.GPUs == 0 {
				n.GPUModel = ""
			}
			return finishNode(n), nil
		})
}

// finishNode fills Pool and GPUMemMiB and marks no cross-node NVLink domain.
func finishNode(n sim.NodeSpec) sim.NodeSpec {
	n.Pool = n.GPUModel
	if n.GPUs == 0 {
		n.Pool = "cpu"
	}
	if n.GPUMemMiB == 0 {
		n.GPUMemMiB = gpuMemMiB[n.GPUModel]
	}
	n.NVLinkDomain = -1
	return n
}

// readCSVNodes is the common loop of node-list readers: every bad row is an error.
// header, when not nil, names the columns of a header-less file.
func readCSVNodes(path, format string, comma rune, required, header []string, parse func(in *csvIn, line int) (sim.NodeSpec, error)) ([]sim.NodeSpec, *ImportReport, error) {
	var in *csvIn
	var err error
	if header != nil {
		in, err = openHeaderless(path, comma, header)
	} else {
		in, err = openCSV(path, comma)
	}
	if err != nil {
		return nil, nil, err
	}
	defer in.close()
	if err := in.requireCols(required...); err != nil {
		return nil, nil, err
	}
	rep := newReport(path, format)
	var nodes []sim.NodeSpec
	names := map[string]int{}
	for {
		err := in.next()
		if err != nil {
			if err == io.EOF {
				break
			}
			return nil, rep, err
		}
		rep.Rows++
		n, err := parse(in, in.line)
		if err != nil {
			if se, ok := err.(*skipError); ok {
				return nil, rep, &RowError{File: path, Line: in.line, Column: se.Column, Err: se}
			}
			return nil, rep, err
		}
		if n.GPUs < 0 || n.CPUMilli < 0 || n.MemoryMiB < 0 {
			return nil, rep, rowErr(path, in.line, "", "negative capacity")
		}
		if prev, dup := names[n.Name]; dup {
			return nil, rep, rowErr(path, in.line, "", "duplicate node name %q (first on line %d)", n.Name, prev)
		}
		names[n.Name] = in.line
		nodes = append(nodes, n)
		rep.Imported++
	}
	if len(nodes) == 0 {
		return nil, rep, rowErr(path, 0, "", "no nodes")
	}
	return nodes, rep, nil
}
