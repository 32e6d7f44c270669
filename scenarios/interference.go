package scenarios

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpusim/gpusim/calibrate"
	"github.com/gpusim/gpusim/sim"
)

// matrixInterference adapts a calibrate InterferenceMatrix (`interference.path`)
// to sim.Interference. Measured groups (pairs, triples, ...) are indexed by mode
// and the sorted multiset of their workloads; members of the same workload in a
// group get the mean of their factors, so lookups do not depend on job order.
// A set of co-located jobs that was not measured (or a GPU model other than the
// matrix's metadata.gpuModel, when that is set) uses the fallback
// (fallbackFactors). Lookups do not allocate.
type matrixInterference struct {
	ids   map[string]int32
	model string
	// groups[mode][key] = factors of the members in sorted workload order
	groups [sim.NumSharingModes]map[uint64][]float64
	spec   InterferenceSpec
}

const maxGroupKey = 6 // members per measured group indexed (10 bits of id each)

func groupKey(ids []int32) (uint64, bool) {
	if len(ids) > maxGroupKey {
		return 0, false
	}
	k := uint64(len(ids))
	for _, id := range ids {
		if id < 0 || id >= 1<<10 {
			return 0, false
		}
		k = k<<10 | uint64(id+1)
	}
	return k, true
}

// newMatrixInterference indexes m; errors name the group.
func newMatrixInterference(m *calibrate.InterferenceMatrix, spec InterferenceSpec) (*matrixInterference, error) {
	t := &matrixInterference{ids: map[string]int32{}, model: m.Metadata.GPUModel, spec: spec}
	intern := func(name string) int32 {
		id, ok := t.ids[name]
		if !ok {
			id = int32(len(t.ids))
			t.ids[name] = id
		}
		return id
	}
	for _, w := range m.Workloads {
		intern(w.Name)
	}
	for mi, mr := range m.Modes {
		mode, err := sim.ParseSharingMode(mr.Mode)
		if err != nil || (mode != sim.ShareTimeSlice && mode != sim.ShareMPS) {
			continue // MIG and unknown modes carry no co-location factors
		}
		if t.groups[mode] == nil {
			t.groups[mode] = map[uint64][]float64{}
		}
		for gi, g := range mr.Groups {
			type mem struct {
				id int32
				f  float64
			}
			ms := make([]mem, len(g.Members))
			for k, x := range g.Members {
				ms[k] = mem{intern(x.Workload), x.Mean}
			}
			slices.SortFunc(ms, func(a, b mem) int { return int(a.id - b.id) })
			ids := make([]int32, len(ms))
			fs := make([]float64, len(ms))
			for k := range ms {
				ids[k], fs[k] = ms[k].id, ms[k].f
			}
			for a := 0; a < len(ids); { // same workload: mean factor
				b := a
				sum := 0.0
				for b < len(ids) && ids[b] == ids[a] {
					sum += fs[b]
					b++
				}
				for k := a; k < b; k++ {
					fs[k] = sum / float64(b-a)
				}
				a = b
			}
			key, ok := groupKey(ids)
			if !ok {
				if len(ids) > maxGroupKey {
					continue
				}
				return nil, fmt.Errorf("modes[%d].groups[%d]: more than 1023 workloads", mi, gi)
			}
			t.groups[mode][key] = fs
		}
	}
	return t, nil
}

// WorkloadID implements sim.Interference.
func (t *matrixInterference) WorkloadID(name string) (int32, bool) {
	id, ok := t.ids[name]
	return id, ok
}

// Factors implements sim.Interference.
func (t *matrixInterference) Factors(gpuModel string, mode sim.SharingMode, ws []int32, solo []float64, out []float64) bool {
	k := len(ws)
	if k <= maxGroupKey && (t.model == "" || strings.EqualFold(t.model, gpuModel)) && t.groups[mode] != nil {
		var idx [maxGroupKey]int
		var ids [maxGroupKey]int32
		for i := range k {
			idx[i] = i
		}
		for i := 1; i < k; i++ { // insertion sort by workload id (k <= 6)
			for j := i; j > 0 && ws[idx[j]] < ws[idx[j-1]]; j-- {
				idx[j], idx[j-1] = idx[j-1], idx[j]
			}
		}
		for i := range k {
			ids[i] = ws[idx[i]]
		}
		if key, ok := groupKey(ids[:k]); ok {
			if fs, ok := t.groups[mode][key]; ok {
				for i := range k {
					out[idx[i]] = fs[i]
				}
				return true
			}
		}
	}
	fallbackFactors(t.spec, mode, solo, out)
	return false
}

func init() {
	loadInterference = func(path string, spec InterferenceSpec) (sim.Interference, error) {
		m, err := calibrate.LoadInterference(path)
		if err != nil {
			return nil, err
		}
		return newMatrixInterference(m, spec)
	}
}
