//go:build linux

package hugepage

import (
	"syscall"
	"unsafe"
)

// Advise advises the whole 2 MiB pages inside s; errors are ignored (the
// advice is optional).
func Advise[T any](s []T) {
	n := uintptr(cap(s)) * unsafe.Sizeof(*new(T))
	if n < minBytes {
		return
	}
	const huge = 2 << 20
	base := unsafe.Pointer(unsafe.SliceData(s))
	p := uintptr(base)
	lo := (p + huge - 1) &^ (huge - 1)
	hi := (p + n) &^ (huge - 1)
	if hi <= lo {
		return
	}
	_ = syscall.Madvise(unsafe.Slice((*byte)(unsafe.Add(base, lo-p)), hi-lo), 14 /* MADV_HUGEPAGE */)
}
