// Package csvutil holds the CSV field encoding shared by gpusim's writers (native
// traces, jobs.csv), so every CSV the tool writes quotes the same way.
package csvutil

import "strings"

// AppendField appends s as one RFC 4180 CSV field: quoted (with quotes doubled)
// when it contains a separator, a quote, a line break, or leading or trailing
// space that readers would otherwise trim; verbatim otherwise.
func AppendField(b []byte, s string) []byte {
	need := s != "" && (s[0] == ' ' || s[0] == '\t' || s[len(s)-1] == ' ' || s[len(s)-1] == '\t')
	if !need && !strings.ContainsAny(s, ",\"\r\n") {
		return append(b, s...)
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			b = append(b, '"')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}
