//go:build !linux

package kubetest

import "syscall"

// childAttr has no parent-death signal outside Linux.
func childAttr() *syscall.SysProcAttr { return nil }
