package calibrate

import (
	"context"
	"fmt"
	"io"
	"time"
)

// TelemetryOptions configures Telemetry.
type TelemetryOptions struct {
	Interval time.Duration // sampling period (> 0)
	Duration time.Duration // total time; 0 = until ctx is cancelled
	// GPUs to sample; empty = all.
	GPUs []int
	// Progress, when set, is called after each round of samples.
	Progress func(round int, at time.Time)
	// Emit, when set, receives each round's samples (GPU order) instead of
	// Telemetry accumulating them; an Emit error stops sampling.
	Emit func([]Sample) error
}

// Telemetry samples every selected GPU each Interval (the first round
// immediately) until Duration has passed or ctx is cancelled, and returns the
// samples in time then GPU order (none when Emit is set: each round goes to Emit).
// Cancellation is not an error: the samples taken so far are returned. A sample or
// Emit error aborts with the samples so far.
func Telemetry(ctx context.Context, p Probe, o TelemetryOptions) ([]Sample, error) {
	if o.Interval <= 0 {
		return nil, fmt.Errorf("interval must be > 0, got %s", o.Interval)
	}
	if o.Duration < 0 {
		return nil, fmt.Errorf("duration must be >= 0, got %s", o.Duration)
	}
	n, err := p.DeviceCount()
	if err != nil {
		return nil, fmt.Errorf("device count: %w", err)
	}
	gpus := o.GPUs
	if len(gpus) == 0 {
		for i := 0; i < n; i++ {
			gpus = append(gpus, i)
		}
	}
	for _, g := range gpus {
		if g < 0 || g >= n {
			return nil, fmt.Errorf("GPU %d: the node has %d GPU(s)", g, n)
		}
	}
	start := time.Now()
	var end <-chan time.Time
	if o.Duration > 0 {
		t := time.NewTimer(o.Duration)
		defer t.Stop()
		end = t.C
	}
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	var out []Sample
	now := start
	for round := 0; ; round++ {
		batch := make([]Sample, 0, len(gpus))
		for _, g := range gpus {
			s, err := p.Sample(g)
			if err != nil {
				return out, fmt.Errorf("GPU %d sample: %w", g, err)
			}
			s.Time, s.GPU = now.UTC(), g
			batch = append(batch, s)
		}
		if o.Emit != nil {
			if err := o.Emit(batch); err != nil {
				return out, err
			}
		} else {
			out = append(out, batch...)
		}
		if o.Progress != nil {
			o.Progress(round, now)
		}
		select {
		case <-ctx.Done():
			return out, nil
		case <-end:
			return out, nil
		case now = <-tick.C:
		}
	}
}

// WriteTelemetryParquet writes telemetry samples (no cell columns).
func WriteTelemetryParquet(w io.Writer, samples []Sample) error {
	rows := make([]SampleRow, len(samples))
	for i, s := range samples {
		rows[i] = SampleRow{Sample: s}
	}
	return WriteSamplesParquet(w, rows, false)
}
