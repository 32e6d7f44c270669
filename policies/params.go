package policies

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/sim"
)

// Dur is a duration in policy parameters: a Go duration string ("90s", "24h",
// "1h30m") or a plain number of seconds.
type Dur sim.Duration

// UnmarshalYAML accepts "24h"-style strings and numbers of seconds.
func (d *Dur) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return TypeErrorf(n, "want a duration (e.g. 90s, 24h or a number of seconds), got %s", nodeWords(n))
	}
	v, err := ParseDur(n.Value)
	if err != nil {
		return TypeErrorf(n, "%v", err)
	}
	*d = Dur(v)
	return nil
}

// maxDurSeconds bounds durations given as numbers (about 290 years: sim.Duration
// is int64 microseconds).
const maxDurSeconds = 9e12

// ParseDur parses a duration string ("90s", "24h", "1h30m"), a number of days
// optionally followed by a duration ("30d", "1.5d", "2d12h"; a day is 24 h), or a
// number of seconds.
func ParseDur(s string) (sim.Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		if f < 0 {
			return 0, fmt.Errorf("duration %q must be >= 0", s)
		}
		if math.IsNaN(f) || f > maxDurSeconds {
			return 0, fmt.Errorf("duration %q: want a number of seconds up to %g", s, float64(maxDurSeconds))
		}
		return sim.Seconds(f), nil
	}
	d, err := parseDays(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q (want e.g. 90s, 24h, 30d or a number of seconds)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q must be >= 0", s)
	}
	return sim.Duration(d / time.Microsecond), nil
}

// parseDays is time.ParseDuration with an optional leading "<days>d" term.
func parseDays(s string) (time.Duration, error) {
	i := strings.IndexByte(s, 'd')
	if i < 0 {
		return time.ParseDuration(s)
	}
	days, err := strconv.ParseFloat(s[:i], 64)
	if err != nil || days < 0 || days > 100_000 || strings.ContainsAny(s[:i], "eE+-") {
		return 0, fmt.Errorf("bad days in %q", s)
	}
	d := time.Duration(days * 24 * float64(time.Hour))
	if rest := s[i+1:]; rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil || r < 0 {
			return 0, fmt.Errorf("bad duration after days in %q", s)
		}
		d += r
	}
	return d, nil
}

// DecodeParams decodes a policy's `params` mapping into out (a pointer to a struct
// with yaml tags). Every problem is reported, not only the first: each unknown key
// (at any depth, see CheckFields) and each value of the wrong type is a *LineError (line, field path relative to
// params, message without YAML tags or Go type names), joined with errors.Join.
// A nil node leaves out unchanged.
func DecodeParams(n *yaml.Node, out any) error {
	if n == nil || n.Kind == 0 {
		return nil
	}
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return &LineError{Line: n.Line, Msg: "params must be a mapping"}
	}
	known := map[string]bool{}
	t := reflect.TypeOf(out).Elem()
	var names []string
	for i := 0; i < t.NumField(); i++ {
		tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		if tag != "" && tag != "-" {
			known[tag] = true
			names = append(names, tag)
		}
	}
	var keys []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Tag == "!!merge" {
			for _, m := range mergeSources(n.Content[i+1]) {
				for j := 0; j+1 < len(m.Content); j += 2 {
					keys = append(keys, m.Content[j])
				}
			}
		} else {
			keys = append(keys, k)
		}
	}
	var errs []error
	for _, k := range keys {
		if !known[k.Value] {
			msg := fmt.Sprintf("unknown parameter %q (known: %s)", k.Value, strings.Join(names, ", "))
			if len(names) == 0 {
				msg = fmt.Sprintf("unknown parameter %q (this policy takes no parameters)", k.Value)
			}
			errs = append(errs, &LineError{Line: k.Line, Path: k.Value, Msg: msg})
		}
	}
	for _, e := range CheckFields(n, out) { // unknown keys below the top level
		if le, ok := e.(*LineError); ok && strings.ContainsAny(le.Path, ".[") {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		// Decoding would stop at the same unknown keys; report the type errors of
		// the known ones too.
		trimmed := *n
		trimmed.Content = nil
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Tag == "!!merge" || known[k.Value] {
				trimmed.Content = append(trimmed.Content, k, n.Content[i+1])
			}
		}
		n = &trimmed
	}
	if err := n.Decode(out); err != nil {
		for _, le := range YAMLErrors(n, err) {
			errs = append(errs, le)
		}
	}
	return errors.Join(errs...)
}

// CheckFields reports every mapping key under n that has no matching yaml field in
// the Go type of out (recursively through structs, pointers, slices and maps), as
// a *LineError ("line N: path: unknown field"). Structs with an `,inline` map accept any key.
func CheckFields(n *yaml.Node, out any) []error {
	var errs []error
	checkFields(n, reflect.TypeOf(out), "", &errs, map[*yaml.Node]bool{})
	return errs
}

// checkFields walks n along t; merging marks the mappings being merged, so that
// a mapping merging itself (`&a {<<: *a}`, which yaml.v3 rejects when decoding)
// is not walked forever.
func checkFields(n *yaml.Node, t reflect.Type, path string, errs *[]error, merging map[*yaml.Node]bool) {
	if n == nil {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeOf(yaml.Node{}) {
		return // raw YAML: checked by whoever decodes it
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		checkFields(n.Content[0], t, path, errs, merging)
		return
	}
	if n.Kind == yaml.AliasNode {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return // type mismatch: yaml.Decode reports it
		}
		fields := map[string]reflect.Type{}
		inlineMap := false
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			parts := strings.Split(f.Tag.Get("yaml"), ",")
			name := parts[0]
			isInline := false
			for _, o := range parts[1:] {
				if o == "inline" {
					isInline = true
				}
			}
			if isInline {
				if f.Type.Kind() == reflect.Map {
					inlineMap = true
				}
				continue
			}
			if name == "-" {
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			fields[name] = f.Type
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" { // <<: *anchor — the merged mapping's keys are this struct's
				for _, m := range mergeSources(v) {
					if !merging[m] {
						merging[m] = true
						checkFields(m, t, path, errs, merging)
						delete(merging, m)
					}
				}
				continue
			}
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			ft, ok := fields[k.Value]
			if !ok {
				if !inlineMap {
					*errs = append(*errs, &LineError{Line: k.Line, Path: p, Msg: "unknown field"})
				}
				continue
			}
			checkFields(v, ft, p, errs, merging)
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, c := range n.Content {
			checkFields(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), errs, merging)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			checkFields(n.Content[i+1], t.Elem(), path+"."+n.Content[i].Value, errs, merging)
		}
	}
}

// mergeSources returns the mappings a YAML merge key (<<) merges: an alias of a
// mapping, a sequence of them, or an inline mapping.
func mergeSources(v *yaml.Node) []*yaml.Node {
	var out []*yaml.Node
	add := func(x *yaml.Node) {
		for x != nil && x.Kind == yaml.AliasNode {
			x = x.Alias
		}
		if x != nil && x.Kind == yaml.MappingNode {
			out = append(out, x)
		}
	}
	if v.Kind == yaml.SequenceNode {
		for _, c := range v.Content {
			add(c)
		}
	} else {
		add(v)
	}
	return out
}
