package scenarios

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
)

// PowerSpec is the scenario block `power:` (docs/power.md): GPU power curves,
// an optional cluster power cap and an optional carbon-intensity series.
// Without it nothing of power runs and every output is as before.
type PowerSpec struct {
	// Models overrides or adds power curves by GPU model name; models not
	// listed use DefaultGPUPower.
	Models map[string]GPUPowerSpec `yaml:"models"`
	// Cap is the cluster power cap (none when absent).
	Cap *PowerCapSpec `yaml:"cap"`
	// Carbon is the grid carbon-intensity series (none when absent).
	Carbon *CarbonSpec `yaml:"carbon"`
}

// GPUPowerSpec is one GPU model's curve in watts (sim.GPUPower); a zero field
// keeps the default's value.
type GPUPowerSpec struct {
	IdleW   float64 `yaml:"idleW"`
	MaxW    float64 `yaml:"maxW"`
	MinCapW float64 `yaml:"minCapW"`
}

// PowerCapSpec is `power.cap`.
type PowerCapSpec struct {
	Watts float64 `yaml:"watts"` // the cap over all GPUs, idle ones included; > 0
	Mode  string  `yaml:"mode"`  // admit (default) or throttle
	// SpeedExponent k (throttle): a job given fraction φ of its dynamic power
	// runs at speed φ^k. Default 1/3.
	SpeedExponent float64 `yaml:"speedExponent"`
}

// CarbonSpec is `power.carbon`: a CSV of hourly intensities (gCO2e/kWh).
type CarbonSpec struct {
	// Path of the CSV, relative to the scenario file: a header row with a
	// timestamp column and Column; one row per step, in time order.
	Path string `yaml:"path"`
	// Column holding the intensity (default avg_CI, as in the EIA/SustainDC files).
	Column string `yaml:"column"`
	// Start is the series time at virtual time 0 (RFC 3339, e.g.
	// 2022-06-01T00:00:00Z); default the first row. It must fall on a row.
	Start string `yaml:"start"`
}

// DefaultGPUPower is the power curve of the GPU models gpusim knows, in watts.
// MaxW is the board power (TDP) of NVIDIA's datasheets; MinCapW is the lowest
// power limit the driver accepts (nvidia-smi -q "Min Power Limit"); IdleW is an
// assumption of the order of nvidia-smi idle readings of an unused board
// (about a tenth of TDP). docs/power.md lists the sources; override any of them
// with power.models.
var DefaultGPUPower = map[string]sim.GPUPower{
	"H100-SXM-80GB":  {IdleW: 70, MaxW: 700, MinCapW: 200},
	"H100-80GB-HBM3": {IdleW: 70, MaxW: 700, MinCapW: 200},
	"A100-SXM-80GB":  {IdleW: 50, MaxW: 400, MinCapW: 100},
	"A100-SXM4-80GB": {IdleW: 50, MaxW: 400, MinCapW: 100},
	"A100-80G":       {IdleW: 50, MaxW: 400, MinCapW: 100},
	"A100":           {IdleW: 50, MaxW: 400, MinCapW: 100},
	"B200":           {IdleW: 100, MaxW: 1000, MinCapW: 200},
	"L40S":           {IdleW: 35, MaxW: 350, MinCapW: 100},
	"A10":            {IdleW: 15, MaxW: 150, MinCapW: 100},
	"T4":             {IdleW: 10, MaxW: 70, MinCapW: 60},
	"V100":           {IdleW: 40, MaxW: 300, MinCapW: 150},
	"V100M16":        {IdleW: 40, MaxW: 300, MinCapW: 150},
	"V100M32":        {IdleW: 40, MaxW: 300, MinCapW: 150},
	"P100":           {IdleW: 30, MaxW: 250, MinCapW: 125},
	"K80":            {IdleW: 25, MaxW: 150, MinCapW: 75}, // per GPU: a K80 board is 2 GPUs, 300 W
}

