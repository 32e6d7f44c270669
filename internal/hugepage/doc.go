// Package hugepage asks the kernel to back large, long-lived allocations with
// transparent huge pages where it only does so on request
// (/sys/kernel/mm/transparent_hugepage/enabled = madvise): one fault per 2 MiB
// instead of per 4 KiB when a slice of hundreds of MB is first written.
package hugepage

// minBytes is the smallest slice worth advising.
const minBytes = 64 << 20
