package scenarios

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// pathStep is one step of a field path: a mapping key or a sequence index.
type pathStep struct {
	key   string
	index int // >= 0 for [i]
}

// parsePath splits "cluster.pools[1].gpus" into steps.
func parsePath(p string) ([]pathStep, error) {
	var out []pathStep
	if p == "" {
		return nil, fmt.Errorf("empty path")
	}
	for _, part := range strings.Split(p, ".") {
		if part == "" {
			return nil, fmt.Errorf("empty segment in %q", p)
		}
		key := part
		var idx []int
		if i := strings.IndexByte(part, '['); i >= 0 {
			key = part[:i]
			rest := part[i:]
			for rest != "" {
				if rest[0] != '[' {
					return nil, fmt.Errorf("bad index in %q", part)
				}
				j := strings.IndexByte(rest, ']')
				if j < 0 {
					return nil, fmt.Errorf("unclosed [ in %q", part)
				}
				n, err := strconv.Atoi(rest[1:j])
				if err != nil || n < 0 {
					return nil, fmt.Errorf("bad index %q in %q", rest[1:j], part)
				}
				idx = append(idx, n)
				rest = rest[j+1:]
			}
		}
		if key != "" {
			out = append(out, pathStep{key: key, index: -1})
		}
		for _, n := range idx {
			out = append(out, pathStep{index: n})
		}
	}
	return out, nil
}

func mapGet(m *yaml.Node, key string) (k, v *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// lineOf returns the YAML line of the field at path, or of its deepest existing
// ancestor when the field itself is absent (a defaulted or missing value).
func lineOf(root *yaml.Node, path string) int {
	steps, err := parsePath(path)
	if err != nil {
		return root.Line
	}
	n := root
	line := root.Line
	for _, s := range steps {
		if s.index >= 0 {
			if n.Kind != yaml.SequenceNode || s.index >= len(n.Content) {
				return line
			}
			n = n.Content[s.index]
			line = n.Line
			continue
		}
		k, v := mapGet(n, s.key)
		if k == nil {
			return line
		}
		line = k.Line
		n = v
	}
	return line
}

// applySet overrides one field: "path=value" where value is YAML (a scalar, or a
// flow sequence/mapping). Missing mappings along the path are created; sequence
// indexes must exist (or equal the length, to append).
func applySet(root *yaml.Node, kv string) error {
	eq := strings.IndexByte(kv, '=')
	if eq <= 0 {
		return fmt.Errorf("want path=value")
	}
	path, val := strings.TrimSpace(kv[:eq]), kv[eq+1:]
	steps, err := parsePath(path)
	if err != nil {
		return err
	}
	var vdoc yaml.Node
	if err := yaml.Unmarshal([]byte(val), &vdoc); err != nil {
		return fmt.Errorf("value: %v", err)
	}
	var vn *yaml.Node
	if len(vdoc.Content) > 0 {
		vn = vdoc.Content[0]
	} else {
		vn = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: val}
	}
	n := root
	for i, s := range steps {
		last := i == len(steps)-1
		if s.index >= 0 {
			if n.Kind != yaml.SequenceNode {
				return fmt.Errorf("%s is not a list", pathPrefix(steps[:i]))
			}
			if s.index > len(n.Content) {
				return fmt.Errorf("index %d out of range (list has %d items)", s.index, len(n.Content))
			}
			if s.index == len(n.Content) {
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"})
			}
			if last {
				n.Content[s.index] = vn
				return nil
			}
			n = n.Content[s.index]
			continue
		}
		if n.Kind != yaml.MappingNode {
			if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
				n.Kind, n.Tag, n.Value = yaml.MappingNode, "!!map", ""
			} else {
				return fmt.Errorf("%s is not a mapping", pathPrefix(steps[:i]))
			}
		}
		_, v := mapGet(n, s.key)
		if v == nil {
			k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s.key}
			v = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			if !last && steps[i+1].index >= 0 {
				v = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			}
			n.Content = append(n.Content, k, v)
		}
		if last {
			for j := 0; j+1 < len(n.Content); j += 2 {
				if n.Content[j].Value == s.key {
					n.Content[j+1] = vn
				}
			}
			return nil
		}
		n = v
	}
	return nil
}

func pathPrefix(steps []pathStep) string {
	var b strings.Builder
	for _, s := range steps {
		if s.index >= 0 {
			fmt.Fprintf(&b, "[%d]", s.index)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.key)
	}
	if b.Len() == 0 {
		return "the document"
	}
	return b.String()
}
