package placement

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gpusim/gpusim/sim"
)

// topologyPlacers builds the topology-aware placements registered in New.
var topologyPlacers = map[string]func(a *placerArgs) (Placer, error){
	"topology-best-fit": func(a *placerArgs) (Placer, error) {
		if err := a.done(); err != nil {
			return nil, err
		}
		return newTopologyBestFit(), nil
	},
	"tas":     newTAS,
	"hived":   newHived,
	"binpack": newBinpack,
	"fgd":     newFGD,
	"pack":    newPack,
}

// placerArgs are a placement's "key=value" arguments, each usable once.
type placerArgs struct {
	keys, vals []string
	used       []bool
	known      []string
}

func parsePlacerArgs(s string) (*placerArgs, error) {
	a := &placerArgs{}
	if strings.TrimSpace(s) == "" {
		return a, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return nil, fmt.Errorf("argument %q: want key=value", kv)
		}
		for _, prev := range a.keys {
			if prev == k {
				return nil, fmt.Errorf("%s: given twice", k)
			}
		}
		a.keys, a.vals, a.used = append(a.keys, k), append(a.vals, v), append(a.used, false)
	}
	return a, nil
}

// str returns the value of key and whether it was given.
func (a *placerArgs) str(key string) (string, bool) {
	a.known = append(a.known, key)
	for i, k := range a.keys {
		if k == key {
			a.used[i] = true
			return a.vals[i], true
		}
	}
	return "", false
}

// levelAliases are the names other schedulers give the sim levels (Kueue's
// example Topology levels block/rack/hostname, the gpu.clique label, NUMA).
var levelAliases = map[string]sim.Level{
	"clique":   sim.LevelNVLink,
	"numa":     sim.LevelSocket,
	"hostname": sim.LevelNode,
	"rack":     sim.LevelLeaf,
	"block":    sim.LevelSpine,
}

// level parses key as a topology level name (or an alias in levelAliases).
func (a *placerArgs) level(key string) (sim.Level, bool, error) {
	v, ok := a.str(key)
	if !ok {
		return 0, false, nil
	}
	if l, ok := levelAliases[v]; ok {
		return l, true, nil
	}
	l, err := sim.ParseLevel(v)
	if err != nil {
		return 0, true, fmt.Errorf("%s: %w (aliases: clique, numa, hostname, rack, block)", key, err)
	}
	return l, true, nil
}

// weight parses key as a finite number >= 0 (def when absent).
func (a *placerArgs) weight(key string, def float64) (float64, error) {
	v, ok := a.str(key)
	if !ok {
		return def, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1e6 {
		return 0, fmt.Errorf("%s: must be a number in 0..1e6, got %q", key, v)
	}
	return f, nil
}

// boolean parses key as true/false (def when absent).
func (a *placerArgs) boolean(key string, def bool) (bool, error) {
	v, ok := a.str(key)
	if !ok {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s: must be true or false, got %q", key, v)
	}
	return b, nil
}

// done reports the first argument nobody asked for.
func (a *placerArgs) done() error {
	for i, k := range a.keys {
		if !a.used[i] {
			if len(a.known) == 0 {
				return fmt.Errorf("unknown argument %q (this placement takes none)", k)
			}
			return fmt.Errorf("unknown argument %q (known: %s)", k, strings.Join(a.known, ", "))
		}
	}
	return nil
}
