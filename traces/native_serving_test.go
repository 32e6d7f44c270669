package traces

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

// The optional serving columns make a job a serving job; bad or partial values
// name the file, line and column.
func TestNativeServingColumns(t *testing.T) {
	d := t.TempDir()
	csv := filepath.Join(d, "j.csv")
	os.WriteFile(csv, []byte("id,submit_s,gpus,duration_s,sharing,serving_rate_rps,serving_service_ms,serving_sla_ms\n"+
		"a,0,1,100,any,20,10,100\nb,1,1,10,,,,\n"), 0o644)
	jobs, err := readAll(t, csv)
	if err != nil {
		t.Fatal(err)
	}
	sp := jobs[0].Serving
	if sp == nil || sp.Rate != 20 || sp.Service != 10*sim.Millisecond || sp.SLA != 100*sim.Millisecond || jobs[1].Serving != nil {
		t.Fatalf("jobs %+v %+v", jobs[0], jobs[1])
	}
	if m := sp.MinSpeed(); m < 0.4453231 || m > 0.4453232 {
		t.Errorf("min speed %v, want 0.445323 (sim.TestServingMinSpeed)", m)
	}
	for _, c := range []struct{ row, want string }{
		{"a,0,1,10,any,20,10,", "j.csv:2: column serving_sla_ms: missing value"},
		{"a,0,1,10,any,-1,10,100", "j.csv:2: column serving_rate_rps: must be a finite number >= 0"},
		{"a,0,1,10,any,5,0,100", "j.csv:2: column serving_service_ms: must be at least 0.001 ms"},
		{"a,0,1,10,any,5,x,100", "j.csv:2: column serving_service_ms:"},
	} {
		os.WriteFile(csv, []byte("id,submit_s,gpus,duration_s,sharing,serving_rate_rps,serving_service_ms,serving_sla_ms\n"+c.row+"\n"), 0o644)
		_, err := readAll(t, csv)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.row, err, c.want)
		}
	}
}
