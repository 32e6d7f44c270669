package sim

import (
	"hash/fnv"
	"math/rand/v2"
)

// Stream returns a deterministic random stream for (master seed, name). Streams with
// different names are independent, so adding draws to one component never shifts
// another's sequence. Conventional names: "arrivals", "sizes", "durations",
// "failures", "policy/<name>".
func Stream(master uint64, name string) *rand.Rand {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return rand.New(rand.NewPCG(master, h.Sum64()))
}
