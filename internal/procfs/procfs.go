// Package procfs reads the little of Linux's /proc that gpusim's process
// supervisors need (calibrate's workload cells and live's local backend):
// a process's state, process group and start time, and whether a process
// group still has a live member.
package procfs

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Stat is what gpusim reads of /proc/PID/stat.
type Stat struct {
	State      string // field 3: R, S, D, Z (zombie), X (dead), ...
	PGrp       int    // field 5: process group ID
	StartTicks uint64 // field 22: start time after boot, in clock ticks
}

// Live reports whether the process is neither a zombie nor dead.
func (s Stat) Live() bool { return s.State != "Z" && s.State != "X" }

// Read reads /proc/PID/stat; ok is false when the process does not exist (or
// the file cannot be parsed).
func Read(pid int) (st Stat, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Stat{}, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // comm may hold spaces and parentheses
	if i < 0 {
		return Stat{}, false
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 20 {
		return Stat{}, false
	}
	pg, err1 := strconv.Atoi(f[2])
	t, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return Stat{}, false
	}
	return Stat{State: f[0], PGrp: pg, StartTicks: t}, true
}

// GroupAlive reports whether process group pgid has a process that is not a
// zombie. Without /proc, a group that exists counts as alive.
func GroupAlive(pgid int) bool {
	if pgid <= 0 || errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
		return false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := Read(pid); ok && p.PGrp == pgid && p.Live() {
			return true
		}
	}
	return false
}
