package scenarios

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
)

// TelemetrySpec is the scenario block `telemetry:` (docs/telemetry.md): node
// degradation episodes (thermal or power-brake clock throttling) drawn from a
// model and/or replayed from `gpusim calibrate telemetry` Parquet files. A
// gang runs at its slowest node's clock. Without it nothing of telemetry runs
// and every output is as before.
type TelemetrySpec struct {
	Model  *DegradationModelSpec `yaml:"model"`
	Replay []TelemetryReplaySpec `yaml:"replay"`
}

// DegradationModelSpec is `telemetry.model`: every node starts episodes as a
// Poisson process of mean inter-arrival Every; each lasts a draw of Duration
// at a clock factor uniform in [Clock.Min, Clock.Max].
type DegradationModelSpec struct {
	Every    policies.Dur `yaml:"every"`    // per node, > 0
	Duration *DistSpec    `yaml:"duration"` // default exponential, mean 1h
	Clock    ClockRange   `yaml:"clock"`
	// ECCHazard (>= 1, default 1) multiplies the node's failure hazard
	// (failures.node) during every episode.
	ECCHazard float64 `yaml:"eccHazard"`
}

// ClockRange is a clock factor range in (0, 1].
type ClockRange struct {
	Min float64 `yaml:"min"`
	Max float64 `yaml:"max"`
}

// TelemetryReplaySpec maps one `gpusim calibrate telemetry` Parquet file onto a
// node: the file's first sample is at virtual time At; each sample holds until
// the next one; while a GPU reports a slowdown throttle reason its clock factor
// is sm_clock_mhz / MaxClockMHz, and the node's factor is the minimum over its
// GPUs.
type TelemetryReplaySpec struct {
	Path        string       `yaml:"path"` // relative to the scenario file
	Node        string       `yaml:"node"` // node name (cluster.pools[].name-<i>)
	At          policies.Dur `yaml:"at"`
	MaxClockMHz float64      `yaml:"maxClockMHz"` // the GPU's maximum SM clock (H100 SXM: 1980)
	// ECCHazard (>= 1, default 1) multiplies the node's failure hazard
	// (failures.node) over the sample interval that follows a sample at which
	// a GPU's ecc_uncorrected count had risen.
	ECCHazard float64 `yaml:"eccHazard"`
}

// SlowdownThrottleMask are the NVML clocks-event reasons that make a GPU a
// straggler: hw_slowdown, sw_thermal_slowdown, hw_thermal_slowdown and
// hw_power_brake_slowdown (gpu_idle, sw_power_cap and application clock
// settings are normal operation).
const SlowdownThrottleMask int64 = 8 | 32 | 64 | 128

func (s *Scenario) validateTelemetry() sim.FieldErrors {
	var fe sim.FieldErrors
	t := s.Telemetry
	if t == nil {
		return fe
	}
	if t.Model == nil && len(t.Replay) == 0 {
		fe.Add("telemetry", "needs model or replay")
	}
	if s.sharingOn() {
		fe.Add("telemetry", "telemetry stragglers do not support device-level GPU sharing (cluster.pools[].sharing / interference)")
	}
	for i, p := range s.Policies {
		if p.Name != "" && !slices.Contains(recoveryPolicies, p.Name) {
			fe.Add(fmt.Sprintf("policies[%d].name", i), "telemetry: is supported only with %s: %s keeps its own run-time accounting from a job's run start, which a mid-run clock change moves", strings.Join(recoveryPolicies, ", "), p.Name)
		}
	}
	if m := t.Model; m != nil {
		if m.Every <= 0 {
			fe.Add("telemetry.model.every", "must be > 0 (mean time between episodes per node, e.g. 720h)")
		}
		m.Duration.validate(&fe, "telemetry.model.duration")
		c := m.Clock
		if !(c.Min > 0 && c.Min <= 1) {
			fe.Add("telemetry.model.clock.min", "must be in (0, 1]")
		}
		if !(c.Max >= c.Min && c.Max <= 1) {
			fe.Add("telemetry.model.clock.max", "must be in [min, 1]")
		}
		s.validateECC(&fe, "telemetry.model.eccHazard", m.ECCHazard)
	}
	for i, r := range t.Replay {
		p := fmt.Sprintf("telemetry.replay[%d]", i)
		if r.Path == "" {
			fe.Add(p+".path", "required: a gpusim calibrate telemetry Parquet file")
		}
		if r.Node == "" {
			fe.Add(p+".node", "required: the node the file's GPUs belong to")
		}
		if r.At < 0 {
			fe.Add(p+".at", "must be >= 0")
		}
		if !(r.MaxClockMHz > 0) || math.IsInf(r.MaxClockMHz, 0) {
			fe.Add(p+".maxClockMHz", "must be > 0 (the GPU's maximum SM clock, e.g. 1980 for H100 SXM)")
		}
		s.validateECC(&fe, p+".eccHazard", r.ECCHazard)
	}
	return fe
}

