package calibrate

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// fieldErr is a validation problem at a field path ("workloads[1].command").
type fieldErr struct {
	path string
	msg  string
}

// fieldErrs collects all problems of a document; render turns them into one error
// with file:line positions looked up in the document's node tree.
type fieldErrs []fieldErr

func (fe *fieldErrs) add(path, format string, args ...any) {
	*fe = append(*fe, fieldErr{path: path, msg: fmt.Sprintf(format, args...)})
}

// render returns nil when empty, else an error listing "file:line: path: msg" (the
// line of the closest existing ancestor of path).
func (fe fieldErrs) render(file string, root *yaml.Node) error {
	if len(fe) == 0 {
		return nil
	}
	lines := make([]string, len(fe))
	for i, e := range fe {
		line := lineOf(root, e.path)
		if line > 0 {
			lines[i] = fmt.Sprintf("%s:%d: %s: %s", file, line, e.path, e.msg)
		} else {
			lines[i] = fmt.Sprintf("%s: %s: %s", file, e.path, e.msg)
		}
	}
	return fmt.Errorf("%s", strings.Join(lines, "\n"))
}

// lineOf finds the line of the node at path ("a.b[2].c") in the document, falling
// back to the deepest existing ancestor; 0 if root is nil.
func lineOf(root *yaml.Node, path string) int {
	n := root
	if n == nil {
		return 0
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, seg := range splitPath(path) {
		var next *yaml.Node
		if idx, err := strconv.Atoi(seg); err == nil && n.Kind == yaml.SequenceNode {
			if idx >= 0 && idx < len(n.Content) {
				next = n.Content[idx]
			}
		} else if n.Kind == yaml.MappingNode {
			for k := 0; k+1 < len(n.Content); k += 2 {
				if n.Content[k].Value == seg {
					next = n.Content[k+1]
					line = n.Content[k].Line
					break
				}
			}
		}
		if next == nil {
			return line
		}
		n = next
		if n.Kind != yaml.MappingNode || n.Line > line {
			line = n.Line
		}
	}
	return line
}

// splitPath splits "a.b[2].c" into ["a" "b" "2" "c"].
func splitPath(p string) []string {
	p = strings.ReplaceAll(p, "[", ".")
	p = strings.ReplaceAll(p, "]", "")
	var out []string
	for _, s := range strings.Split(p, ".") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
