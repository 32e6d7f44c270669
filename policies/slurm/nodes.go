package slurm

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/gpusim/gpusim/sim"
)

// checkNodeExpr validates the syntax of one node expression (before the cluster
// is known).
func checkNodeExpr(e string) error {
	e = strings.TrimSpace(e)
	if e == "" {
		return fmt.Errorf("empty node expression")
	}
	if strings.EqualFold(e, "ALL") {
		return nil
	}
	if _, _, ok, err := indexRange(e); ok || err != nil {
		return err
	}
	if strings.Contains(e, "[") && !strings.ContainsAny(e, "*?") {
		_, err := expandHostlist(e)
		return err
	}
	if _, err := path.Match(e, ""); err != nil {
		return fmt.Errorf("bad glob %q: %v", e, err)
	}
	return nil
}

// indexRange parses "7" or "0-15" (node indexes); ok is false when e is not of
// that form.
func indexRange(e string) (lo, hi int, ok bool, err error) {
	a, b, isRange := strings.Cut(e, "-")
	if !isDigits(a) || isRange && !isDigits(b) {
		return 0, 0, false, nil
	}
	lo, _ = strconv.Atoi(a)
	hi = lo
	if isRange {
		hi, _ = strconv.Atoi(b)
	}
	if hi < lo {
		return 0, 0, true, fmt.Errorf("node range %q: end before start", e)
	}
	return lo, hi, true, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// maxHostlist bounds the names one hostlist expands to (the scenario's node
// limit, 1,000,000 per pool, is below it).
const maxHostlist = 1 << 22

// expandHostlist expands a Slurm hostlist with one bracket group,
// "h100-[0-3,8]" or "gpu[00-15]", into node names.
func expandHostlist(e string) ([]string, error) {
	i := strings.IndexByte(e, '[')
	j := strings.IndexByte(e, ']')
	if i < 0 || j < i || strings.Count(e, "[") != 1 || strings.Count(e, "]") != 1 {
		return nil, fmt.Errorf("hostlist %q: want one bracket group like h100-[0-3,8]", e)
	}
	prefix, body, suffix := e[:i], e[i+1:j], e[j+1:]
	var out []string
	for _, part := range strings.Split(body, ",") {
		a, b, isRange := strings.Cut(part, "-")
		if !isDigits(a) || isRange && !isDigits(b) {
			return nil, fmt.Errorf("hostlist %q: bad range %q", e, part)
		}
		lo, errLo := strconv.Atoi(a)
		hi, errHi := lo, error(nil)
		if isRange {
			hi, errHi = strconv.Atoi(b)
		}
		// A number past the int range (Atoi clamps it to MaxInt, and k++ below
		// would wrap around forever) or a list of more names than any cluster
		// holds is an error.
		if errLo != nil || errHi != nil || hi < lo || hi-lo > 1<<20 || len(out)+hi-lo >= maxHostlist {
			return nil, fmt.Errorf("hostlist %q: bad range %q", e, part)
		}
		width := 0
		if len(a) > 1 && a[0] == '0' {
			width = len(a)
		}
		for k := lo; ; k++ { // k <= hi would never end at hi = MaxInt
			out = append(out, fmt.Sprintf("%s%0*d%s", prefix, width, k, suffix))
			if k == hi {
				break
			}
		}
	}
	return out, nil
}

// matchNodes returns the mask of nodes matched by the expressions; field names
// the configuration field in errors. Every expression must match at least one node.
func matchNodes(c *sim.Cluster, field string, exprs []string) ([]bool, error) {
	n := c.NumNodes()
	mask := make([]bool, n)
	if len(exprs) == 0 {
		return nil, fmt.Errorf("%s: no nodes given (use ALL, a glob such as %q, a hostlist or an index range)", field, c.Node(0).Name)
	}
	byName := make(map[string]int, n)
	for i := 0; i < n; i++ {
		byName[c.Node(sim.NodeID(i)).Name] = i
	}
	for _, raw := range exprs {
		e := strings.TrimSpace(raw)
		hit := 0
		switch lo, hi, isIdx, _ := indexRange(e); {
		case strings.EqualFold(e, "ALL"):
			for i := range mask {
				mask[i] = true
			}
			hit = n
		case isIdx:
			for k := lo; k <= hi && k < n; k++ {
				mask[k] = true
				hit++
			}
		case strings.Contains(e, "[") && !strings.ContainsAny(e, "*?"):
			names, err := expandHostlist(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", field, err)
			}
			for _, nm := range names {
				if k, ok := byName[nm]; ok {
					mask[k] = true
					hit++
				}
			}
		default:
			for i := 0; i < n; i++ {
				spec := c.Node(sim.NodeID(i))
				a, _ := path.Match(e, spec.Name)
				b, _ := path.Match(e, spec.Pool)
				if a || b {
					mask[i] = true
					hit++
				}
			}
		}
		if hit == 0 {
			return nil, fmt.Errorf("%s: %q matches no node (nodes are named like %q, pool %q; %d nodes)", field, e, c.Node(0).Name, c.Node(0).Pool, n)
		}
	}
	return mask, nil
}
