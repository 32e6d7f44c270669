package slurm_test

import (
	"testing"

	"github.com/gpusim/gpusim/internal/paramfuzz"
)

// FuzzParams: any slurm params (slurm.conf partitions with node expressions,
// QOS, accounts, reservations, SchedulerParameters) in a scenario go through
// validate, node matching and job mapping included, without a panic, every
// error located.
func FuzzParams(f *testing.F) {
	paramfuzz.AddExampleSeeds(f, "../../scenarios/examples", "slurm")
	f.Add([]byte("partitions:\n  - {name: a, nodes: \"box-[0-1]\", default: true, maxTime: 1h, defaultTime: 10m, priorityTier: 2, preemptMode: REQUEUE}\n  - {name: b, nodes: [box-1, \"1-1\"]}\npartitionMapping: {team-a/lq: b}\nqos: [{name: hi, priority: 10, preempt: [normal]}]\nqosMapping: {training: hi}\naccounts: [{name: t, shares: 2, users: [{name: u}], accounts: [{name: s}]}]\ndefaultAccount: t\nschedulerParameters: {bf_window: 60, bf_max_job_test: 10, sched_interval: 30s}\npreemptType: preempt/qos\npreemptMode: REQUEUE\nreservations: [{name: r, nodes: \"box-*\", startTime: 10, duration: 1h, users: [u]}]\nenforcePartLimits: true\ntopologyPlugin: tree\n"))
	f.Add([]byte("partitions: [{name: a, nodes: \"gpu-[0-3,8]\", default: true}]\n"))
	// A bound past MaxInt looped forever (found reviewing the hostlist parser).
	f.Add([]byte("partitions: [{name: a, nodes: \"box-[9223372036854775807]\", default: true}, {name: b, nodes: \"box-[0-99999999999999999999]\"}]\n"))
	f.Fuzz(func(t *testing.T, params []byte) {
		paramfuzz.Check(t, "slurm", params)
	})
}
