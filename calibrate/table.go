package calibrate

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync/atomic"
)

// FallbackModel says how Table answers for groups that were not measured. See
// docs/sharing.md, "Interference matrix in the simulator".
type FallbackModel struct {
	// Default is the speed factor of each member of an unmeasured pair when no
	// utilisation model applies. 0 means "the mean of the measured pair factors
	// of the same GPU model and mode" (over all GPU models when the model is not
	// in the table), or 0.5 (an even time split) when there are none.
	Default float64
	// UseUtilisation derives an unmeasured pair's factors from the two jobs' solo
	// SM utilisations u_a, u_b in [0,1] (when both are known): 1 when
	// u_a+u_b <= 1 (the kernels fit side by side, no slowdown), else
	// 1/(u_a+u_b) (the GPU's time divided in proportion to demand). This is the
	// packing model of Gandiva (Xiao et al., OSDI'18, "packing" of jobs whose
	// combined utilisation is under 100%) and Lucid (Hu et al., ASPLOS'23, the
	// gpu_util sum in its packing analyser).
	UseUtilisation bool
	// SwitchOverhead is the time-slicing context-switch overhead, a fraction in
	// [0,1): in mode "timeslice" a member whose factor used any fallback pair is
	// multiplied by (1-SwitchOverhead). Measured factors already include the
	// switching cost and are never changed.
	SwitchOverhead float64
}

// Sharing modes as Table indexes them.
const (
	modeTimeslice = iota
	modeMPS
	modeMIG
	numModes
)

func modeIndex(mode string) int {
	switch mode {
	case ModeTimeslice:
		return modeTimeslice
	case ModeMPS:
		return modeMPS
	case ModeMIG:
		return modeMIG
	}
	return -1
}

// maxKeyed is the largest group size stored as a measured group.
const maxKeyed = 4

// maxSorted is the largest group Factors handles without allocating.
const maxSorted = 32

// groupKey identifies a measured group: GPU model index, mode, size and the
// members' workload ids in ascending order.
type groupKey struct {
	model int16
	mode  int8
	n     int8
	w     [maxKeyed]int32
}

// Table is an immutable lookup of co-location speed factors built from one or
// more interference matrices, keyed by GPU model, sharing mode and the multiset
// of co-located workloads. Factors is allocation-free and safe for concurrent
// use; its only mutable state is the lookup counters that Stats reports.
type Table struct {
	fb        FallbackModel
	workloads map[string]int32
	names     []string
	models    []string // display names, index = model id
	modelTok  [][]string
	modelMap  map[string]int16 // exact and lower-case names
	wildcard  int16            // model id of matrices with no GPU model, or -1
	groups    map[groupKey][maxKeyed]float64
	// def[model][mode] is the pair default; defAll[mode] for unknown models.
	def    [][numModes]float64
	defAll [numModes]float64
	stats  [numModes]struct{ measured, composed, fallback atomic.Int64 }
}

