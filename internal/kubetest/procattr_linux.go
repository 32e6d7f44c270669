package kubetest

import "syscall"

// childAttr kills a control-plane process when the test binary dies, so an
// aborted test leaves no etcd or kube-apiserver behind.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
