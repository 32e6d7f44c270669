package live

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/gpusim/gpusim/internal/procfs"
)

// procInfo is what /proc/PID/stat says about a process.
type procInfo struct {
	state string // R, S, D, Z, X, ...
	pgrp  int
	ticks uint64 // start time, clock ticks after boot (field 22)
}

// readProc reads /proc/PID/stat; ok is false when the process does not exist.
func readProc(pid int) (procInfo, bool) {
	st, ok := procfs.Read(pid)
	return procInfo{state: st.State, pgrp: st.PGrp, ticks: st.StartTicks}, ok
}

// sameProcess reports whether pid is still the (live, not zombie) process that
// started at ticks: a PID reused by another process does not match.
func sameProcess(pid int, ticks uint64) bool {
	p, ok := readProc(pid)
	return ok && p.ticks == ticks && p.state != "Z" && p.state != "X"
}

// groupAlive reports whether process group pgid has a process that is not a
// zombie.
func groupAlive(pgid int) bool { return procfs.GroupAlive(pgid) }

// waitGroupGone polls until process group pgid has no live process or d passes.
func waitGroupGone(pgid int, d time.Duration) bool {
	end := time.Now().Add(d)
	for groupAlive(pgid) {
		if time.Now().After(end) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// findByToken returns the PID of a live process of this user whose environment
// holds GPUSIM_LIVE_RUN=token (0 if none): a run launched just before a crash,
// whose start record was not written.
func findByToken(token string) int {
	want := []byte("\x00" + envToken + "=" + token + "\x00")
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			continue
		}
		if bytes.Contains(append(append([]byte{0}, b...), 0), want) {
			if p, ok := readProc(pid); ok && p.state != "Z" && p.pgrp == pid {
				return pid
			}
		}
	}
	return 0
}

// killPG sends sig to process group pgid. A pgid below 2 is ignored: kill(0)
// would signal the runner's own group and kill(-1) every process of the user
// (a run whose process was never found has pid 0).
func killPG(pgid int, sig syscall.Signal) {
	if pgid > 1 {
		_ = syscall.Kill(-pgid, sig)
	}
}
