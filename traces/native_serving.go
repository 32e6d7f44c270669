package traces

import (
	"math"

	"github.com/gpusim/gpusim/sim"
)

// ServingColumns are the optional native columns (CSV and Parquet) that make a
// job a serving job (docs/serving.md): serving_rate_rps (requests/s, constant),
// serving_service_ms (one request alone on the GPU at full speed) and
// serving_sla_ms (P99 latency SLA). All three or none; the writers do not write
// them. A scenario's per-class `serving:` spec applies only to jobs without them.
var ServingColumns = []string{"serving_rate_rps", "serving_service_ms", "serving_sla_ms"}

// servingCols reads the serving columns of one row into j.Serving (a prepared
// sim.ServingSpec), or leaves it nil when none is given.
func servingCols(src fieldSource, j *sim.JobSpec, file string, line int) error {
	var v [3]float64
	n := 0
	for i, c := range [...]int{cServingRate, cServingService, cServingSLA} {
		x, ok, err := src.num(c)
		if err != nil {
			return rowErr(file, line, colName(c), "%v", err)
		}
		if !ok {
			continue
		}
		if !(x >= 0) || math.IsInf(x, 0) {
			return rowErr(file, line, colName(c), "must be a finite number >= 0, got %v", x)
		}
		if i > 0 && math.Round(x*1e3) < 1 {
			return rowErr(file, line, colName(c), "must be at least 0.001 ms, got %v", x)
		}
		v[i] = x
		n++
	}
	switch {
	case n == 0:
		return nil
	case n < 3:
		for _, c := range [...]int{cServingRate, cServingService, cServingSLA} {
			if _, ok, _ := src.num(c); !ok {
				return rowErr(file, line, colName(c), "missing value (a serving job needs serving_rate_rps, serving_service_ms and serving_sla_ms)")
			}
		}
	}
	sp := &sim.ServingSpec{Rate: v[0], Service: sim.Duration(math.Round(v[1] * 1e3)), SLA: sim.Duration(math.Round(v[2] * 1e3))}
	if err := sp.Prepare(); err != nil {
		return rowErr(file, line, colName(cServingRate), "%v", err)
	}
	j.Serving = sp
	return nil
}
