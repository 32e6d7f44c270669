// Package yamlmsg turns yaml.v3 decode errors into messages in a user's terms:
// one problem per line with the field path, "want a whole number, got \"abc\""
// instead of "cannot unmarshal !!str `abc` into int64" (no YAML tags or Go type
// names). It is shared by every reader of YAML input (scenarios, policy params,
// sweeps, range specs, calibration plans, workloads).
package yamlmsg

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Problem is one decode problem: its line (0 when yaml.v3 gives none), the
// field path relative to the decoded node ("" when unknown) and the message.
type Problem struct {
	Line int
	Path string
	Msg  string
}

// String formats the problem as "line N: path: msg".
func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Problems splits an error of yaml.v3's Decode into one Problem per problem
// (a *yaml.TypeError holds several), in the user's terms. doc is the decoded
// node: each problem's field path is found in it by line (and value). An error
// that is not yaml.v3's is one problem without a line.
func Problems(doc *yaml.Node, err error) []Problem {
	if err == nil {
		return nil
	}
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	out := make([]Problem, 0, len(msgs))
	for _, m := range msgs {
		p := Problem{Msg: m}
		if g := yamlLineRE.FindStringSubmatch(m); g != nil {
			p.Line, _ = strconv.Atoi(g[1])
			p.Msg = g[2]
		}
		var value string
		p.Msg, value = HumanYAML(p.Msg)
		if value == "" { // an UnmarshalYAML message quoting the value: `invalid duration "1y"`
			if q := quotedRE.FindString(p.Msg); q != "" {
				value, _ = strconv.Unquote(q)
			}
		}
		if p.Line > 0 && doc != nil {
			p.Path = PathAt(doc, p.Line, value)
		}
		out = append(out, p)
	}
	return out
}

// Error joins the problems of a decode error as "prefix line N: path: msg"
// lines (nil for nil).
func Error(prefix string, doc *yaml.Node, err error) error {
	var errs []error
	for _, p := range Problems(doc, err) {
		errs = append(errs, errors.New(prefix+p.String()))
	}
	return errors.Join(errs...)
}

// FileError joins the problems of a decode error of file as "file:N: path:
// msg" lines (nil for nil).
func FileError(file string, doc *yaml.Node, err error) error {
	var errs []error
	for _, p := range Problems(doc, err) {
		loc := file
		if p.Line > 0 {
			loc = fmt.Sprintf("%s:%d", file, p.Line)
		}
		p.Line = 0
		errs = append(errs, fmt.Errorf("%s: %s", loc, p.String()))
	}
	return errors.Join(errs...)
}

// yamlLineRE matches yaml.v3's per-problem messages ("line 3: ...").
var yamlLineRE = regexp.MustCompile(`^line (\d+): (.*)$`)

// quotedRE matches the first Go-quoted string of a message.
var quotedRE = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// unmarshalRE matches yaml.v3's type mismatch message (decode.go, d.terror):
// "cannot unmarshal !!str `abc` into int64".
var unmarshalRE = regexp.MustCompile("^cannot unmarshal (\\S+)(?: `(.*)`)? into (.+)$")

// HumanYAML rewrites one yaml.v3 problem message without YAML tags or Go type
// names; it also returns the offending scalar value when the message names one.
func HumanYAML(msg string) (text, value string) {
	if g := unmarshalRE.FindStringSubmatch(msg); g != nil {
		return fmt.Sprintf("want %s, got %s", goTypeWords(g[3]), tagWords(g[1], g[2])), g[2]
	}
	if i := strings.Index(msg, "field "); i >= 0 && strings.Contains(msg, " not found in type ") {
		f := msg[i+len("field "):]
		f = f[:strings.Index(f, " ")]
		return fmt.Sprintf("unknown field %q", f), f
	}
	if i := strings.Index(msg, " already set in type "); i >= 0 && strings.HasPrefix(msg, "field ") {
		return fmt.Sprintf("field %q given twice", msg[len("field "):i]), msg[len("field "):i]
	}
	if strings.HasPrefix(msg, "mapping key ") && strings.Contains(msg, " already defined at line ") {
		return strings.Replace(msg, "mapping key", "key", 1), ""
	}
	return msg, ""
}

