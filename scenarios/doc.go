// Package scenarios reads gpusim scenario files (apiVersion gpusim/v1alpha1, kind
// Scenario) and assembles runs from them.
//
// Loading has three stages, as in Kubernetes and Kueue:
//
//	decode   yaml.v3 with KnownFields(true): a typo is an error with its line
//	default  named defaults (DefaultSeed, DefaultSampleInterval, ...)
//	validate every problem at once, each with file:line and field path
//
// --set path=value overrides (e.g. --set seed=7, --set policies[1].params.window=1h,
// --set workload.synthetic.load=0.9) are applied to the YAML tree before decoding,
// so they are validated like the file itself.
//
// Run builds the cluster and workload once and runs each selected policy in its
// own engine, in parallel; every result is identical to running that policy alone.
package scenarios
