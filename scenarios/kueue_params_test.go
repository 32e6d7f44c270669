package scenarios

import "testing"

// A bad kueue preemptorReservation names the file, line and field (exit code
// 2 in the CLI, like every scenario error).
func TestKueuePreemptorReservationError(t *testing.T) {
	s := minimal[:len(minimal)-len("  - name: fifo\n")] + "  - name: kueue\n    params:\n      preemptorReservation: maybe\n" + kueueInline
	mustErr(t, s, nil, `s.yaml:12: policies[0].params.preemptorReservation: want true or false, got "maybe"`)
	s = minimal[:len(minimal)-len("  - name: fifo\n")] + "  - name: kueue\n    params:\n      preemptorReservation: false\n" + kueueInline
	if _, err := Parse([]byte(s), "s.yaml", nil); err != nil {
		t.Fatalf("preemptorReservation: false: %v", err)
	}
}
