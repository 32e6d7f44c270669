package volcanofid

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strings"
	"time"
)

// SessionFit is the least-squares line through vc-scheduler's session
// openings: session k opened at First + k*Period (simulated seconds from T0).
// vc-scheduler runs its sessions with wait.Until(runOnce, period), which
// restarts the period when a session returns, so the real spacing is the
// configured period plus each session's run time and the sessions drift
// against any fixed grid.
type SessionFit struct {
	Times []float64 // every session's opening (simulated seconds from T0)
	// Added is when vc-scheduler's cache got each pod (by pod name) and each
	// PodGroup ("podgroup/<name>"), from its event handlers' log lines.
	Added         map[string]float64
	N             int     // sessions from T0 to the end of the recording
	First, Period float64 // simulated seconds
	MaxResidual   float64 // largest |observed - fitted| (simulated seconds)
}

// klogTime parses the header of a klog line ("I1126 21:12:46.973042 ...")
// in loc, in year.
func klogTime(line string, year int, loc *time.Location) (time.Time, bool) {
	if len(line) < 21 {
		return time.Time{}, false
	}
	t, err := time.ParseInLocation("0102 15:04:05.000000", line[1:21], loc)
	if err != nil {
		return time.Time{}, false
	}
	return t.AddDate(year, 0, 0), true
}

// fitSessions reads the "Open Session" lines of vc-scheduler's log (-v=3,
// framework/session.go OpenSession) and fits their times from t0 to end
// (simulated seconds, scale = real seconds per simulated second). It also
// collects when each pod and PodGroup reached the scheduler's cache (-v=4).
func fitSessions(logPath string, t0 time.Time, scale, end float64) (SessionFit, error) {
	fh, err := os.Open(logPath)
	if err != nil {
		return SessionFit{}, fmt.Errorf("volcanofid: %w", err)
	}
	defer fh.Close()
	var ts []float64
	added := map[string]float64{}
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		var name string
		switch {
		case strings.Contains(line, "] Open Session "):
		case strings.Contains(line, "] Added pod <"+namespace+"/"):
			// event_handlers.go addPod (V(3)): "Added pod <ns/name> into cache."
			rest := line[strings.Index(line, "] Added pod <"+namespace+"/")+len("] Added pod <"+namespace+"/"):]
			name, _, _ = strings.Cut(rest, ">")
		case strings.Contains(line, "] Add PodGroup("):
			// event_handlers.go addPodGroup (V(4)): "Add PodGroup(name) into cache, ..."
			rest := line[strings.Index(line, "] Add PodGroup(")+len("] Add PodGroup("):]
			pg, _, _ := strings.Cut(rest, ")")
			name = "podgroup/" + pg
		default:
			continue
		}
		t, ok := klogTime(line, t0.Year(), time.Local)
		if !ok {
			continue
		}
		s := t.Sub(t0).Seconds() / scale
		if name != "" {
			if _, dup := added[name]; !dup {
				added[name] = s
			}
			continue
		}
		if s >= 0 && s <= end {
			ts = append(ts, s)
		}
	}
	if err := sc.Err(); err != nil {
		return SessionFit{}, fmt.Errorf("volcanofid: %s: %w", logPath, err)
	}
	f, err := fitLine(ts)
	f.Times, f.Added = ts, added
	return f, err
}

// fitLine fits ts[k] = First + k*Period by least squares.
func fitLine(ts []float64) (SessionFit, error) {
	n := float64(len(ts))
	if len(ts) < 2 {
		return SessionFit{}, fmt.Errorf("volcanofid: %d sessions logged (want >= 2; is vc-scheduler at -v=3?)", len(ts))
	}
	var sk, st, skk, skt float64
	for k, t := range ts {
		x := float64(k)
		sk, st, skk, skt = sk+x, st+t, skk+x*x, skt+x*t
	}
	f := SessionFit{N: len(ts)}
	f.Period = (n*skt - sk*st) / (n*skk - sk*sk)
	f.First = (st - f.Period*sk) / n
	for k, t := range ts {
		f.MaxResidual = math.Max(f.MaxResidual, math.Abs(t-(f.First+f.Period*float64(k))))
	}
	return f, nil
}