func (s *Scenario) validatePower() sim.FieldErrors {
	var fe sim.FieldErrors
	p := s.Power
	if p == nil || p.Carbon == nil {
		for i := range s.Policies {
			if s.Policies[i].Name == "carbon-aware" {
				fe.Add(fmt.Sprintf("policies[%d].name", i), "carbon-aware needs a carbon series (power.carbon)")
			}
		}
	}
	if p == nil {
		return fe
	}
	if s.sharingOn() {
		fe.Add("power", "power accounting does not support device-level GPU sharing (cluster.pools[].sharing / interference) yet")
	}
	names := make([]string, 0, len(p.Models))
	for m := range p.Models {
		names = append(names, m)
	}
	sort.Strings(names)
	for _, m := range names {
		g, path := p.Models[m], "power.models."+m
		if g.IdleW < 0 || math.IsNaN(g.IdleW) {
			fe.Add(path+".idleW", "must be >= 0")
		}
		if g.MaxW < 0 || math.IsNaN(g.MaxW) || math.IsInf(g.MaxW, 0) {
			fe.Add(path+".maxW", "must be a finite value >= 0")
		}
		if c := s.gpuPower(m); c.MaxW < c.IdleW {
			fe.Add(path+".maxW", "must be >= idleW (%g)", c.IdleW)
		}
		if g.MinCapW < 0 {
			fe.Add(path+".minCapW", "must be >= 0")
		}
	}
	if c := p.Cap; c != nil {
		if !(c.Watts > 0) || math.IsInf(c.Watts, 0) {
			fe.Add("power.cap.watts", "must be > 0 (watts over all GPUs)")
		}
		if c.Mode != "" && c.Mode != "admit" && c.Mode != "throttle" {
			fe.Add("power.cap.mode", "must be admit or throttle, not %q", c.Mode)
		}
		if c.Mode == "throttle" && s.Failures != nil {
			// fault-tolerant recovery recomputes a running gang's speed in place
			// and would drop its power throttle
			fe.Add("power.cap.mode", "throttle is not supported together with failures: (use admit)")
		}
		if c.SpeedExponent < 0 || c.SpeedExponent > 3 || math.IsNaN(c.SpeedExponent) {
			fe.Add("power.cap.speedExponent", "must be in [0, 3] (0 = default 1/3)")
		}
		for i := range s.Policies {
			pol, err := policies.NewWithEnv(s.Policies[i].Name, paramsNode(&s.Policies[i]), s.env())
			if err != nil {
				continue // reported by validatePolicyParams
			}
			if h, ok := pol.(sim.HonorsPowerCap); !ok || !h.HonorsPowerCap() {
				fe.Add(fmt.Sprintf("policies[%d].name", i), "%s does not check the power cap (power.cap works with fifo, priority, sjf, easy-backfill, conservative-backfill and carbon-aware)", s.Policies[i].Name)
			}
		}
	}
	if c := p.Carbon; c != nil {
		if c.Path == "" {
			fe.Add("power.carbon.path", "required: a CSV of hourly carbon intensity (e.g. data/carbon/CISO_2022_hourly.csv)")
		} else if cs, err := LoadCarbonCSV(s.Resolve(c.Path), c.Column, c.Start); err != nil {
			fe.Add("power.carbon", "%v", err)
		} else {
			s.carbon = cs
		}
	}
	return fe
}

// gpuPower is model m's curve: the default with power.models' non-zero fields.
func (s *Scenario) gpuPower(m string) sim.GPUPower {
	c := DefaultGPUPower[m]
	if o, ok := s.Power.Models[m]; ok {
		if o.IdleW > 0 {
			c.IdleW = o.IdleW
		}
		if o.MaxW > 0 {
			c.MaxW = o.MaxW
		}
		if o.MinCapW > 0 {
			c.MinCapW = o.MinCapW
		}
	}
	return c
}

// PowerConfig returns the engine's power settings for cluster c, or nil when
// the scenario has no power block (then every output is as without it).
func (s *Scenario) PowerConfig(c *sim.Cluster) (*sim.PowerConfig, error) {
	p := s.Power
	if p == nil {
		return nil, nil
	}
	pc := &sim.PowerConfig{Models: map[string]sim.GPUPower{}, Carbon: s.carbon}
	for i, m := range c.Models() {
		if c.ModelCapacity(i) == 0 {
			continue
		}
		_, known := DefaultGPUPower[m]
		o, given := p.Models[m]
		if !known && (!given || o.MaxW == 0) {
			return nil, s.fieldErr("power.models", fmt.Errorf("no power curve for GPU model %q: add power.models.%s: {idleW: ..., maxW: ..., minCapW: ...}", m, m))
		}
		pc.Models[m] = s.gpuPower(m)
	}
	if cp := p.Cap; cp != nil {
		idle := 0.0
		for i, m := range c.Models() {
			idle += pc.Models[m].IdleW * float64(c.ModelCapacity(i))
		}
		if cp.Watts < idle {
			return nil, s.fieldErr("power.cap.watts", fmt.Errorf("%g W is below the cluster's idle draw (%g W): no job could ever start", cp.Watts, idle))
		}
		pc.CapW, pc.SpeedExponent = cp.Watts, cp.SpeedExponent
		if cp.Mode == "throttle" {
			pc.Mode = sim.PowerCapThrottle
		}
	}
	return pc, nil
}

