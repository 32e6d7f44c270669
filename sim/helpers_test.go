package sim_test

import "gopkg.in/yaml.v3"

func yamlNode(s string) *yaml.Node {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(s), &n); err != nil {
		panic(err)
	}
	return n.Content[0]
}
