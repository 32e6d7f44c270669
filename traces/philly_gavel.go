package traces

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gpusim/gpusim/sim"
)

// FormatPhillyGavel is the Philly-derived per-VC job lists published with Gavel.
const FormatPhillyGavel = "philly-gavel"

// phillyNodeGPUs is the largest gang member placed on one node when a Philly job's
// GPU count is split into replicas (Philly's biggest machines had 8 GPUs).
const phillyNodeGPUs = 8

// gavelSteps maps a Gavel job type to its single-job throughput on a V100 in steps
// per second. The raw .trace files store floor(duration_s * rate) steps; the rates
// are Gavel's oracle throughputs (scheduler/oracle_throughputs.json), recovered here
// from the derived CSV to 1e-8 relative precision: with them, ceil(steps / rate)
// reproduces every duration_s of the 4034 published jobs exactly.
var gavelSteps = map[string]float64{
	"A3C":                              8.2330332136252995,
	"CycleGAN":                         4.9184947902276805,
	"LM (batch size 10)":               143.36051312498955,
	"LM (batch size 20)":               107.95087160986691,
	"LM (batch size 40)":               71.723036761523829,
	"LM (batch size 5)":                167.12285774564151,
	"LM (batch size 80)":               43.903610697453963,
	"Recommendation (batch size 1024)": 0.4799797193616876,
	"Recommendation (batch size 2048)": 0.56753183588105394,
	"Recommendation (batch size 4096)": 0.62440838074967697,
	"Recommendation (batch size 512)":  0.33148206881333825,
	"Recommendation (batch size 8192)": 0.60235471854815625,
	"ResNet-18 (batch size 128)":       30.28750485884655,
	"ResNet-18 (batch size 16)":        77.317373550731915,
	"ResNet-18 (batch size 256)":       16.987371108461844,
	"ResNet-18 (batch size 32)":        65.805407108816951,
	"ResNet-18 (batch size 64)":        48.884180532417723,
	"ResNet-50 (batch size 128)":       2.8459812406060161,
	"ResNet-50 (batch size 16)":        17.37438939061169,
	"ResNet-50 (batch size 32)":        9.9205834520144158,
	"ResNet-50 (batch size 64)":        5.457599989505848,
	"Transformer (batch size 128)":     5.7712108515786769,
	"Transformer (batch size 16)":      12.845652440387635,
	"Transformer (batch size 256)":     1.7070298735358611,
	"Transformer (batch size 32)":      12.475277723318534,
	"Transformer (batch size 64)":      9.5680237022314181,
}

func init() {
	registerJobs(FormatPhillyGavel, "Philly per-VC job lists from Gavel: derived CSV or raw <vc>.trace (tab-separated)", openPhillyGavel)
}

// gangShape splits a gang of n GPUs into replicas of at most perNode GPUs: n <=
// perNode is one replica; otherwise the largest power of two <= perNode that divides
// n is the replica size (12 -> 3x4, 20 -> 5x4, 24 -> 3x8, 7 stays 1x7).
func gangShape(n int64, perNode int64) (replicas, gpus int32) {
	if n <= perNode {
		return 1, int32(n)
	}
	for g := perNode; g >= 1; g /= 2 {
		if n%g == 0 {
			return int32(n / g), int32(g)
		}
	}
	return int32(n), 1
}

