package reports

import (
	"sync"
	"testing"
	"unsafe"
)

// The pool's contract: zeroed buffers with cap == len (as arrow's GoAllocator),
// backing arrays reused after Free, Reallocate keeping contents and zeroing
// growth, and no sharing between concurrent users.
func TestPoolAllocator(t *testing.T) {
	p := &poolAllocator{}
	b := p.Allocate(100)
	if len(b) != 100 || cap(b) != 100 {
		t.Fatalf("len %d cap %d, want 100 100", len(b), cap(b))
	}
	for i := range b {
		b[i] = 0xff
	}
	ptr := unsafe.SliceData(b)
	p.Free(b)
	c := p.Allocate(120) // same class (128 B)
	if unsafe.SliceData(c) != ptr {
		t.Error("freed buffer not reused")
	}
	for i, v := range c {
		if v != 0 {
			t.Fatalf("reused buffer not zeroed at %d", i)
		}
	}
	c[0] = 7
	d := p.Reallocate(4000, c)
	if len(d) != 4000 || d[0] != 7 || d[3999] != 0 {
		t.Errorf("Reallocate: len %d first %d last %d", len(d), d[0], d[3999])
	}
	if e := p.Reallocate(10, d); len(e) != 10 || e[0] != 7 {
		t.Errorf("shrinking Reallocate lost contents")
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				buf := p.Allocate(64 + (i % 300))
				for k := range buf {
					if buf[k] != 0 {
						t.Errorf("goroutine %d: dirty buffer", g)
						return
					}
					buf[k] = byte(g + 1)
				}
				for k := range buf {
					if buf[k] != byte(g+1) {
						t.Errorf("goroutine %d: buffer shared with another user", g)
						return
					}
				}
				p.Free(buf)
			}
		}()
	}
	wg.Wait()
	if p.pooled > maxPooled {
		t.Errorf("pooled %d bytes > %d", p.pooled, maxPooled)
	}
}
