package workloads

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/gpusim/gpusim/calibrate"
	"github.com/gpusim/gpusim/sim"
)

// ThroughputTable is a per-(job type, GPU type) throughput table in steps/s, as
// Gavel measures it (scheduler/simulation_throughputs.json, isolated "null"
// entries): heterogeneity-aware policies read it to compare GPU types, and
// ThroughputSpeed makes it the engine's ground truth. A job names its type in
// JobSpec.Workload (calibrate.GavelWorkloadName of Gavel's job type, e.g.
// "ResNet-50_bs64") and its scale factor is its GPU count
// (Replicas x GPUsPerReplica); a scale factor's throughput is the whole gang's.
type ThroughputTable struct {
	types []string // GPU types as the file names them, sorted
	t     map[throughputKey][]float64
}

type throughputKey struct {
	workload string
	gpus     int32
}

// GavelThroughputTable reads a table in Gavel's simulation_throughputs.json
// format (name is used in errors; r nil reads the embedded copy of Gavel's
// own file). The *_unconsolidated GPU types are left out (they differ only for
// multi-GPU jobs spread over servers).
func GavelThroughputTable(name string, r io.Reader) (*ThroughputTable, error) {
	if r == nil {
		name, r = "gavel simulation_throughputs.json (built in)", bytes.NewReader(calibrate.GavelThroughputsFile())
	}
	raw, err := calibrate.ReadGavelIsolated(name, r)
	if err != nil {
		return nil, err
	}
	tt := &ThroughputTable{t: map[throughputKey][]float64{}}
	for g := range raw {
		if !strings.HasSuffix(g, "_unconsolidated") {
			tt.types = append(tt.types, g)
		}
	}
	slices.Sort(tt.types)
	if len(tt.types) == 0 {
		return nil, fmt.Errorf("%s: no GPU types", name)
	}
	for i, g := range tt.types {
		for k, v := range raw[g] {
			key := throughputKey{calibrate.GavelWorkloadName(k.Type), int32(k.Scale)}
			row := tt.t[key]
			if row == nil {
				row = make([]float64, len(tt.types))
				tt.t[key] = row
			}
			row[i] = v
		}
	}
	return tt, nil
}

// LoadThroughputTable reads a Gavel-format table from path ("" = the built-in
// Gavel file).
func LoadThroughputTable(path string) (*ThroughputTable, error) {
	if path == "" {
		return GavelThroughputTable("", nil)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return GavelThroughputTable(path, f)
}

// GPUTypes returns the table's GPU types (sorted; do not modify).
func (t *ThroughputTable) GPUTypes() []string { return t.types }

// TypeIndex returns the index of the GPU type a cluster GPU model names: the
// type equal to the model ignoring case, else the longest type that is a
// case-insensitive prefix of it ("V100" and "v100-sxm2" match "v100"); -1 when
// none.
func (t *ThroughputTable) TypeIndex(gpuModel string) int {
	m := strings.ToLower(gpuModel)
	best := -1
	for i, g := range t.types {
		if m == g {
			return i
		}
		if strings.HasPrefix(m, g) && (best < 0 || len(g) > len(t.types[best])) {
			best = i
		}
	}
	return best
}

// Throughput returns the steps/s of a gang of gpus GPUs of workload on GPU type
// index ti, and whether the table has a positive entry for it.
func (t *ThroughputTable) Throughput(workload string, gpus int32, ti int) (float64, bool) {
	row := t.t[throughputKey{workload, gpus}]
	if row == nil || ti < 0 || ti >= len(row) || row[ti] <= 0 {
		return 0, false
	}
	return row[ti], true
}

// Has reports whether the table knows workload at gpus GPUs on some type.
func (t *ThroughputTable) Has(workload string, gpus int32) bool {
	return t.t[throughputKey{workload, gpus}] != nil
}

// ThroughputSpeed is the engine's speed model of a throughput table: a job of a
// workload the table knows runs on GPU model M at T[M] / T[Reference] of its
// reference speed (JobSpec.Duration is its time on the reference type). Jobs the
// table does not know, CPU-only jobs and GPU models without an entry run at the
// Next model's speed (1 when Next is nil); otherwise Next's factor multiplies in.
type ThroughputSpeed struct {
	Table     *ThroughputTable
	Reference int // GPU type index of the durations
	Next      sim.SpeedModel
}

// Speed implements sim.SpeedModel.
func (m *ThroughputSpeed) Speed(c *sim.Cluster, j *sim.Job) float64 {
	f := 1.0
	if m.Next != nil {
		f = m.Next.Speed(c, j)
	}
	if len(j.GPUs) == 0 || j.Spec.Workload == "" {
		return f
	}
	if r, ok := m.Factor(j.Spec.Workload, j.Spec.TotalGPUs(), c.Node(c.GPUNode(j.GPUs[0])).GPUModel); ok {
		return f * r
	}
	return f
}

// Factor returns T[model] / T[Reference] for a gang of gpus GPUs of workload,
// and false when either entry is missing.
func (m *ThroughputSpeed) Factor(workload string, gpus int32, gpuModel string) (float64, bool) {
	t, ok := m.Table.Throughput(workload, gpus, m.Table.TypeIndex(gpuModel))
	if !ok {
		return 0, false
	}
	ref, ok := m.Table.Throughput(workload, gpus, m.Reference)
	if !ok {
		return 0, false
	}
	return t / ref, true
}