// openPhillyGavel reads either the derived CSV (header vc,job_seq,arrival_time_s,
// num_gpus,duration_s,...) or a raw Gavel .trace file (by extension). Jobs: id
// "<vc>-<job_seq>", queue = vc, class training, gang of num_gpus GPUs split by
// gangShape, duration = duration_s (CSV) or decoded from the steps (raw). Arrival
// times are per-VC (each VC starts at 0).
func openPhillyGavel(path string, opts ReadOptions) (JobReader, error) {
	if strings.EqualFold(filepath.Ext(path), ".trace") {
		return openGavelRaw(path, opts)
	}
	required := []string{"vc", "job_seq", "arrival_time_s", "num_gpus", "duration_s"}
	return openCSVImporter(path, FormatPhillyGavel, ',', opts, required, func(in *csvIn, rep *ImportReport) (rowParser, error) {
		if err := unknownCols(in, append([]string{"gavel_job_type", "gavel_total_steps"}, required...)); err != nil {
			return nil, err
		}
		intern := newInterner()
		return func(in *csvIn, line int) (sim.JobSpec, error) {
			vc, err := reqStr(in, "vc")
			if err != nil {
				return sim.JobSpec{}, err
			}
			seq, err := reqInt(in, "job_seq", 32)
			if err != nil {
				return sim.JobSpec{}, err
			}
			arr, err := reqTime(in, "arrival_time_s")
			if err != nil {
				return sim.JobSpec{}, err
			}
			n, err := reqInt(in, "num_gpus", 32)
			if err != nil {
				return sim.JobSpec{}, err
			}
			d, err := reqTime(in, "duration_s")
			if err != nil {
				return sim.JobSpec{}, err
			}
			return phillyJob(intern.get(vc), seq, arr, n, d), nil
		}, nil
	})
}

func phillyJob(vc string, seq int64, arrival float64, gpus int64, dur float64) sim.JobSpec {
	j := sim.JobSpec{
		ID:       sim.JobID(vc + "-" + strconv.FormatInt(seq, 10)),
		Submit:   sim.Time(sim.Seconds(arrival)),
		Queue:    vc,
		Class:    sim.ClassTraining,
		GPUMilli: sim.WholeGPU,
		Duration: sim.Seconds(dur),
	}
	j.Replicas, j.GPUsPerReplica = gangShape(gpus, phillyNodeGPUs)
	if gpus == 0 {
		j.Replicas, j.GPUsPerReplica = 1, 0
	}
	return j
}

// openGavelRaw reads a raw Gavel 2019 .trace file: tab-separated, no header, 7
// fields job_type, command, num_steps_arg, needs_data_dir, total_steps,
// arrival_time, scale_factor. The VC is the file name without extension.
func openGavelRaw(path string, opts ReadOptions) (JobReader, error) {
	r, err := openHeaderlessTSV(path, FormatPhillyGavel, opts, "job_type", "command", "num_steps_arg", "needs_data_dir", "total_steps", "arrival_time", "scale_factor")
	if err != nil {
		return nil, err
	}
	vc := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	r.parse = func(in *csvIn, line int) (sim.JobSpec, error) {
		seq := int64(line - 1) // job_seq is the 0-based line number
		typ := in.get(0)
		rate, ok := gavelSteps[typ]
		if !ok {
			return sim.JobSpec{}, skipf("job_type", "unknown Gavel job type", "%q", typ)
		}
		steps, err := reqInt(in, "total_steps", 64)
		if err != nil {
			return sim.JobSpec{}, err
		}
		arr, err := reqTime(in, "arrival_time")
		if err != nil {
			return sim.JobSpec{}, err
		}
		n, err := reqInt(in, "scale_factor", 32)
		if err != nil {
			return sim.JobSpec{}, err
		}
		d := math.Ceil(float64(steps) / rate)
		if d > 1e12 {
			return sim.JobSpec{}, skipf("total_steps", "duration out of range", "%d steps", steps)
		}
		return phillyJob(vc, seq, arr, n, d), nil
	}
	return r, nil
}

// openHeaderlessTSV opens a tab-separated file without a header row (Gavel's
// .trace files) as a lenient CSV job reader whose columns are names, in order;
// the caller sets its parse function.
func openHeaderlessTSV(path, format string, opts ReadOptions, names ...string) (*csvJobReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	in, err := newCSVIn(path, f, '\t', false)
	if err != nil {
		f.Close()
		return nil, err
	}
	in.f = f
	in.r.lazy = true
	in.header = names
	in.cols = map[string]int{}
	for i, n := range names {
		in.cols[n] = i
	}
	in.lenient = true
	r := &csvJobReader{in: in, rep: newReport(path, format), opts: opts}
	if !opts.AllowDuplicateIDs {
		r.dups = newDupSet()
	}
	return r, nil
}
