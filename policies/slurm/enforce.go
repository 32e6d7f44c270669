package slurm

import (
	"fmt"
	"strings"
)

// parseEnforce reads params.accountingStorageEnforce (slurm.conf's
// AccountingStorageEnforce: a comma-separated list of associations, limits,
// qos, safe, wckeys, nojobs, nosteps, all, or none) and reports whether it
// includes limits, as limits, safe and all do.
//
// It matters to fair share: an ended run's usage since the decay thread's
// last pass is charged at its end only with limits. acct_policy.c
// _adjust_limit_usage calls priority_g_job_end (priority_multifactor.c
// priority_p_job_end → _apply_new_usage) only when
// accounting_enforce & ACCOUNTING_ENFORCE_LIMITS; otherwise the decay
// thread's next pass skips the finished job (decay_apply_new_usage: "Don't
// need to handle finished jobs"), so that part of its usage is never
// recorded. The fidelity fixture fairshare shows it (docs/fidelity.md).
//
// Unset, it is "associations,limits", which charges every run in full
// (gpusim's model before); Slurm's own default is none.
func parseEnforce(s string) (limits bool, err error) {
	v := strings.TrimSpace(s)
	if v == "" {
		return true, nil
	}
	for _, f := range strings.Split(v, ",") {
		switch strings.ToLower(strings.TrimSpace(f)) {
		case "limits", "safe", "all":
			limits = true
		case "associations", "qos", "wckeys", "nojobs", "nosteps", "none", "0":
		default:
			return false, fmt.Errorf("accountingStorageEnforce: unknown %q (want a comma-separated list of associations, limits, qos, safe, wckeys, nojobs, nosteps, all or none)", strings.TrimSpace(f))
		}
	}
	return limits, nil
}