// NewTable builds a Table from the matrices. Workload names are global (the same
// name in two matrices is the same workload). The same group measured twice for
// one GPU model and mode (in two matrices) is an error. GPU model names are
// compared case-insensitively; a mode entry with no GPU model at all (neither its
// own nor metadata.gpuModel) applies to every GPU model not otherwise listed.
func NewTable(fb FallbackModel, ms ...*InterferenceMatrix) (*Table, error) {
	if math.IsNaN(fb.Default) || math.IsInf(fb.Default, 0) || fb.Default < 0 {
		return nil, fmt.Errorf("fallback default factor %v: must be a finite number >= 0", fb.Default)
	}
	if math.IsNaN(fb.SwitchOverhead) || fb.SwitchOverhead < 0 || fb.SwitchOverhead >= 1 {
		return nil, fmt.Errorf("fallback switch overhead %v: must be in [0,1)", fb.SwitchOverhead)
	}
	t := &Table{
		fb:        fb,
		workloads: map[string]int32{},
		modelMap:  map[string]int16{},
		wildcard:  -1,
		groups:    map[groupKey][maxKeyed]float64{},
	}
	type acc struct {
		sum float64
		n   int
	}
	var pairAcc [][numModes]acc
	var allAcc [numModes]acc
	for mi, m := range ms {
		if m == nil {
			return nil, fmt.Errorf("matrix %d is nil", mi)
		}
		if err := m.validate().render(fmt.Sprintf("matrix %d (%s)", mi, m.Metadata.Name), nil); err != nil {
			return nil, err
		}
		for _, w := range m.Workloads {
			t.intern(w.Name)
		}
		for i, mr := range m.Modes {
			gm := m.ModeGPUModel(i)
			mid := t.model(gm)
			for len(pairAcc) < len(t.models) {
				pairAcc = append(pairAcc, [numModes]acc{})
			}
			md := modeIndex(mr.Mode)
			for j, g := range mr.Groups {
				n := len(g.Members)
				if n > maxKeyed {
					return nil, fmt.Errorf("matrix %d (%s): modes[%d].groups[%d]: groups of more than %d members are not supported", mi, m.Metadata.Name, i, j, maxKeyed)
				}
				k := groupKey{model: mid, mode: int8(md), n: int8(n)}
				type mem struct {
					w int32
					f float64
				}
				var sm [maxKeyed]mem
				for x, mb := range g.Members {
					sm[x] = mem{t.intern(mb.Workload), mb.Mean}
				}
				sort.SliceStable(sm[:n], func(a, b int) bool { return sm[a].w < sm[b].w })
				var v [maxKeyed]float64
				for x := 0; x < n; x++ {
					k.w[x] = sm[x].w
				}
				// Members with the same workload share the mean of their factors,
				// so the answer does not depend on member order.
				for x := 0; x < n; {
					y := x
					var s float64
					for y < n && sm[y].w == sm[x].w {
						s += sm[y].f
						y++
					}
					for z := x; z < y; z++ {
						v[z] = s / float64(y-x)
					}
					x = y
				}
				if _, dup := t.groups[k]; dup {
					return nil, fmt.Errorf("matrix %d (%s): modes[%d].groups[%d]: group measured twice for GPU model %q mode %s", mi, m.Metadata.Name, i, j, gm, mr.Mode)
				}
				t.groups[k] = v
				if n == 2 {
					for x := 0; x < 2; x++ {
						pairAcc[mid][md].sum += v[x]
						pairAcc[mid][md].n++
						allAcc[md].sum += v[x]
						allAcc[md].n++
					}
				}
			}
		}
	}
	pick := func(a acc) float64 {
		switch {
		case fb.Default > 0:
			return fb.Default
		case a.n > 0:
			return a.sum / float64(a.n)
		}
		return 0.5
	}
	t.def = make([][numModes]float64, len(t.models))
	for mid := range t.models {
		for md := 0; md < numModes; md++ {
			t.def[mid][md] = pick(pairAcc[mid][md])
		}
	}
	for md := 0; md < numModes; md++ {
		t.defAll[md] = pick(allAcc[md])
	}
	return t, nil
}

func (t *Table) intern(name string) int32 {
	if id, ok := t.workloads[name]; ok {
		return id
	}
	id := int32(len(t.names))
	t.workloads[name] = id
	t.names = append(t.names, name)
	return id
}

// model interns a GPU model name (case-insensitively) and returns its id.
func (t *Table) model(name string) int16 {
	low := strings.ToLower(name)
	if id, ok := t.modelMap[low]; ok {
		return id
	}
	id := int16(len(t.models))
	t.models = append(t.models, name)
	t.modelTok = append(t.modelTok, modelTokens(low))
	t.modelMap[low] = id
	t.modelMap[name] = id
	if name == "" {
		t.wildcard = id
	}
	return id
}

// modelTokens splits a lower-case model name into its alphanumeric runs
// ("a100-sxm4-80gb" → a100, sxm4, 80gb).
func modelTokens(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
}

// WorkloadID returns the interned id of a workload name, or -1, false when no
// matrix names it. Ids are dense from 0 in the order workloads first appear.
func (t *Table) WorkloadID(name string) (int32, bool) {
	if id, ok := t.workloads[name]; ok {
		return id, true
	}
	return -1, false
}

// WorkloadName is the name of id (WorkloadID's inverse).
func (t *Table) WorkloadName(id int32) string { return t.names[id] }

// GPUModels lists the GPU models the table holds factors for, in first-seen
// order ("" for a matrix without a GPU model).
func (t *Table) GPUModels() []string { return append([]string(nil), t.models...) }

