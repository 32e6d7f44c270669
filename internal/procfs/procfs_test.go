package procfs

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// TestReadSelfAndGroup: this process reads as live with its own process group;
// a child in a new process group is alive while it runs and not after it was
// killed and reaped; a PID that does not exist reads as absent.
func TestReadSelfAndGroup(t *testing.T) {
	st, ok := Read(os.Getpid())
	if !ok || !st.Live() || st.PGrp != syscall.Getpgrp() || st.StartTicks == 0 {
		t.Fatalf("self: %+v, %v", st, ok)
	}
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep:", err)
	}
	pg := cmd.Process.Pid
	if !GroupAlive(pg) {
		t.Error("running child's group is not alive")
	}
	_ = syscall.Kill(-pg, syscall.SIGKILL)
	_ = cmd.Wait()
	if GroupAlive(pg) {
		t.Error("killed and reaped child's group is alive")
	}
	if _, ok := Read(1 << 30); ok {
		t.Error("a PID that cannot exist reads as present")
	}
	if GroupAlive(0) || GroupAlive(-5) {
		t.Error("a non-positive group is alive")
	}
}
