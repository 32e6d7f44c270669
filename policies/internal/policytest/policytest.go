// Package policytest holds test helpers shared by the policy packages' tests.
package policytest

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies"
)

// WantParamErrors builds policy name with each case's params (case[0], a
// YAML flow mapping) and fails t unless that fails with an error naming the
// case's field (case[1]).
func WantParamErrors(t *testing.T, name string, cases [][2]string) {
	t.Helper()
	for _, c := range cases {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(c[0]), &n); err != nil {
			t.Fatalf("%s: %v", c[0], err)
		}
		_, err := policies.New(name, n.Content[0])
		if err == nil || !strings.Contains(err.Error(), c[1]) {
			t.Errorf("%s %s: error %v, want one naming %s", name, c[0], err, c[1])
		}
	}
}
