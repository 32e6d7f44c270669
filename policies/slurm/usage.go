package slurm

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpusim/gpusim/sim"
)

// usageModel is params.priority.usageModel: how recorded usage decays and
// how a calc step charges new usage.
type usageModel uint8

const (
	// usageExact (the default, gpusim's model before): usage decays
	// continuously by 2^(-t/half-life); new usage is charged as it accrued.
	usageExact usageModel = iota
	// usageSlurm follows priority_multifactor.c: _decay_thread sets the
	// per-second factor decay_factor = 1 - 0.693/half-life (half-life in
	// seconds) and at each pass multiplies every association's usage_raw by
	// decay_factor^Δ, Δ the seconds since the previous pass (_apply_decay).
	// _apply_new_usage then charges a run's usage since max(previous pass,
	// start) as run_delta * decay_factor^run_delta * billable TRES: the new
	// usage is decayed as if all of it were run_delta old. An ended run
	// charged at its end (AccountingStorageEnforce=limits) is weighted the
	// same way and then decays with the rest at the next pass. With classic
	// fair share the factors lag a pass (classicLag).
	usageSlurm
)

func parseUsageModel(s string) (usageModel, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "exact":
		return usageExact, nil
	case "slurm":
		return usageSlurm, nil
	}
	return 0, fmt.Errorf("priority.usageModel: unknown %q (want exact or slurm)", s)
}

// decayFactor is the decay of recorded usage from one calc step to the next.
// Slurm's passes take time(NULL): whole seconds of the wall clock (t=0 is
// a whole second).
func (s *Slurm) decayFactor(from, to sim.Time) float64 {
	if s.half <= 0 || to <= from {
		return 1
	}
	if s.usage == usageSlurm {
		return math.Pow(1-0.693/s.half.Seconds(), wholeSeconds(from, to))
	}
	return math.Exp2(-float64(to-from) / float64(s.half))
}

// newUsage is the usage charged for gpus GPUs run from from to to: gpus times
// the run time, in Slurm's model in whole seconds and weighted by the decay
// over that time (_apply_new_usage's run_delta * decay_factor^run_delta).
func (s *Slurm) newUsage(gpus float64, from, to sim.Time) float64 {
	if s.usage == usageSlurm {
		d := wholeSeconds(from, to)
		u := gpus * d
		if s.half > 0 {
			u *= math.Pow(1-0.693/s.half.Seconds(), d)
		}
		return u
	}
	return gpus * to.Sub(from).Seconds()
}

// wholeSeconds is to - from with both rounded down to whole seconds.
func wholeSeconds(from, to sim.Time) float64 {
	return math.Floor(to.Seconds()) - math.Floor(from.Seconds())
}

// classicLag reports whether fair-share factors are computed from the usage
// before a calc step's decay and new usage: classic fair share in Slurm's
// usage model. _decay_thread calls _set_children_usage_efctv (the accounts'
// effective usage) before _apply_decay and before the job loop charges the
// running jobs' new usage; a user's effective usage is computed from its
// account's when one of its jobs next gets a priority. So a pass ranks by the
// usage as the previous pass and the end charges since left it (fidelity
// fixture fairshare-classic: at the pass at 57.9 s account c, whose only
// usage was c1's end charge, gets 2^-5 and account a, whose running jobs were
// not yet charged, 1.0). Fair Tree computes after the new usage
// (fair_tree_decay).
func (s *Slurm) classicLag() bool {
	return s.usage == usageSlurm && !s.tree.fairTree
}
