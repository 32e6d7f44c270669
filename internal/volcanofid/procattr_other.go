//go:build !linux

package volcanofid

import "syscall"

// childAttr: no parent-death signal outside Linux; Stop still ends the
// scheduler by its PID.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