// ResolveModel returns the matrix GPU model id that the simulator's model name
// maps to, or -1. Matching, first rule that applies: the exact or
// case-insensitively equal name; else the matrix model whose alphanumeric tokens
// are a prefix of the simulator's (or the reverse), the longest such match,
// first listed on ties (so matrix "A100" matches "A100-SXM-80GB", "V100" matches
// "v100", but "A10" does not match "A100"); else the model-less wildcard matrix.
// It does not allocate for names that match exactly.
func (t *Table) ResolveModel(gpuModel string) int {
	if id, ok := t.modelMap[gpuModel]; ok {
		return int(id)
	}
	for id, m := range t.models {
		if m != "" && strings.EqualFold(m, gpuModel) {
			return id
		}
	}
	best, bestLen := -1, 0
	for id, toks := range t.modelTok {
		if len(toks) == 0 {
			continue
		}
		if n := tokenPrefix(toks, gpuModel); n > bestLen {
			best, bestLen = id, n
		}
	}
	if best >= 0 {
		return best
	}
	return int(t.wildcard)
}

// tokenPrefix reports how many tokens match when one of toks (lower-case) and
// the tokens of s is a prefix of the other, 0 otherwise. It does not allocate.
func tokenPrefix(toks []string, s string) int {
	i, n := 0, 0
	for _, tok := range toks {
		// next token of s
		for i < len(s) && !isAlnum(s[i]) {
			i++
		}
		if i == len(s) {
			return n // s's tokens are a prefix of toks
		}
		j := i
		for j < len(s) && isAlnum(s[j]) {
			j++
		}
		if !strings.EqualFold(tok, s[i:j]) {
			return 0
		}
		n++
		i = j
	}
	return n
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// coMember is one co-located job in canonical order.
type coMember struct {
	w   int32
	u   float64
	idx int
}

func coLess(a, b coMember) bool {
	if a.w != b.w {
		return a.w < b.w
	}
	return a.u < b.u
}

// Factors writes into out[i] the speed factor of member i of a group co-located
// on one GPU of gpuModel in mode ("timeslice", "mps" or "mig"); len(out) ==
// len(ws) >= 1. ws[i] is a WorkloadID (-1 for a workload no matrix names);
// solo[i] is member i's solo SM utilisation in [0,1], or negative when unknown
// (solo may be nil: all unknown). It reports whether every factor came from a
// measurement of exactly this group.
//
// Rules, in order: a single member is 1 (alone). A measured group (same GPU
// model, mode and multiset of workloads) gives its measured factors. A pair
// not measured gives the fallback (FallbackModel). A group of 3 or more not
// measured is composed from its pairs by adding slowdowns: member i's factor is
// 1/(1 + Σ_{j≠i} (1/f(i|j) − 1)), where f(i|j) is i's factor in the pair
// {i,j}, measured or fallback (so pure time-slicing pairs at 0.5 compose to 1/3
// for three jobs, and pairs at 1.0 stay 1.0); a pair factor of 0 makes it 0,
// one above 1 counts as 1 (so a composed factor is in [0,1]). Solo
// utilisations above 1 count as 1.
// In mode timeslice a member whose factor used a fallback pair is multiplied by
// 1 − SwitchOverhead.
//
// Member order does not matter: the same multiset of (workload, solo) gives the
// same factor per member, bit for bit. It does not allocate for groups of up to
// 32 members.
func (t *Table) Factors(gpuModel, mode string, ws []int32, solo []float64, out []float64) (measured bool) {
	n := len(ws)
	if n == 0 || len(out) != n || (solo != nil && len(solo) != n) {
		panic(fmt.Sprintf("calibrate.Table.Factors: len(ws)=%d len(solo)=%d len(out)=%d", n, len(solo), len(out)))
	}
	if n == 1 {
		out[0] = 1
		return true
	}
	md := modeIndex(mode)
	if md < 0 {
		panic("calibrate.Table.Factors: unknown mode " + mode)
	}
	mid := t.ResolveModel(gpuModel)
	var buf [maxSorted]coMember
	var ms []coMember
	if n <= maxSorted {
		ms = buf[:n]
	} else {
		ms = make([]coMember, n)
	}
	for i, w := range ws {
		u := -1.0
		if solo != nil && solo[i] >= 0 {
			u = min(solo[i], 1)
		}
		ms[i] = coMember{w: w, u: u, idx: i}
	}
	// Insertion sort: tiny n, stable, allocation-free.
	for i := 1; i < n; i++ {
		for j := i; j > 0 && coLess(ms[j], ms[j-1]); j-- {
			ms[j], ms[j-1] = ms[j-1], ms[j]
		}
	}
	st := &t.stats[md]
	if mid >= 0 && n <= maxKeyed {
		k := groupKey{model: int16(mid), mode: int8(md), n: int8(n)}
		ok := true
		for i := range ms {
			if ms[i].w < 0 {
				ok = false
				break
			}
			k.w[i] = ms[i].w
		}
		if ok {
			if v, hit := t.groups[k]; hit {
				for i := range ms {
					out[ms[i].idx] = v[i]
				}
				st.measured.Add(1)
				return true
			}
		}
	}
	anyFallback := false
	overhead := 1.0
	if md == modeTimeslice {
		overhead = 1 - t.fb.SwitchOverhead
	}
	if n == 2 {
		f0, m0 := t.pair(mid, md, ms[0], ms[1])
		f1, m1 := t.pair(mid, md, ms[1], ms[0])
		if !m0 {
			f0 *= overhead
		}
		if !m1 {
			f1 *= overhead
		}
		out[ms[0].idx], out[ms[1].idx] = f0, f1
		// A pair is measured as a whole or not at all.
		st.fallback.Add(1)
		return false
	}
	for i := range ms {
		slow, zero, fellBack := 0.0, false, false
		for j := range ms {
			if j == i {
				continue
			}
			f, m := t.pair(mid, md, ms[i], ms[j])
			if !m {
				fellBack = true
			}
			if f <= 0 {
				zero = true
				continue
			}
			if f < 1 { // a pair factor above 1 adds no slowdown (and none below 0)
				slow += 1/f - 1
			}
		}
		f := 0.0
		if !zero {
			f = 1 / (1 + slow)
		}
		if fellBack {
			f *= overhead
			anyFallback = true
		}
		out[ms[i].idx] = f
	}
	if anyFallback {
		st.fallback.Add(1)
	} else {
		st.composed.Add(1)
	}
	return false
}

// pair returns a's factor when co-located with b alone, and whether it was
// measured.
func (t *Table) pair(mid, md int, a, b coMember) (float64, bool) {
	if mid >= 0 && a.w >= 0 && b.w >= 0 {
		k := groupKey{model: int16(mid), mode: int8(md), n: 2}
		if a.w <= b.w {
			k.w[0], k.w[1] = a.w, b.w
			if v, ok := t.groups[k]; ok {
				return v[0], true
			}
		} else {
			k.w[0], k.w[1] = b.w, a.w
			if v, ok := t.groups[k]; ok {
				return v[1], true
			}
		}
	}
	if t.fb.UseUtilisation && a.u >= 0 && b.u >= 0 {
		s := a.u + b.u
		if s <= 1 {
			return 1, false
		}
		return 1 / s, false
	}
	if mid >= 0 {
		return t.def[mid][md], false
	}
	return t.defAll[md], false
}

// LookupStats counts Factors calls with two or more members: Measured answered
// from a measured group, Composed from measured pairs only (groups of 3+),
// Fallback with at least one unmeasured pair.
type LookupStats struct {
	Measured int64 `json:"measured"`
	Composed int64 `json:"composed"`
	Fallback int64 `json:"fallback"`
}

// TableStats are the lookup counts per sharing mode, for summary.json.
type TableStats struct {
	Timeslice LookupStats `json:"timeslice"`
	MPS       LookupStats `json:"mps"`
	MIG       LookupStats `json:"mig"`
}

// Stats returns the lookup counts since the Table was built. They are
// deterministic when the calls are (one Table per simulation run).
func (t *Table) Stats() TableStats {
	get := func(md int) LookupStats {
		s := &t.stats[md]
		return LookupStats{Measured: s.measured.Load(), Composed: s.composed.Load(), Fallback: s.fallback.Load()}
	}
	return TableStats{Timeslice: get(modeTimeslice), MPS: get(modeMPS), MIG: get(modeMIG)}
}

// DefaultFactor is the fallback pair factor the table uses for gpuModel and mode
// when no utilisation is known (FallbackModel.Default, or the measured mean).
func (t *Table) DefaultFactor(gpuModel, mode string) (float64, error) {
	md := modeIndex(mode)
	if md < 0 {
		return 0, errors.New("unknown sharing mode " + mode)
	}
	if mid := t.ResolveModel(gpuModel); mid >= 0 {
		return t.def[mid][md], nil
	}
	return t.defAll[md], nil
}
