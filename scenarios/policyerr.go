package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies"
)

// Policy errors come back from the policy packages as plain errors (joined with
// errors.Join when there are several) whose text starts with a field path
// relative to the policy's params ("partitions[0].nodes: ..."), as
// *policies.LineError values with a line of the scenario file, or, for Kueue
// manifests given inline, with "FILE:LINE: " of the scenario file. policyProblems
// turns each into a Problem at "policies[i].params.<path>" with the line of that
// field, so every policy error reads "file:line: policies[i].params.x: message".

// paramPathRE matches a leading field path: "partitions[0].nodes: ", also with a
// name in parentheses after an element ("partitions[0] (gpu).nodes: "). The
// policy-name prefixes some packages add ("volcano: ") are stripped before.
var paramPathRE = regexp.MustCompile(`^([A-Za-z][\w-]*(?:\[\d+\])*(?: \([^():]*\))?(?:\.[\w./-]+(?:\[\d+\])*(?: \([^():]*\))?)*): (.*)$`)

// parenRE removes " (name)" annotations from a matched path.
var parenRE = regexp.MustCompile(` \([^()]*\)`)

// policyProblems converts the error of building (or pre-flighting) policy i
// into located problems.
func (s *Scenario) policyProblems(i int, err error) []Problem {
	base := fmt.Sprintf("policies[%d].params", i)
	params := paramsNode(&s.Policies[i])
	var out []Problem
	for _, leaf := range leafErrors(err) {
		out = append(out, s.policyProblem(base, params, leaf))
	}
	return out
}

// leafErrors flattens errors.Join trees (through wrapping) into their leaves,
// keeping each leaf's wrapping context when it is a single chain.
func leafErrors(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leafErrors(e)...)
		}
		return out
	}
	// A wrapper around a join ("policy \"x\": " + joined errors): split the join,
	// the wrapper's prefix is context the path replaces.
	if u := errors.Unwrap(err); u != nil {
		if _, ok := u.(interface{ Unwrap() []error }); ok {
			return leafErrors(u)
		}
		var le *policies.LineError
		if errors.As(err, &le) {
			return []error{le}
		}
	}
	return []error{err}
}

func (s *Scenario) policyProblem(base string, params *yaml.Node, err error) Problem {
	var le *policies.LineError
	if errors.As(err, &le) {
		p := Problem{Line: le.Line, Path: base, Msg: le.Msg}
		if le.Path != "" {
			p.Path = joinPath(base, le.Path)
		}
		if p.Line == 0 {
			p.Line = lineOf(s.root, p.Path)
		}
		return p
	}
	msg := err.Error()
	for {
		// Strip the registry's and the packages' name prefixes: the path names
		// the policy already.
		if strings.HasPrefix(msg, "policy \"") {
			if i := strings.Index(msg, "\": "); i > 0 {
				msg = msg[i+3:]
				continue
			}
		}
		if rest, ok := strings.CutPrefix(msg, "volcano: "); ok {
			msg = rest
			continue
		}
		if rest, ok := strings.CutPrefix(msg, "slurm: "); ok {
			msg = rest
			continue
		}
		break
	}
	// Inline manifests: "manifests: FILE:LINE: ..." or "FILE: line LINE: ...",
	// FILE being the scenario file itself.
	if s.file != "" {
		inline := joinPath(base, "inline")
		rest := strings.TrimPrefix(msg, "manifests: ")
		if r, ok := strings.CutPrefix(rest, s.file+":"); ok {
			if n, tail, ok := cutLine(r); ok {
				return Problem{Line: n, Path: inline, Msg: tail}
			}
			if n, tail, ok := cutLine(strings.TrimPrefix(strings.TrimPrefix(r, " "), "line ")); ok {
				return Problem{Line: n, Path: inline, Msg: tail}
			}
		}
	}
	if g := paramPathRE.FindStringSubmatch(msg); g != nil {
		path := parenRE.ReplaceAllString(g[1], "")
		if first := firstSegment(path); params != nil && hasKey(params, first) || first == "manifests" || first == "inline" {
			if first == "manifests" && params != nil && !hasKey(params, "manifests") && hasKey(params, "inline") {
				path = "inline" + strings.TrimPrefix(path, "manifests")
			}
			p := joinPath(base, path)
			return Problem{Line: lineOf(s.root, p), Path: p, Msg: g[2]}
		}
	}
	return Problem{Line: lineOf(s.root, base), Path: base, Msg: msg}
}

