package workloads

import (
	"math"
)

// Thresholds of the arrival-process choice in TraceStats.Process.
const (
	// MinDiurnalDays is the fewest whole days needed to test for a daily cycle.
	MinDiurnalDays = 3
	// DiurnalScoreMin is the DiurnalScore above which the daily cycle is significant.
	DiurnalScoreMin = 16
	// MinDiurnalAmp is the smallest relative amplitude reported as diurnal.
	MinDiurnalAmp = 0.1
	// MinBurstFactor and MinBurstCV are the smallest fitted burst factor and gap
	// coefficient of variation reported as bursty.
	MinBurstFactor = 3.0
	MinBurstCV     = 1.2
)

// Process returns the arrival block the statistics support: diurnal when the daily
// harmonic is significant (DiurnalScore > DiurnalScoreMin over at least
// MinDiurnalDays whole days) and its amplitude is at least MinDiurnalAmp; else
// bursty when the gaps are over-dispersed (CV >= MinBurstCV) and the fitted burst
// factor is at least MinBurstFactor; else poisson.
func (st TraceStats) Process() Arrival {
	if st.DiurnalScore > DiurnalScoreMin && st.DiurnalAmp >= MinDiurnalAmp {
		a := st.DiurnalAmp
		return Arrival{Process: ProcessDiurnal, PeakToTrough: round4((1 + a) / (1 - a)),
			PeriodS: DefaultPeriodS, PeakHour: round4(st.PeakHour)}
	}
	if st.GapCV >= MinBurstCV && st.Burst.Process == ProcessBursty && st.Burst.BurstFactor >= MinBurstFactor {
		return st.Burst
	}
	return Arrival{Process: ProcessPoisson}
}

// diurnalHarmonic fits rate(t) ∝ 1 + A cos(2π(t/P - peak/24)) to arrival times by
// the first Fourier coefficient of the time-of-day profile, A = 2|Σ e^{iωt}|/n,
// over whole periods from the first arrival (a partial period would bias it). The
// score compares the per-period coefficients' mean with their spread,
// |mean|² / (var/periods), so over-dispersed (bursty) arrivals do not fake a
// cycle; it is 0 with fewer than MinDiurnalDays periods.
func diurnalHarmonic(ts []float64, period float64) (amp, peakHour, score float64) {
	t0 := ts[0]
	days := int(math.Floor((ts[len(ts)-1] - t0) / period))
	if days < 1 {
		return 0, 0, 0
	}
	zc := make([]float64, days)
	zs := make([]float64, days)
	n := 0
	for _, t := range ts {
		d := int((t - t0) / period)
		if d >= days {
			break
		}
		w := 2 * math.Pi * t / period
		zc[d] += math.Cos(w)
		zs[d] += math.Sin(w)
		n++
	}
	var c, s float64
	for d := range days {
		c += zc[d]
		s += zs[d]
	}
	if n == 0 {
		return 0, 0, 0
	}
	amp = min(2*math.Hypot(c, s)/float64(n), 0.999)
	peakHour = math.Atan2(s, c) / (2 * math.Pi) * 24
	if peakHour <= 0 {
		peakHour += 24
	}
	if days >= MinDiurnalDays {
		mc, ms := c/float64(days), s/float64(days)
		var v float64
		for d := range days {
			v += (zc[d]-mc)*(zc[d]-mc) + (zs[d]-ms)*(zs[d]-ms)
		}
		v /= float64(days - 1)
		if v > 0 {
			score = (mc*mc + ms*ms) / (v / float64(days))
		} else if mc != 0 || ms != 0 {
			score = math.Inf(1)
		}
	}
	return amp, peakHour, score
}