// validateECC checks an eccHazard multiplier: 0 (unset) or >= 1; above 1 it
// needs the failures: block's node process, whose hazard it multiplies.
func (s *Scenario) validateECC(fe *sim.FieldErrors, path string, m float64) {
	switch {
	case m == 0:
	case !(m >= 1) || math.IsInf(m, 0):
		fe.Add(path, "must be a finite multiplier >= 1")
	case m > 1 && (s.Failures == nil || !s.Failures.Node.on() || s.Failures.Random != nil && !*s.Failures.Random):
		fe.Add(path, "multiplies the node failure hazard: needs a failures: block with its node process on")
	}
}

// eccOn reports whether some episode source has an ECC multiplier > 1.
func (t *TelemetrySpec) eccOn() bool {
	if t.Model != nil && t.Model.ECCHazard > 1 {
		return true
	}
	for _, r := range t.Replay {
		if r.ECCHazard > 1 {
			return true
		}
	}
	return false
}

// TelemetryConfig returns the engine's telemetry settings for cluster c (a
// fresh source: each engine consumes its own), or nil without a telemetry:
// block. Model episodes use the RNG stream "telemetry/episodes".
func (s *Scenario) TelemetryConfig(c *sim.Cluster) (*sim.TelemetryConfig, error) {
	t := s.Telemetry
	if t == nil {
		return nil, nil
	}
	var sources []sim.DegradationSource
	if m := t.Model; m != nil {
		nodes := make([]sim.NodeID, c.NumNodes())
		for i := range nodes {
			nodes[i] = sim.NodeID(i)
		}
		g, err := sim.NewDegradationGenerator(s.SeedValue(), sim.DegradationModel{Nodes: nodes, Every: sim.Duration(m.Every),
			Duration: m.Duration.dist(sim.Hour), ClockMin: m.Clock.Min, ClockMax: m.Clock.Max, ECC: m.ECCHazard})
		if err != nil {
			return nil, s.fieldErr("telemetry.model", err)
		}
		sources = append(sources, g)
	}
	if len(t.Replay) > 0 {
		var eps []sim.Degradation
		for i := range t.Replay {
			e, err := s.replayEpisodes(c, i)
			if err != nil {
				return nil, err
			}
			eps = append(eps, e...)
		}
		sources = append(sources, sim.NewDegradationList(eps))
	}
	tc := &sim.TelemetryConfig{Source: sources[0]}
	if len(sources) > 1 {
		tc.Source = &mergedDegradations{src: sources}
	}
	if t.eccOn() && s.Failures != nil {
		// the node process's MTBF and repair (failureProcesses)
		f := s.Failures.Node
		ec := &sim.ECCCoupling{NodeMTBF: make([]sim.Duration, c.NumNodes()), Repair: f.repair()}
		for n := range ec.NodeMTBF {
			nd := c.Node(sim.NodeID(n))
			ec.NodeMTBF[n] = f.mtbfFor(nd.GPUModel, nodeMTBF(nd.GPUs))
		}
		tc.ECC = ec
	}
	return tc, nil
}

// mergedDegradations merges sources by At (ties: the earlier source first).
type mergedDegradations struct {
	src  []sim.DegradationSource
	head []sim.Degradation
	ok   []bool
}

func (m *mergedDegradations) Next() (sim.Degradation, bool) {
	if m.head == nil {
		m.head = make([]sim.Degradation, len(m.src))
		m.ok = make([]bool, len(m.src))
		for i, s := range m.src {
			m.head[i], m.ok[i] = s.Next()
		}
	}
	best := -1
	for i := range m.src {
		if m.ok[i] && (best < 0 || m.head[i].At < m.head[best].At) {
			best = i
		}
	}
	if best < 0 {
		return sim.Degradation{}, false
	}
	d := m.head[best]
	m.head[best], m.ok[best] = m.src[best].Next()
	return d, true
}

// replayEpisodes reads telemetry.replay[i] into episodes on its node.
func (s *Scenario) replayEpisodes(c *sim.Cluster, i int) ([]sim.Degradation, error) {
	r := s.Telemetry.Replay[i]
	p := fmt.Sprintf("telemetry.replay[%d]", i)
	node := sim.NodeID(-1)
	for n := range c.NumNodes() {
		if c.Node(sim.NodeID(n)).Name == r.Node {
			node = sim.NodeID(n)
			break
		}
	}
	if node < 0 {
		return nil, s.fieldErr(p+".node", fmt.Errorf("no node named %q in the cluster", r.Node))
	}
	path := s.Resolve(r.Path)
	rows, err := ReadTelemetryParquet(path)
	if err != nil {
		return nil, s.fieldErr(p+".path", err)
	}
	return TelemetryEpisodes(rows, node, sim.Time(r.At), r.MaxClockMHz, r.ECCHazard), nil
}

// TelemetryRow is one GPU sample of a `gpusim calibrate telemetry` file (the
// columns the replay uses).
type TelemetryRow struct {
	TimeUS          int64 // µs since the Unix epoch
	GPU             int32
	SMClockMHz      float64
	ThrottleReasons int64 // -1 unsupported
	ECCUncorrected  int64 // -1 unsupported
}