// cutLine splits "12: rest" into 12 and "rest".
func cutLine(s string) (int, string, bool) {
	num, rest, ok := strings.Cut(s, ": ")
	if !ok {
		return 0, "", false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n <= 0 {
		return 0, "", false
	}
	return n, rest, true
}

func joinPath(base, rel string) string {
	if strings.HasPrefix(rel, "[") {
		return base + rel
	}
	return base + "." + rel
}

func firstSegment(path string) string {
	if i := strings.IndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return path
}

// hasKey reports whether mapping n (through aliases and merge keys) has key.
func hasKey(n *yaml.Node, key string) bool { return hasKeyDepth(n, key, 0) }

// hasKeyDepth bounds the merge depth: a mapping may merge itself.
func hasKeyDepth(n *yaml.Node, key string, depth int) bool {
	if depth > 16 {
		return false
	}
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Value == key && k.Tag != "!!merge" {
			return true
		}
		if k.Tag == "!!merge" {
			v := n.Content[i+1]
			if v.Kind == yaml.SequenceNode {
				for _, c := range v.Content {
					if hasKeyDepth(c, key, depth+1) {
						return true
					}
				}
			} else if hasKeyDepth(v, key, depth+1) {
				return true
			}
		}
	}
	return false
}

// useSourceParams points each policy's params at its node in the scenario as
// written (after --set), so that the lines policies report are the file's lines
// (the strict decode reads a re-encoded copy whose lines differ).
func (s *Scenario) useSourceParams() {
	_, list := mapGet(s.root, "policies")
	if list == nil || list.Kind != yaml.SequenceNode {
		return
	}
	for i := range s.Policies {
		if i >= len(list.Content) {
			break
		}
		if _, n := mapGet(list.Content[i], "params"); n != nil {
			s.Policies[i].Params = *n
		}
	}
}

// validatePolicyParams builds every policy as run does and reports each problem
// of its params with the line of the field.
func (s *Scenario) validatePolicyParams() []Problem {
	if s.Experiment != nil {
		return nil
	}
	var out []Problem
	for i := range s.Policies {
		p := &s.Policies[i]
		if p.Name == "" || !policies.Known(p.Name) {
			continue // reported by validate
		}
		if _, err := policies.NewWithEnv(p.Name, paramsNode(p), s.env()); err != nil {
			out = append(out, s.policyProblems(i, err)...)
		}
	}
	return out
}

// env is what policy factories may know about the scenario.
func (s *Scenario) env() policies.Env {
	e := policies.Env{BaseDir: s.dir, File: s.file}
	if t, ref, err := s.throughputs(); err == nil && t != nil {
		e.Throughputs, e.ThroughputRef = t, ref
	}
	return e
}

// yamlProblems locates the strict decode's problems (lines of the re-encoded
// document canon) in the scenario as written (root, parsed from data), in the
// user's terms.
func yamlProblems(err error, data, canon []byte, root *yaml.Node) []Problem {
	var cdoc yaml.Node
	if yaml.Unmarshal(canon, &cdoc) != nil || len(cdoc.Content) == 0 {
		p := yamlProblem(err)
		if p.Line == 0 {
			p.Line = lineWithoutLine(data, p.Msg)
		}
		return []Problem{p}
	}
	var out []Problem
	for _, le := range policies.YAMLErrors(cdoc.Content[0], err) {
		p := Problem{Line: le.Line, Msg: cleanYAMLMsg(le.Msg)}
		if le.Path != "" {
			p.Path = le.Path
			p.Line = lineOf(root, le.Path)
			if strings.HasPrefix(p.Msg, "unknown field") {
				p.Msg = "unknown field (check the spelling; see the scenario reference)"
			}
		}
		if p.Line == 0 {
			p.Line = lineWithoutLine(data, p.Msg)
		}
		out = append(out, p)
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Line < out[b].Line })
	return out
}

// badByteLine returns the line of the first byte YAML does not allow (invalid
// UTF-8 or a control character outside YAML's printable set, YAML 1.2 §5.1),
// or 0 when there is none.
func badByteLine(data []byte) int {
	line := 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		ok := r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r <= 0x7e || r == 0x85 ||
			r >= 0xa0 && r <= 0xd7ff || r >= 0xe000 && r <= 0xfffd && r != 0xfeff || r >= 0x10000 && r <= 0x10ffff
		if r == utf8.RuneError && size <= 1 || !ok && !(r == 0xfeff && i == 0) {
			return line
		}
		if r == '\n' {
			line++
		}
		i += size
	}
	return 0
}

// anchorMsgRE matches yaml.v3's anchor errors, which carry no line.
var anchorMsgRE = regexp.MustCompile(`^(unknown anchor '(.*)' referenced|anchor '(.*)' value contains itself)$`)

// lineWithoutLine finds the line a yaml.v3 error without one is about: the
// first alias (*name) of an unknown anchor, the anchor (&name) that contains
// itself, or the first byte YAML does not allow. 0 when not found.
func lineWithoutLine(data []byte, msg string) int {
	if g := anchorMsgRE.FindStringSubmatch(msg); g != nil {
		needle := "*" + g[2]
		if g[3] != "" {
			needle = "&" + g[3]
		}
		if i := bytes.Index(data, []byte(needle)); i >= 0 {
			return 1 + bytes.Count(data[:i], []byte("\n"))
		}
	}
	return badByteLine(data)
}
