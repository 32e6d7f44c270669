package sim

import (
	"fmt"
	"math"
)

// Time is a point in virtual time: microseconds since the scenario epoch (t=0).
// It never comes from the wall clock.
type Time int64

// Duration is a span of virtual time in microseconds.
type Duration int64

// Common durations.
const (
	Microsecond Duration = 1
	Millisecond          = 1000 * Microsecond
	Second               = 1000 * Millisecond
	Minute               = 60 * Second
	Hour                 = 60 * Minute
)

// Never is a Time later than any event; it marks "no wake-up" and open ends.
const Never Time = math.MaxInt64

// Seconds converts a float number of seconds to a Duration, rounding to the nearest
// microsecond. It saturates instead of overflowing.
func Seconds(s float64) Duration {
	us := math.Round(s * 1e6)
	if us >= math.MaxInt64 {
		return Duration(math.MaxInt64)
	}
	if us <= math.MinInt64 {
		return Duration(math.MinInt64)
	}
	return Duration(us)
}

// Seconds returns t in seconds since the epoch.
func (t Time) Seconds() float64 { return float64(t) / 1e6 }

// Seconds returns d in seconds.
func (d Duration) Seconds() float64 { return float64(d) / 1e6 }

// Add returns t+d, saturating at Never.
func (t Time) Add(d Duration) Time {
	if d > 0 && t > Never-Time(d) {
		return Never
	}
	return t + Time(d)
}

// Sub returns t-u.
func (t Time) Sub(u Time) Duration { return Duration(t - u) }

// String formats t as seconds with microsecond precision (e.g. "12.5s").
func (t Time) String() string {
	if t == Never {
		return "never"
	}
	return fmt.Sprintf("%gs", t.Seconds())
}

// String formats d as seconds.
func (d Duration) String() string { return fmt.Sprintf("%gs", d.Seconds()) }
