package live

import (
	"os"
	"syscall"
	"testing"
)

// TestKillPGRefusesOwnGroup: pid 0 (a run whose process was never found) and
// 1 must never be signalled: kill(0, sig) would hit the runner's own group.
func TestKillPGRefusesOwnGroup(t *testing.T) {
	killPG(0, syscall.SIGTERM) // would terminate this test's process group
	killPG(1, syscall.SIGTERM)
	killPG(-5, syscall.SIGTERM)
	if _, ok := readProc(os.Getpid()); !ok {
		t.Fatal("cannot read own /proc entry")
	}
}
