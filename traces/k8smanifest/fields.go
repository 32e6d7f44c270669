package k8smanifest

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// unknownFields reports every mapping key under n that has no yaml field in
// t (through pointers, slices and maps; yaml.Node fields are not checked),
// with its line and field path. Merge keys (<<) are checked as keys of the
// mapping they merge into.
func unknownFields(n *yaml.Node, t reflect.Type, path string, report func(line int, path string)) {
	unknownFieldsIn(n, t, path, report, map[*yaml.Node]bool{})
}

func unknownFieldsIn(n *yaml.Node, t reflect.Type, path string, report func(int, string), merging map[*yaml.Node]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n == nil || t == reflect.TypeOf(yaml.Node{}) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return // a type mismatch: the decoder reports it
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" {
				for _, m := range mergeSources(v) {
					if !merging[m] {
						merging[m] = true
						unknownFieldsIn(m, t, path, report, merging)
						delete(merging, m)
					}
				}
				continue
			}
			p := appendKey(path, k.Value)
			f, ok := fieldByTag(t, k.Value)
			if !ok {
				report(k.Line, p)
				continue
			}
			unknownFieldsIn(v, f, p, report, merging)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, c := range n.Content {
			unknownFieldsIn(c, t.Elem(), path+"["+strconv.Itoa(i)+"]", report, merging)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			unknownFieldsIn(n.Content[i+1], t.Elem(), appendKey(path, n.Content[i].Value), report, merging)
		}
	}
}

// appendKey appends a mapping key to a field path, quoted when it holds a dot
// or a slash (label keys), as joinPath does.
func appendKey(path, key string) string {
	if strings.ContainsAny(key, "./") {
		key = strconv.Quote(key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// mergeSources returns the mappings a merge key's value brings in (an alias,
// a mapping, or a list of them).
func mergeSources(v *yaml.Node) []*yaml.Node {
	switch v.Kind {
	case yaml.AliasNode:
		return mergeSources(v.Alias)
	case yaml.MappingNode:
		return []*yaml.Node{v}
	case yaml.SequenceNode:
		var out []*yaml.Node
		for _, c := range v.Content {
			out = append(out, mergeSources(c)...)
		}
		return out
	}
	return nil
}

// fieldByTag returns the type of t's field whose yaml tag names key.
func fieldByTag(t reflect.Type, key string) (reflect.Type, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if f.IsExported() && name == key {
			return f.Type, true
		}
	}
	return nil, false
}

// quantityRE is Kubernetes' resource quantity grammar
// (k8s.io/apimachinery/pkg/api/resource: <signedNumber><suffix>).
var quantityRE = regexp.MustCompile(`^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$`)

var quantitySuffix = map[string]float64{
	"": 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60,
	"n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
}

// parseQuantity parses a resource quantity ("16", "500m", "64Gi", "2e3") into
// its plain value; negative and malformed quantities are errors.
func parseQuantity(s string) (float64, error) {
	s = strings.TrimSpace(s)
	g := quantityRE.FindStringSubmatch(s)
	if g == nil {
		return 0, fmt.Errorf("invalid quantity %q", s)
	}
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, g[1]), 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, fmt.Errorf("invalid quantity %q", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("quantity %q must be >= 0", s)
	}
	return v * quantitySuffix[g[1]], nil
}
