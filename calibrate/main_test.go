package calibrate

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the fake workloads: with GPUSIM_CAL_FAKE set it runs
// one of them instead of the tests.
//
//	bucket   shares a token bucket (an flock'd file per CUDA_VISIBLE_DEVICES) with
//	         every other bucket process on the same device: an item occupies the
//	         bucket for FAKE_HOLD_MS, then the process pauses FAKE_GAP_MS. Alone it
//	         makes one item per hold+gap; n co-located members each make one per
//	         n*hold, so the expected speed factor is (hold+gap)/(n*hold).
//	regex    prints "rate=<FAKE_RATE> items/s" every 10ms.
//	hang     ignores SIGTERM, starts a "sleeper" child, never reports progress.
//	sleeper  ignores SIGTERM and sleeps.
//	crash    exits with status 3 at once.
//
// Every fake writes its pid into FAKE_PIDS (a directory) so tests can check that
// no process outlives its cell.
func TestMain(m *testing.M) {
	if mode := os.Getenv("GPUSIM_CAL_FAKE"); mode != "" {
		os.Exit(fakeWorkload(mode))
	}
	os.Exit(m.Run())
}

func envMS(k string, def int) time.Duration {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return time.Duration(v) * time.Millisecond
	}
	return time.Duration(def) * time.Millisecond
}

func fakeWorkload(mode string) int {
	if dir := os.Getenv("FAKE_PIDS"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, strconv.Itoa(os.Getpid())), []byte(mode), 0o644)
	}
	switch mode {
	case "bucket":
		dev := os.Getenv("CUDA_VISIBLE_DEVICES")
		f, err := os.OpenFile(filepath.Join(os.Getenv("FAKE_LOCK_DIR"), "bucket-"+dev), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		hold, gap := envMS("FAKE_HOLD_MS", 10), envMS("FAKE_GAP_MS", 2)
		// The bucket is a shared virtual timeline: T (in the file) is when the
		// bucket is next free. Each item takes the next hold-long slot at or after
		// the process's own virtual request time v; the process sleeps until the
		// slot ends, reports, and requests again gap later. Working in virtual time
		// makes the rates exact even when the machine is loaded and sleeps overshoot.
		v := time.Now().UnixNano()
		var buf [8]byte
		for items := 1; ; items++ {
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			T := int64(0)
			if n, _ := f.ReadAt(buf[:], 0); n == 8 {
				T = int64(binary.LittleEndian.Uint64(buf[:]))
			}
			c := max(v, T) + int64(hold)
			binary.LittleEndian.PutUint64(buf[:], uint64(c))
			if _, err := f.WriteAt(buf[:], 0); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			time.Sleep(time.Until(time.Unix(0, c)))
			fmt.Printf("gpusim-progress items=%d\n", items)
			v = c + int64(gap)
		}
	case "regex":
		for {
			fmt.Printf("step done, rate=%s items/s\n", os.Getenv("FAKE_RATE"))
			time.Sleep(10 * time.Millisecond)
		}
	case "hang":
		signal.Ignore(syscall.SIGTERM)
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), "GPUSIM_CAL_FAKE=sleeper")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		select {}
	case "sleeper":
		signal.Ignore(syscall.SIGTERM)
		time.Sleep(time.Hour)
		return 0
	case "crash":
		fmt.Fprintln(os.Stderr, "fake workload crashing")
		return 3
	}
	fmt.Fprintln(os.Stderr, "unknown fake workload", mode)
	return 2
}

// livePIDs returns the pids recorded in dir whose process still runs (zombies
// count as gone).
func livePIDs(t *testing.T, dir string) []int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var live []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if state, _, ok := procStat(pid); ok && state != "Z" && state != "X" {
			live = append(live, pid)
		}
	}
	return live
}
