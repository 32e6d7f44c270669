package reports

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/apache/arrow/go/v15/arrow/memory"
)

// poolAllocator is the arrow memory.Allocator of the Parquet writers' own
// buffers (parquet.WithAllocator: encoders' value buffers, page and
// compression buffers): it keeps the buffers the writer frees in power-of-two
// size classes and hands them out again. Arrow's GoAllocator never reuses
// memory, so writing a million-row file allocated over a gigabyte of
// short-lived buffers whose fresh pages and collection cost more than the
// encoding (issue 16 §3).
//
// Contract, as GoAllocator's: Allocate returns zeroed memory with cap == len
// (the writers' page layout depends on capacities, so a larger capacity
// would change the bytes written); Reallocate keeps the contents and zeroes
// what it adds. The builders of the arrays written are not pooled: the
// writer may keep references into an array (dictionary encoders) after the
// array is released, which a reused buffer would overwrite. Safe for
// concurrent use (the output files are written in parallel). At most
// maxPooled bytes are kept; beyond that freed buffers are left to the
// garbage collector.
type poolAllocator struct {
	mu     sync.Mutex
	free   [maxClass + 1][]unsafe.Pointer // per class: backing arrays of 1<<class bytes
	pooled int
}

const (
	minClass  = 6  // 64 B
	maxClass  = 30 // 1 GiB; larger buffers are not pooled
	maxPooled = 256 << 20
)

// parquetAlloc is shared by every writer of the process.
var parquetAlloc memory.Allocator = &poolAllocator{}

func sizeClass(n int) int {
	if n <= 1<<minClass {
		return minClass
	}
	return bits.Len(uint(n - 1))
}

// Allocate implements memory.Allocator.
func (p *poolAllocator) Allocate(size int) []byte {
	c := sizeClass(size)
	if c > maxClass {
		return make([]byte, size)
	}
	p.mu.Lock()
	if l := len(p.free[c]); l > 0 {
		ptr := p.free[c][l-1]
		p.free[c][l-1] = nil
		p.free[c] = p.free[c][:l-1]
		p.pooled -= 1 << c
		p.mu.Unlock()
		b := unsafe.Slice((*byte)(ptr), 1<<c)
		clear(b[:size])
		return b[:size:size]
	}
	p.mu.Unlock()
	return make([]byte, 1<<c)[:size:size]
}

// Reallocate implements memory.Allocator.
func (p *poolAllocator) Reallocate(size int, b []byte) []byte {
	if cap(b) >= size {
		if size > len(b) {
			clear(b[len(b):size])
		}
		return b[:size]
	}
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

// Free implements memory.Allocator: the buffer's backing array (of its size
// class, as Allocate made it) goes back to the pool.
func (p *poolAllocator) Free(b []byte) {
	if cap(b) == 0 {
		return
	}
	c := sizeClass(cap(b))
	if c > maxClass {
		return
	}
	p.mu.Lock()
	if p.pooled+1<<c <= maxPooled {
		p.free[c] = append(p.free[c], unsafe.Pointer(unsafe.SliceData(b)))
		p.pooled += 1 << c
	}
	p.mu.Unlock()
}
