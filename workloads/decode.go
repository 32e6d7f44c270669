package workloads

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/internal/yamlmsg"
)

// DecodeYAML decodes a Synthetic from YAML, rejecting unknown fields. The document
// is either the bare block (jobs, load, arrival, ...) or a scenario-like document
// holding it at workload.synthetic (other keys of such a document are ignored). It
// neither sets defaults nor validates. Errors carry the YAML line numbers (relative
// to the block for the nested form).
func DecodeYAML(data []byte) (Synthetic, error) {
	var s Synthetic
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return s, fmt.Errorf("workload: parse YAML: %w", err)
	}
	if root.Kind == 0 { // empty document: all defaults
		return s, nil
	}
	if doc := docMapping(&root); doc != nil {
		if w := mapValue(doc, "workload"); w != nil {
			syn := mapValue(w, "synthetic")
			if syn == nil {
				return s, errors.New("workload: the document has a workload block but no workload.synthetic")
			}
			b, err := yaml.Marshal(syn)
			if err != nil {
				return s, fmt.Errorf("workload: re-encode workload.synthetic: %w", err)
			}
			data = b
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil && !errors.Is(err, io.EOF) {
		var block yaml.Node // the decoded block, for field paths
		_ = yaml.Unmarshal(data, &block)
		return Synthetic{}, yamlmsg.Error("workload: synthetic block: ", &block, err)
	}
	return s, nil
}

func docMapping(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n.Kind != yaml.MappingNode {
		return nil
	}
	return n
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
