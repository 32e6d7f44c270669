package sim

import (
	"testing"

	"pgregory.net/rapid"
)

// At speed 1 the rate-based run state agrees exactly with the closed-form
// checkpoint model (runWall, runProgress) that runs without sharing.
func TestRunStateMatchesClosedFormAtSpeed1(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		iv := Duration(rapid.IntRange(0, 50).Draw(t, "iv"))
		c := Duration(rapid.IntRange(0, 7).Draw(t, "save"))
		rest := Duration(rapid.IntRange(0, 9).Draw(t, "restore"))
		total := Duration(rapid.IntRange(0, 300).Draw(t, "total"))
		d0 := Duration(rapid.IntRange(0, int(total)).Draw(t, "d0"))
		if iv > 0 {
			d0 = d0 / iv * iv // runs start from a checkpoint
		}
		e := &Engine{cfg: Config{CheckpointInterval: iv, CheckpointSave: c}}
		j := &Job{Spec: JobSpec{Duration: total}, runDone: d0, runRestore: rest, speed: 1}
		st := newRunState(0, d0, rest)
		if got, want := st.wallToEnd(1, total, iv, c), e.runWall(d0, total, 1, iv)+rest; got != want {
			t.Fatalf("wallToEnd %d, runWall %d", got, want)
		}
		el := Duration(rapid.IntRange(0, int(st.wallToEnd(1, total, iv, c))).Draw(t, "el"))
		st.advance(el, 1, total, iv, c)
		done, ckpt, ovh := e.runProgress(j, el)
		if st.done != done || st.ckpt != ckpt || st.ovh != ovh {
			t.Fatalf("after %d: state done %d ckpt %d ovh %d, closed form %d %d %d", el, st.done, st.ckpt, st.ovh, done, ckpt, ovh)
		}
	})
}

// Splitting a run into segments at the same speed and advancing piece by piece
// reaches the end at exactly the time wallToEnd predicted at the start (the end
// is recomputed at every boundary), for any speed: work conserved up to the
// documented floor rounding, end consistent.
func TestRunStateSegmentsEndConsistent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		iv := Duration(rapid.IntRange(0, 5000).Draw(t, "iv"))
		c := Duration(rapid.IntRange(0, 70).Draw(t, "save"))
		total := Duration(rapid.IntRange(1, 100000).Draw(t, "total"))
		speeds := []float64{1, 0.5, 0.6, 0.7, 0.3333, 0.123, 0.9}
		st := newRunState(0, 0, Duration(rapid.IntRange(0, 50).Draw(t, "restore")))
		now := Time(0)
		for range 200 {
			s := speeds[rapid.IntRange(0, len(speeds)-1).Draw(t, "speed")]
			left := st.wallToEnd(s, total, iv, c)
			step := Duration(rapid.IntRange(0, int(left)).Draw(t, "step"))
			before := st.done
			st.advance(step, s, total, iv, c)
			now = now.Add(step)
			if st.done < before || st.done > total {
				t.Fatalf("work went from %d to %d (total %d)", before, st.done, total)
			}
			if step == left {
				if st.done != total || st.restLeft != 0 || st.saveLeft != 0 {
					t.Fatalf("at the predicted end: %+v, total %d", st, total)
				}
				return
			}
			if st.done == total && st.restLeft == 0 && st.saveLeft == 0 && step < left {
				t.Fatalf("finished %d µs before the predicted end", left-step)
			}
		}
	})
}

func TestCreditWallFor(t *testing.T) {
	for _, c := range []struct {
		w Duration
		s float64
		r Duration
	}{{50_000_000, 0.6, 30_000_000}, {50_000_000, 0.7, 35_000_000}, {3, 1.0 / 3, 1}, {42_857_143, 0.7, 30_000_000}} {
		if got := credit(c.w, c.s); got != c.r {
			t.Errorf("credit(%d, %v) = %d, want %d", c.w, c.s, got, c.r)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		r := Duration(rapid.Int64Range(0, 1e12).Draw(t, "r"))
		s := rapid.Float64Range(0.001, 2).Draw(t, "s")
		w := wallFor(r, s)
		if credit(w, s) < r || w > 0 && credit(w-1, s) >= r {
			t.Fatalf("wallFor(%d, %v) = %d not minimal: credit %d, credit(w-1) %d", r, s, w, credit(w, s), credit(w-1, s))
		}
	})
}
