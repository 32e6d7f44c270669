package sim

import "math"

// Rate-based progress.
//
// When GPU sharing is configured (Config.Sharing), a running job's speed may
// change while it runs: a co-runner arrives on or leaves its GPU. The engine then
// keeps each running job's progress as a runState: the integer work done (µs at
// reference speed) and the checkpoint/restore phase at the start of the current
// speed segment. At every speed change it closes the segment (advancing the state
// by the elapsed wall time at the old speed), opens a new one at the new speed and
// reschedules the job's end event. Only the jobs of the GPU whose occupancy changed
// are touched.
//
// Rounding rule (the same everywhere, so incremental and from-scratch accounting
// agree to the microsecond):
//
//	credit(w, s) = floor(w * s)                    work done by w µs of wall time at speed s
//	wallFor(r, s) = min { w >= 0 : credit(w, s) >= r }   wall time to do r µs of work
//
// A segment shorter than wallFor(remaining) credits credit(w, s) µs of work; the
// end event is at now + wallFor(remaining) (plus any restore and checkpoint saves),
// at which point the work is exactly the job's duration. State is integers only, so
// there is no floating-point drift across segments: each segment rounds once, down
// to a whole microsecond (a product within a few ulps below an integer counts as
// that integer, so that hand-worked cases such as 50 s at 0.6 = 30 s are exact).
//
// Without sharing the engine keeps its closed-form accounting (runWall,
// runProgress), so existing outputs are unchanged.

// credit is the work (µs at reference speed) done by w µs of wall time at speed s:
// floor(w*s), where a product within a few ulps below an integer counts as that
// integer (so that 50 s at 0.6 is exactly 30 s, not 29.999999 s).
func credit(w Duration, s float64) Duration {
	if s == 1 {
		return w
	}
	x := float64(w) * s
	f := math.Floor(x)
	if f+1-x <= x*4e-16 {
		f++
	}
	return Duration(f)
}

// wallFor is the least wall time w with credit(w, s) >= r (0 for r <= 0).
func wallFor(r Duration, s float64) Duration {
	if r <= 0 {
		return 0
	}
	if s == 1 {
		return r
	}
	w := Duration(math.Ceil(float64(r) / s))
	for w > 0 && credit(w-1, s) >= r {
		w--
	}
	for credit(w, s) < r {
		w++
	}
	return w
}

// runState is a running job's progress at the start (t0) of its current speed
// segment under the rate-based model. All amounts are µs: work (done, ckpt) at
// reference speed, the others wall time of the current run.
type runState struct {
	t0       Time     // start of the current speed segment
	done     Duration // work done
	ckpt     Duration // work kept by the latest completed checkpoint (>= the run's starting work)
	restLeft Duration // restore time still to spend before making progress
	saveLeft Duration // wall time left of the checkpoint save in progress (a checkpoint of done)
	ovh      Duration // restore and save time spent so far in this run
	prod     Duration // productive wall time spent so far in this run
	prodCkpt Duration // productive wall time that produced ckpt (from the run's start)
}

// newRunState starts a run with work done d0 and restore time rest at t.
func newRunState(t Time, d0, rest Duration) runState {
	return runState{t0: t, done: d0, ckpt: d0, restLeft: rest}
}

// advance moves st forward by el of wall time at speed s (el >= 0) toward total
// work, spending restore time first, then finishing a save in progress, then
// alternating work and periodic checkpoint saves (a checkpoint at every multiple of
// iv strictly below total, each taking c of wall time; c <= 0 means instant).
// Whole checkpoint cycles are skipped in O(1).
func (st *runState) advance(el Duration, s float64, total, iv, c Duration) {
	t := el
	if x := min(t, st.restLeft); x > 0 {
		st.restLeft -= x
		st.ovh += x
		t -= x
	}
	if st.saveLeft > 0 && t > 0 {
		x := min(t, st.saveLeft)
		st.saveLeft -= x
		st.ovh += x
		t -= x
		if st.saveLeft == 0 {
			st.ckpt, st.prodCkpt = st.done, st.prod
		}
	}
	for t > 0 && st.done < total {
		if iv <= 0 || c <= 0 {
			d0, p0 := st.done, st.prod
			if need := wallFor(total-st.done, s); t >= need {
				st.done, st.prod = total, st.prod+need
			} else {
				st.done, st.prod = st.done+credit(t, s), st.prod+t
			}
			if iv > 0 {
				// instant checkpoints at every multiple of iv
				if k := st.done / iv * iv; k > st.ckpt {
					st.ckpt = k
					st.prodCkpt = p0 + wallFor(k-d0, s)
				}
			}
			return
		}
		nx := (st.done/iv + 1) * iv
		if nx >= total { // last stretch: no checkpoint before the end
			if need := wallFor(total-st.done, s); t >= need {
				st.done, st.prod = total, st.prod+need
			} else {
				st.done, st.prod = st.done+credit(t, s), st.prod+t
			}
			return
		}
		need := wallFor(nx-st.done, s)
		if t < need {
			st.done, st.prod = st.done+credit(t, s), st.prod+t
			return
		}
		t -= need
		st.done, st.prod = nx, st.prod+need
		x := min(t, c)
		st.ovh += x
		t -= x
		if x < c {
			st.saveLeft = c - x
			return
		}
		st.ckpt, st.prodCkpt = nx, st.prod
		// whole cycles (work iv, save c) while checkpoints remain before total
		w := wallFor(iv, s)
		cyc := w + c
		if k := min(t/cyc, (total-1)/iv-nx/iv); k > 0 {
			t -= k * cyc
			st.done += k * iv
			st.prod += k * w
			st.ovh += k * c
			st.ckpt, st.prodCkpt = st.done, st.prod
		}
	}
}

// wallToEnd is the wall time from st until the work reaches total at speed s,
// including the restore and saves still due.
func (st *runState) wallToEnd(s float64, total, iv, c Duration) Duration {
	w := st.restLeft + st.saveLeft
	if st.done >= total {
		return w
	}
	if iv <= 0 || c <= 0 {
		return w + wallFor(total-st.done, s)
	}
	nx := (st.done/iv + 1) * iv
	if nx >= total {
		return w + wallFor(total-st.done, s)
	}
	w += wallFor(nx-st.done, s) + c
	k := (total-1)/iv - nx/iv // further checkpoints strictly before total
	w += k * (wallFor(iv, s) + c)
	return w + wallFor(total-(nx+k*iv), s)
}
