package slurm

import (
	"strings"
	"testing"
)

// Hostlists past the int range or expanding to more names than any cluster
// holds are errors, not an endless loop (k++ wrapped past MaxInt) or an
// exhausted memory.
func TestExpandHostlistBounds(t *testing.T) {
	for _, e := range []string{
		"box-[99999999999999999999]",
		"box-[0-99999999999999999999]",
		"box-[0-2000000]",
		"box-[" + strings.Repeat("0-1000000,", 5) + "0]",
	} {
		if names, err := expandHostlist(e); err == nil {
			t.Errorf("%.40s: no error (%d names)", e, len(names))
		}
	}
	if names, err := expandHostlist("box-[9223372036854775807]"); err != nil || len(names) != 1 {
		t.Errorf("MaxInt: %v, %v", names, err)
	}
	names, err := expandHostlist("gpu[08-10,3]")
	if err != nil || strings.Join(names, " ") != "gpu08 gpu09 gpu10 gpu3" {
		t.Errorf("gpu[08-10,3] = %v, %v", names, err)
	}
}