// LoadCarbonCSV reads an hourly carbon-intensity CSV (the EIA-930 /
// SustainDC layout: timestamp "2022-01-01 00:00:00+00:00", then columns, one
// of which is the intensity in gCO2e/kWh). column "" means avg_CI; start ""
// means the first row, else the row at that RFC 3339 time becomes virtual time
// 0 (the rows before it go to the end: the series is cyclic). Blank
// intensities are filled by linear interpolation between the nearest valued
// rows (held flat at the ends). Errors name the file and line.
func LoadCarbonCSV(path, column, start string) (*sim.CarbonSeries, error) {
	if column == "" {
		column = "avg_CI"
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	line, tcol, vcol := 0, -1, -1
	var times []time.Time
	var vals []float64
	var blank []bool
	for sc.Scan() {
		line++
		rec := strings.Split(strings.TrimRight(sc.Text(), "\r"), ",")
		if line == 1 {
			for i, h := range rec {
				switch strings.TrimSpace(h) {
				case "timestamp":
					tcol = i
				case column:
					vcol = i
				}
			}
			if tcol < 0 || vcol < 0 {
				return nil, fmt.Errorf("%s:1: header needs columns timestamp and %s", path, column)
			}
			continue
		}
		if len(rec) <= max(tcol, vcol) {
			return nil, fmt.Errorf("%s:%d: %d fields, want at least %d", path, line, len(rec), max(tcol, vcol)+1)
		}
		ts, err := parseCarbonTime(rec[tcol])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: timestamp: %v", path, line, err)
		}
		if n := len(times); n >= 2 && !ts.Equal(times[n-1].Add(times[1].Sub(times[0]))) {
			return nil, fmt.Errorf("%s:%d: timestamp: %s is not %s after the previous row (rows must be evenly spaced)", path, line, rec[tcol], times[1].Sub(times[0]))
		} else if n == 1 && !ts.After(times[0]) {
			return nil, fmt.Errorf("%s:%d: timestamp: not after the previous row", path, line)
		}
		v := strings.TrimSpace(rec[vcol])
		x, isBlank := 0.0, v == ""
		if !isBlank {
			if x, err = strconv.ParseFloat(v, 64); err != nil || !(x >= 0) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("%s:%d: %s: %q is not a number >= 0 (gCO2e/kWh)", path, line, column, v)
			}
		}
		times, vals, blank = append(times, ts), append(vals, x), append(blank, isBlank)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(vals) < 2 {
		return nil, fmt.Errorf("%s: want at least 2 rows, found %d", path, len(vals))
	}
	if err := interpolateBlanks(vals, blank); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", path, column, err)
	}
	step := times[1].Sub(times[0])
	off := 0
	if start != "" {
		t0, err := time.Parse(time.RFC3339, start)
		if err != nil {
			return nil, fmt.Errorf("start: %q is not an RFC 3339 time (e.g. 2022-06-01T00:00:00Z)", start)
		}
		d := t0.Sub(times[0])
		if d < 0 || d%step != 0 || int(d/step) >= len(vals) {
			return nil, fmt.Errorf("start: %s is not the time of a row of %s (%s to %s, every %s)", start, path, times[0].Format(time.RFC3339), times[len(times)-1].Format(time.RFC3339), step)
		}
		off = int(d / step)
	}
	rot := append(append(make([]float64, 0, len(vals)), vals[off:]...), vals[:off]...)
	return sim.NewCarbonSeries(sim.Duration(step/time.Microsecond), rot)
}

func parseCarbonTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{"2006-01-02 15:04:05-07:00", time.RFC3339} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q: want e.g. 2022-01-01 00:00:00+00:00", s)
}

// interpolateBlanks fills blank values linearly between their valued
// neighbours (flat before the first and after the last value).
func interpolateBlanks(v []float64, blank []bool) error {
	prev := -1
	for i := range v {
		if blank[i] {
			continue
		}
		switch {
		case prev < 0:
			for k := 0; k < i; k++ {
				v[k] = v[i]
			}
		case i-prev > 1:
			for k := prev + 1; k < i; k++ {
				v[k] = v[prev] + (v[i]-v[prev])*float64(k-prev)/float64(i-prev)
			}
		}
		prev = i
	}
	if prev < 0 {
		return errors.New("every value is blank")
	}
	for k := prev + 1; k < len(v); k++ {
		v[k] = v[prev]
	}
	return nil
}
