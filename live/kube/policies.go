package kube

import (
	"fmt"
	"slices"
	"strings"
)

// GrowingPolicies are the policies known to accept jobs submitted after
// their first call (sim.Live.Submit): their per-job tables grow. Other
// policies size those tables once, from the jobs present at their first
// call, and would index past them; Run refuses them with an error until
// they grow too (TestLiveSubmitGrowth checks this list).
var GrowingPolicies = []string{"antman", "conservative-backfill", "easy-backfill", "fifo", "gandiva", "kueue", "lucid", "priority", "qssf", "sjf", "slurm", "themis", "tiresias", "volcano"}

// policyGrows reports whether the policy named name is in GrowingPolicies.
func policyGrows(name string) bool {
	base, _, _ := strings.Cut(name, " ")
	return slices.Contains(GrowingPolicies, base)
}

// CheckPolicy returns an error when Run would refuse policy name (it is not
// in GrowingPolicies), for a command line to report before connecting.
func CheckPolicy(name string) error {
	if policyGrows(name) {
		return nil
	}
	return fmt.Errorf("policy %s does not yet accept jobs submitted while it runs (its per-job tables are sized at its first call); use one of %s (docs/live-kubernetes.md)", name, strings.Join(GrowingPolicies, ", "))
}