// ReadTelemetryParquet reads the time, gpu, sm_clock_mhz, throttle_reasons
// and ecc_uncorrected columns of a calibrate telemetry (or samples) file.
func ReadTelemetryParquet(path string) ([]TelemetryRow, error) {
	f, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, err // names the file
	}
	defer f.Close()
	fr, err := pqarrow.NewFileReader(f, pqarrow.ArrowReadProperties{}, memory.NewGoAllocator())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer tbl.Release()
	rr := array.NewTableReader(tbl, 0)
	defer rr.Release()
	sc := tbl.Schema()
	col := func(name string, want arrow.Type) (int, error) {
		ix := sc.FieldIndices(name)
		if len(ix) != 1 {
			return 0, fmt.Errorf("%s: no column %q (want a gpusim calibrate telemetry file)", path, name)
		}
		if got := sc.Field(ix[0]).Type.ID(); got != want {
			return 0, fmt.Errorf("%s: column %q is %s, want %s", path, name, got, want)
		}
		return ix[0], nil
	}
	var ix [5]int
	for k, c := range []struct {
		name string
		t    arrow.Type
	}{{"time", arrow.TIMESTAMP}, {"gpu", arrow.INT32}, {"sm_clock_mhz", arrow.FLOAT64}, {"throttle_reasons", arrow.INT64}, {"ecc_uncorrected", arrow.INT64}} {
		if ix[k], err = col(c.name, c.t); err != nil {
			return nil, err
		}
	}
	var out []TelemetryRow
	for rr.Next() {
		rec := rr.Record()
		ts := rec.Column(ix[0]).(*array.Timestamp)
		gp := rec.Column(ix[1]).(*array.Int32)
		ck := rec.Column(ix[2]).(*array.Float64)
		th := rec.Column(ix[3]).(*array.Int64)
		ec := rec.Column(ix[4]).(*array.Int64)
		for k := range int(rec.NumRows()) {
			if ts.IsNull(k) || gp.IsNull(k) {
				return nil, fmt.Errorf("%s: row %d: null time or gpu", path, len(out)+1)
			}
			row := TelemetryRow{TimeUS: int64(ts.Value(k)), GPU: gp.Value(k), SMClockMHz: -1, ThrottleReasons: -1, ECCUncorrected: -1}
			if !ck.IsNull(k) {
				row.SMClockMHz = ck.Value(k)
			}
			if !th.IsNull(k) {
				row.ThrottleReasons = th.Value(k)
			}
			if !ec.IsNull(k) {
				row.ECCUncorrected = ec.Value(k)
			}
			out = append(out, row)
		}
	}
	return out, nil
}

// TelemetryEpisodes turns a file's samples (time then GPU order) into
// episodes on node n. Time origin: the first sample is at virtual time at.
// A GPU is slowed while its throttle reasons include a SlowdownThrottleMask
// bit, at factor sm_clock_mhz / maxClock (clamped to (0, 1]); each sample
// holds until the GPU's next sample (the last one: one median interval).
// The node's factor at a time is the minimum over its GPUs. The interval that
// follows a sample at which some GPU's ecc_uncorrected count is above its
// previous sample's gets ECC multiplier ecc (when > 1). Consecutive intervals with one factor and one
// ECC multiplier form one episode.
func TelemetryEpisodes(rows []TelemetryRow, n sim.NodeID, at sim.Time, maxClock, ecc float64) []sim.Degradation {
	if len(rows) == 0 {
		return nil
	}
	t0 := rows[0].TimeUS
	// distinct sample times, in order
	var times []int64
	for _, r := range rows {
		if len(times) == 0 || r.TimeUS > times[len(times)-1] {
			times = append(times, r.TimeUS)
		}
	}
	step := int64(1_000_000)
	if len(times) > 1 {
		step = (times[len(times)-1] - times[0]) / int64(len(times)-1)
	}
	factor := make([]float64, len(times))
	hazard := make([]float64, len(times))
	for i := range factor {
		factor[i] = 1
	}
	lastECC := map[int32]int64{}
	k := 0
	for _, r := range rows {
		for times[k] < r.TimeUS {
			k++
		}
		if prev, ok := lastECC[r.GPU]; ok && ecc > 1 && prev >= 0 && r.ECCUncorrected > prev {
			hazard[k] = ecc
		}
		lastECC[r.GPU] = r.ECCUncorrected
		if r.ThrottleReasons > 0 && r.ThrottleReasons&SlowdownThrottleMask != 0 && r.SMClockMHz > 0 {
			f := min(1, r.SMClockMHz/maxClock)
			factor[k] = min(factor[k], f)
		}
	}
	var out []sim.Degradation
	for i := 0; i < len(times); {
		f, h := factor[i], hazard[i]
		j := i + 1
		for j < len(times) && factor[j] == f && hazard[j] == h {
			j++
		}
		if f < 1 || h > 1 {
			end := times[len(times)-1] + step
			if j < len(times) {
				end = times[j]
			}
			out = append(out, sim.Degradation{At: at.Add(sim.Duration(times[i] - t0)), Duration: sim.Duration(end - times[i]), Node: n, Clock: f, ECC: h})
		}
		i = j
	}
	return out
}