// tagWords describes a YAML node by its short tag and scalar value.
func tagWords(tag, value string) string {
	switch tag {
	case "!!map":
		return "a mapping"
	case "!!seq":
		return "a list"
	case "!!null":
		return "nothing"
	case "!!str", "!!binary", "!!timestamp":
		return strconv.Quote(value)
	}
	if !strings.HasPrefix(tag, "!!") { // a custom tag (!x): YAML the simulator has no type for
		if value != "" {
			return fmt.Sprintf("%q tagged %s", value, tag)
		}
		return "a value tagged " + tag
	}
	if value != "" {
		return value
	}
	return "a " + strings.TrimPrefix(tag, "!!")
}

// goTypeWords describes a Go type (as reflect.Type.String prints it) in YAML
// terms.
func goTypeWords(t string) string {
	t = strings.TrimLeft(t, "*")
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a mapping"
	case t == "bool":
		return "true or false"
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "uint"):
		return "a whole number >= 0"
	case strings.HasPrefix(t, "int"):
		return "a whole number"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "time.Duration" || strings.HasSuffix(t, ".Dur") || strings.HasSuffix(t, ".Duration"):
		return "a duration (e.g. 90s, 24h)"
	}
	return "a mapping" // structs (and anything else decoded field by field)
}

// PathAt returns the field path (relative to n) of the node at line: a scalar
// value equal to value when given, else the first key on that line, else the
// first node on that line. "" when nothing starts on that line.
func PathAt(n *yaml.Node, line int, value string) string {
	if value != "" {
		if p, ok := pathAt(n, line, value, ""); ok {
			return p
		}
	}
	p, _ := pathAt(n, line, "", "")
	return p
}

func pathAt(n *yaml.Node, line int, value, prefix string) (string, bool) {
	if n == nil {
		return "", false
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if p, ok := pathAt(c, line, value, prefix); ok {
				return p, true
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if prefix != "" {
				p = prefix + "." + k.Value
			}
			if k.Tag == "!!merge" {
				p = prefix
			}
			if value == "" && k.Line == line {
				return p, true
			}
			if value != "" && (k.Line == line && k.Value == value || v.Kind == yaml.ScalarNode && v.Line == line && v.Value == value) {
				return p, true
			}
			if v.Kind != yaml.AliasNode {
				if r, ok := pathAt(v, line, value, p); ok {
					return r, true
				}
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", prefix, i)
			if c.Kind == yaml.ScalarNode && c.Line == line && (value == "" || c.Value == value) {
				return p, true
			}
			if c.Kind != yaml.AliasNode {
				if r, ok := pathAt(c, line, value, p); ok {
					return r, true
				}
			}
		}
	}
	return "", false
}

// pathStepRE splits a field path into keys and [index] steps.
var pathStepRE = regexp.MustCompile(`[^.\[\]]+|\[\d+\]`)

// LineOf returns the line of the field at path ("a.b[2].c") under n, or of its
// deepest existing ancestor when the field is absent; 0 when n is nil.
func LineOf(n *yaml.Node, path string) int {
	if n == nil {
		return 0
	}
	line := n.Line
	for _, step := range pathStepRE.FindAllString(path, -1) {
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		if strings.HasPrefix(step, "[") {
			i, _ := strconv.Atoi(step[1 : len(step)-1])
			if n.Kind != yaml.SequenceNode || i >= len(n.Content) {
				return line
			}
			n = n.Content[i]
			line = n.Line
			continue
		}
		if n.Kind != yaml.MappingNode {
			return line
		}
		found := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == step {
				line, n, found = n.Content[i].Line, n.Content[i+1], true
				break
			}
		}
		if !found {
			return line
		}
	}
	return line
}
