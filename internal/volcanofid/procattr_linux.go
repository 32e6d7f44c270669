package volcanofid

import "syscall"

// childAttr puts vc-scheduler in its own process group and kills it when the
// recorder dies, so an aborted recording leaves no scheduler behind.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
