package policies

import (
	"fmt"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/internal/yamlmsg"
)

// LineError is one problem in a YAML document: its line and the field path of
// the value concerned, relative to the node that was decoded (for a policy,
// relative to its params: "partitions[0].nodes"). Path may be empty.
type LineError struct {
	Line int
	Path string
	Msg  string
}

// Error formats the problem as "line N: path: msg".
func (e *LineError) Error() string {
	return yamlmsg.Problem{Line: e.Line, Path: e.Path, Msg: e.Msg}.String()
}

// TypeErrorf returns a *yaml.TypeError for n: custom UnmarshalYAML methods
// return it so that yaml.v3 records the problem and goes on decoding (any other
// error aborts the decode), and every bad field of a block is reported.
func TypeErrorf(n *yaml.Node, format string, args ...any) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %s", n.Line, fmt.Sprintf(format, args...))}}
}

// YAMLErrors splits an error of yaml.v3's Decode into one *LineError per
// problem, in the user's terms (see yamlmsg.Problems): doc is the decoded node,
// in which each problem's field path is found.
func YAMLErrors(doc *yaml.Node, err error) []*LineError {
	ps := yamlmsg.Problems(doc, err)
	if ps == nil {
		return nil
	}
	out := make([]*LineError, len(ps))
	for i, p := range ps {
		out[i] = &LineError{Line: p.Line, Path: p.Path, Msg: p.Msg}
	}
	return out
}

// nodeWords describes a node's kind for messages ("a mapping", "a list", "\"x\"").
func nodeWords(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	return strconv.Quote(n.Value)
}
