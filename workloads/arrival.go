package workloads

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// arrivals returns n nondecreasing arrival times in seconds from t=0 for process a
// with long-run mean rate (jobs per second).
//
//   - poisson: exponential gaps with mean 1/rate.
//   - diurnal: rate(t) = rate * (1 + A cos(2*pi*(t/P - peakHour/24))) with
//     A = (R-1)/(R+1) for peak-to-trough ratio R and period P, by thinning. The
//     mean over whole periods is rate.
//   - bursty: a two-state Markov-modulated Poisson process. Bursts last Exp(mean
//     meanBurstS); quiet spells Exp(mean meanBurstS*(1-f)/f) for burst fraction f;
//     the in-burst rate is burstFactor times the quiet rate, and the quiet rate is
//     rate / (f*burstFactor + 1 - f) so the long-run mean is rate. The initial
//     state is drawn from the stationary distribution.
func arrivals(a *Arrival, rate float64, n int, r *rand.Rand) ([]float64, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("workload: arrival rate must be a finite number > 0, got %g", rate)
	}
	out := make([]float64, n)
	t := 0.0
	switch a.Process {
	case ProcessPoisson:
		for i := range out {
			t += r.ExpFloat64() / rate
			out[i] = t
		}
	case ProcessDiurnal:
		amp := DiurnalAmplitude(a.PeakToTrough)
		lmax := rate * (1 + amp)
		p := float64(a.PeriodS)
		phase := a.PeakHour / 24
		for i := range out {
			for {
				t += r.ExpFloat64() / lmax
				lt := rate * (1 + amp*math.Cos(2*math.Pi*(t/p-phase)))
				if r.Float64()*lmax < lt {
					break
				}
			}
			out[i] = t
		}
	case ProcessBursty:
		f, b, l := a.BurstFraction, a.BurstFactor, float64(a.MeanBurstS)
		quiet := rate / (f*b + 1 - f)
		rates := [2]float64{quiet, quiet * b}         // [quiet, burst]
		leave := [2]float64{f / (l * (1 - f)), 1 / l} // 1/mean sojourn
		if switches := 2 * leave[1] * f * float64(n) / rate; switches > maxSwitches {
			return nil, fmt.Errorf("workload: bursty arrivals would switch state about %.3g times (meanBurstS %g s is too short for this span)", switches, l)
		}
		st := 0
		if r.Float64() < f {
			st = 1
		}
		for i := 0; i < n; {
			tot := rates[st] + leave[st]
			t += r.ExpFloat64() / tot
			if r.Float64()*tot < rates[st] {
				out[i] = t
				i++
			} else {
				st = 1 - st
			}
		}
	default:
		return nil, fmt.Errorf("workload: unknown arrival process %q", a.Process)
	}
	return out, nil
}

// DiurnalAmplitude converts a peak-to-trough rate ratio R >= 1 to the relative
// amplitude A = (R-1)/(R+1) of rate(t) = mean*(1 + A cos(...)).
func DiurnalAmplitude(peakToTrough float64) float64 {
	return (peakToTrough - 1) / (peakToTrough + 1)
}
