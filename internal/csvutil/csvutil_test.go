package csvutil

import (
	"encoding/csv"
	"strings"
	"testing"
)

// Every field written round-trips through encoding/csv.
func TestAppendFieldRoundTrip(t *testing.T) {
	for _, s := range []string{"", "plain", "a,b", `say "hi"`, "line\nbreak", " lead", "trail\t", "cr\r"} {
		b := AppendField(nil, s)
		b = append(b, ",x\n"...)
		rec, err := csv.NewReader(strings.NewReader(string(b))).Read()
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if rec[0] != s {
			t.Errorf("%q came back as %q", s, rec[0])
		}
	}
}
