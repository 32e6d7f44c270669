package workloads

import (
	"bytes"
	"testing"

	"gopkg.in/yaml.v3"
)

// FuzzDecodeValidateGenerate decodes a Synthetic from YAML (unknown fields rejected),
// then SetDefaults, Validate and (when valid, with jobs bounded) Generate must never
// panic, and generated jobs must pass sim.JobSpec.Validate.
func FuzzDecodeValidateGenerate(f *testing.F) {
	for _, seed := range []string{
		"jobs: 10\n",
		"jobs: 5\nload: 2\narrival: {process: diurnal, peakToTrough: 5}\n",
		"jobs: 5\narrival: {process: bursty, burstFactor: 20, meanBurstS: 60, burstFraction: 0.3}\n",
		"jobs: 8\nclasses:\n- {class: training, weight: 1, gpus: {values: [16, 12, 3], weights: [1, 1, 1]}}\n",
		"jobs: 8\nclasses:\n- class: serving\n  weight: 1\n  gpuMilli: {values: [100]}\n  duration: {medianS: 10, sigma: 3, minS: 1, maxS: 20}\n  walltime: {factorMin: 0.5, roundToS: 7}\n",
		"jobs: 3\nqueues: [{name: a, weight: 1, classes: [training]}]\n",
		"jobs: 3\nteams: [{name: t, weight: 1, users: 3}]\nuserSkew: 2\n",
		"jobs: 4\nclasses: [{class: preprocessing, weight: 1, gpus: {values: [0]}}]\n",
		"load: .nan\n",
		"workload:\n  synthetic:\n    jobs: 4\n    load: 0.5\n",
	} {
		f.Add([]byte(seed), uint64(1), int64(128), int32(8))
	}
	f.Fuzz(func(t *testing.T, data []byte, seed uint64, gpus int64, perNode int32) {
		var s Synthetic
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&s); err != nil {
			// DecodeYAML (both document forms) must not panic either.
			if s2, err := DecodeYAML(data); err == nil {
				s = s2
			} else {
				return
			}
		}
		if s.Jobs > 200 || s.Jobs < -1 {
			s.Jobs = 200
		}
		s.SetDefaults()
		if len(s.Validate()) > 0 {
			return
		}
		jobs, err := s.Generate(seed, gpus%100000, perNode%1024)
		if err != nil {
			return
		}
		for i := range jobs {
			if err := jobs[i].Validate(); err != nil {
				t.Fatalf("job %d invalid: %v (%+v)", i, err, jobs[i])
			}
		}
	})
}