// fitBursty fits a two-state MMPP to sorted arrival times ts with gaps:
//
//  1. a two-phase hyperexponential to the gaps by EM gives the burst and quiet
//     rates r1 > r0 and the share p of burst gaps; burstFactor = r1/r0 and, since
//     p is also the share of arrivals in bursts, burstFraction
//     f = p / (p + burstFactor (1 - p));
//  2. the mean burst length L comes from the index of dispersion of counts in
//     windows of T: for an MMPP, Var/Mean = 1 + K/q (1 - (1 - e^{-qT})/(qT)) with
//     K = 2 (r1-r0)² f(1-f) / mean rate and q = 1/(L(1-f)), solved for q.
//
// It returns the zero Arrival when the fit fails (too few gaps, no separation).
func fitBursty(ts, gaps []float64) Arrival {
	if len(gaps) < 50 {
		return Arrival{}
	}
	r1, r0, p, ok := hyperExpEM(gaps)
	if !ok || r1 <= r0 || p <= 0 || p >= 1 {
		return Arrival{}
	}
	b := r1 / r0
	f := p / (p + b*(1-p))
	span := ts[len(ts)-1] - ts[0]
	mean := float64(len(gaps)) / span
	// Windows of about 30 expected arrivals, at least 50 windows.
	w := min(30/mean, span/50)
	if !(w > 0) {
		return Arrival{}
	}
	nw := int(span / w)
	counts := make([]float64, nw)
	for _, t := range ts {
		k := int((t - ts[0]) / w)
		if k < nw {
			counts[k]++
		}
	}
	m, sd := meanStd(counts)
	if m <= 0 {
		return Arrival{}
	}
	idc := sd * sd / m
	// The MMPP's own rates imply its mean; use them for K for consistency.
	lm := f*r1 + (1-f)*r0
	k := 2 * (r1 - r0) * (r1 - r0) * f * (1 - f) / lm
	g := func(q float64) float64 {
		x := q * w
		return 1 + k/q*(1-(1-math.Exp(-x))/x)
	}
	// g decreases in q; bracket q so that L = 1/(q(1-f)) lies in [1 s, span].
	lo, hi := 1/(span*(1-f)), 1/(1-f)
	switch {
	case idc >= g(lo):
		hi = lo
	case idc <= g(hi):
		lo = hi
	default:
		for range 200 {
			mid := math.Sqrt(lo * hi)
			if g(mid) > idc {
				lo = mid
			} else {
				hi = mid
			}
		}
	}
	q := math.Sqrt(lo * hi)
	l := 1 / (q * (1 - f))
	if !finite(l) || !finite(b) || !finite(f) {
		return Arrival{}
	}
	return Arrival{Process: ProcessBursty, BurstFactor: round4(min(max(b, 1), MaxRatio)),
		MeanBurstS: Seconds(round4(min(max(l, 1), MaxDurationS))), BurstFraction: round4(min(max(f, 1e-4), 0.9999))}
}

// maxEMGaps caps the gaps the EM fit uses (an evenly strided subsample beyond).
const maxEMGaps = 50000

// hyperExpEM fits p Exp(r1) + (1-p) Exp(r0) to x by expectation-maximization.
func hyperExpEM(x []float64) (r1, r0, p float64, ok bool) {
	if len(x) > maxEMGaps {
		stride := (len(x) + maxEMGaps - 1) / maxEMGaps
		sub := make([]float64, 0, maxEMGaps)
		for i := 0; i < len(x); i += stride {
			sub = append(sub, x[i])
		}
		x = sub
	}
	m, _ := meanStd(x)
	if !(m > 0) {
		return 0, 0, 0, false
	}
	r1, r0, p = 3/m, 0.3/m, 0.5
	for range 500 {
		// responsibility of the fast phase: sigmoid(c - (r1-r0) v)
		c := math.Log(p*r1) - math.Log((1-p)*r0)
		dr := r1 - r0
		var sr, srx, sx float64
		for _, v := range x {
			r := 1 / (1 + math.Exp(dr*v-c))
			sr += r
			srx += r * v
			sx += v
		}
		sq, sqx := float64(len(x))-sr, sx-srx
		if sr <= 0 || sq <= 0 || srx <= 0 || sqx <= 0 {
			return 0, 0, 0, false
		}
		np, n1, n0 := sr/float64(len(x)), sr/srx, sq/sqx
		if n1 < n0 {
			n1, n0, np = n0, n1, 1-np
		}
		if np <= 1e-9 || np >= 1-1e-9 {
			return 0, 0, 0, false
		}
		done := math.Abs(n1-r1) <= 1e-7*r1 && math.Abs(n0-r0) <= 1e-7*r0 && math.Abs(np-p) <= 1e-7
		r1, r0, p = n1, n0, np
		if done {
			break
		}
	}
	return r1, r0, p, finite(r1) && finite(r0) && r0 > 0
}
