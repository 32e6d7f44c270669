package calibrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Output file names inside the run directory.
const (
	InterferenceFile = "interference.yaml"
	SamplesFile      = "samples.parquet"
	LogsDir          = "logs"
)

// RunOptions configures Run.
type RunOptions struct {
	// Probe must be initialized; Run only reads from it.
	Probe Probe
	Plan  *Plan
	// OutDir receives the journal, logs and results (created if missing).
	OutDir string
	// Log receives one human-readable line per cell; nil discards.
	Log io.Writer
	// Host and Created (zero: omitted) are recorded in the matrix metadata.
	Host    string
	Created time.Time
	// Fake marks results as measured with the fake NVML.
	Fake bool
	// MPS starts and stops the MPS control daemon; nil uses ExecMPS with the plan's
	// control command.
	MPS MPSController
	// AfterCell, when set, is called after each cell is journaled (tests use it to
	// interrupt a run).
	AfterCell func(CellResult)
}

// Summary is what Run did.
type Summary struct {
	Cells    int      // cells in the plan
	Measured int      // cells measured by this run (ok or failed)
	Skipped  int      // cells already done in the journal
	Failed   []string // IDs of cells that failed in this run
	Outputs  []string // files written
}

// Run measures every cell of the plan that the journal in OutDir does not already
// hold, then writes interference.yaml, samples.parquet and one heatmap per mode
// (pairs) from all journaled cells. When ctx is cancelled the running cell's
// processes are killed, nothing is written for that cell, and Run returns an error
// wrapping ctx.Err(); re-running resumes. Failed cells are journaled as failed,
// retried by the next run, and reported in the returned error after the outputs
// are written.
func Run(ctx context.Context, o RunOptions) (*Summary, error) {
	p := o.Plan
	logw := o.Log
	if logw == nil {
		logw = io.Discard
	}
	n, err := o.Probe.DeviceCount()
	if err != nil {
		return nil, fmt.Errorf("device count: %w", err)
	}
	if p.GPU >= n {
		return nil, fmt.Errorf("plan gpu %d: the node has %d GPU(s)", p.GPU, n)
	}
	dev, err := o.Probe.DeviceInfo(p.GPU)
	if err != nil {
		return nil, fmt.Errorf("GPU %d: %w", p.GPU, err)
	}
	migInstances, err := checkModes(p, dev)
	if err != nil {
		return nil, err
	}
	driver, _ := o.Probe.DriverVersion()
	cuda, _ := o.Probe.CUDAVersion()

	if err := os.MkdirAll(filepath.Join(o.OutDir, LogsDir), 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	// One run per directory: a second concurrent run would interleave the journal.
	lock, err := os.OpenFile(filepath.Join(o.OutDir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return nil, fmt.Errorf("%s is in use by another gpusim calibrate run: %w", o.OutDir, err)
	}
	j, err := OpenJournal(filepath.Join(o.OutDir, JournalFile), p.Hash())
	if err != nil {
		return nil, err
	}
	defer j.Close()

	mps := o.MPS
	if mps == nil {
		mps = &ExecMPS{Command: p.MPS.ControlCommand, GPU: dev.UUID}
	}
	r := &runner{o: o, p: p, dev: dev, mig: migInstances, log: logw}
	sum := &Summary{}
	cells := p.Cells()
	sum.Cells = len(cells)
	for mi := 0; mi < len(cells); {
		mode := cells[mi].Mode
		var pending []Cell
		for ; mi < len(cells) && cells[mi].Mode == mode; mi++ {
			if _, ok := j.Done[cells[mi].ID()]; ok {
				sum.Skipped++
			} else {
				pending = append(pending, cells[mi])
			}
		}
		if len(pending) == 0 {
			continue
		}
		var modeEnv []string
		if mode == ModeMPS {
			if modeEnv, err = mps.Start(ctx); err != nil {
				return sum, fmt.Errorf("start MPS control daemon: %w", err)
			}
			fmt.Fprintf(logw, "mps: control daemon started\n")
		}
		err := r.runCells(ctx, j, pending, modeEnv, sum)
		if mode == ModeMPS {
			if serr := mps.Stop(); serr != nil {
				err = errors.Join(err, fmt.Errorf("stop MPS control daemon: %w", serr))
			} else {
				fmt.Fprintf(logw, "mps: control daemon stopped\n")
			}
		}
		if err != nil {
			return sum, err
		}
	}

	done := make([]CellResult, 0, len(cells))
	for _, c := range cells {
		if res, ok := j.Done[c.ID()]; ok {
			done = append(done, res)
		}
	}
	meta := MatrixMetadata{
		Name: p.Name, Host: o.Host, GPUModel: ModelSlug(dev.Name), GPUName: dev.Name, GPUUUID: dev.UUID,
		DriverVersion: driver, CUDAVersion: cuda, Fake: o.Fake,
		WarmupSeconds: p.Warmup.Seconds(), MeasureSeconds: p.Measure.Seconds(), Repetitions: p.Repetitions,
	}
	if !o.Created.IsZero() {
		meta.Created = o.Created.UTC().Format(time.RFC3339)
	}
	if err := writeOutputs(o.OutDir, p, done, meta, sum); err != nil {
		return sum, err
	}
	if len(sum.Failed) > 0 {
		return sum, fmt.Errorf("%d cell(s) failed: %s (logs in %s; re-run to retry them)",
			len(sum.Failed), strings.Join(sum.Failed, ", "), filepath.Join(o.OutDir, LogsDir))
	}
	return sum, nil
}

// checkModes verifies the GPU can run the plan's modes without changing its
// configuration and returns the MIG instances for mig mode.
func checkModes(p *Plan, dev DeviceInfo) ([]string, error) {
	var inst []string
	for _, m := range p.Modes {
		switch m {
		case ModeTimeslice, ModeMPS:
			if dev.MIGEnabled {
				return nil, fmt.Errorf("mode %s: GPU %d is in MIG mode; time-slice and MPS cells need a GPU with MIG disabled (gpusim never changes MIG mode)", m, dev.Index)
			}
		case ModeMIG:
			if len(p.MIG.Instances) > 0 {
				inst = p.MIG.Instances
				have := map[string]bool{}
				for _, mi := range dev.MIGInstances {
					have[mi.UUID] = true
				}
				for _, u := range inst {
					if !have[u] {
						return nil, fmt.Errorf("mode mig: mig.instances: %s is not an existing MIG instance of GPU %d", u, dev.Index)
					}
				}
			} else {
				if !dev.MIGEnabled {
					return nil, fmt.Errorf("mode mig: GPU %d is not in MIG mode (gpusim never changes MIG mode; enable it and create instances first, or list mig.instances)", dev.Index)
				}
				for _, mi := range dev.MIGInstances {
					inst = append(inst, mi.UUID)
				}
			}
			if need := p.maxGroup(); len(inst) < need {
				return nil, fmt.Errorf("mode mig: groups of %d need %d MIG instances on GPU %d, found %d", need, need, dev.Index, len(inst))
			}
		}
	}
	return inst, nil
}

type runner struct {
	o   RunOptions
	p   *Plan
	dev DeviceInfo
	mig []string
	log io.Writer
}

func (r *runner) runCells(ctx context.Context, j *Journal, cells []Cell, modeEnv []string, sum *Summary) error {
	for _, c := range cells {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("interrupted; finished cells are journaled in %s, re-run to resume: %w", r.o.OutDir, err)
		}
		res, err := r.runCell(ctx, c, modeEnv)
		if err != nil { // cancelled: the cell is not journaled
			return fmt.Errorf("interrupted during cell %s; finished cells are journaled in %s, re-run to resume: %w", c.ID(), r.o.OutDir, err)
		}
		if err := j.Record(res); err != nil {
			return err
		}
		sum.Measured++
		if res.Status == "ok" {
			tp := make([]string, len(res.Throughput))
			for k, v := range res.Throughput {
				tp[k] = fmt.Sprintf("%s=%.4g/s", c.Members[k], v)
			}
			fmt.Fprintf(r.log, "cell %s: ok %s (%.1fs)\n", res.ID, strings.Join(tp, " "), res.Seconds)
		} else {
			sum.Failed = append(sum.Failed, res.ID)
			fmt.Fprintf(r.log, "cell %s: FAILED: %s\n", res.ID, res.Error)
		}
		if r.o.AfterCell != nil {
			r.o.AfterCell(res)
		}
	}
	return nil
}

func mergeEnv(base []string, add ...map[string]string) []string {
	env := append([]string(nil), base...)
	for _, m := range add {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			env = append(env, k+"="+m[k])
		}
	}
	return env
}

// runCell measures one cell. It returns an error only when ctx was cancelled;
// measurement problems (timeouts, crashes, missing progress) are a failed result.
func (r *runner) runCell(ctx context.Context, c Cell, modeEnv []string) (CellResult, error) {
	res := CellResult{Cell: c, ID: c.ID(), Started: time.Now().UTC()}
	fail := func(format string, args ...any) (CellResult, error) {
		res.Status = "failed"
		res.Error = fmt.Sprintf(format, args...)
		res.Seconds = time.Since(res.Started).Seconds()
		return res, nil
	}
	cctx, cancel := context.WithTimeout(ctx, r.p.Timeout)
	defer cancel()

	var ms []*member
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		return stopMembers(ms, r.p.StopGrace)
	}
	defer func() { _ = stop() }()

	logBase := strings.NewReplacer("/", "_", "+", "_").Replace(res.ID)
	for k, name := range c.Members {
		w := r.p.workload(name)
		device := r.dev.UUID
		if c.Mode == ModeMIG {
			device = r.mig[k]
		}
		res.Devices = append(res.Devices, device)
		env := mergeEnv(os.Environ(), r.p.Env, w.Env, map[string]string{
			"CUDA_VISIBLE_DEVICES":  device,
			"GPUSIM_CALIBRATE_CELL": res.ID,
			"GPUSIM_CALIBRATE_MODE": c.Mode,
			"GPUSIM_MEMBER":         fmt.Sprint(k),
		})
		env = append(env, modeEnv...)
		m, err := startMember(name, w.Command, w.Dir, env, w.Progress.re,
			filepath.Join(r.o.OutDir, LogsDir, fmt.Sprintf("%s.m%d.log", logBase, k)))
		if err != nil {
			return fail("%v", err)
		}
		ms = append(ms, m)
	}

	// Sample NVML for the whole cell; phases are assigned once t0 is known.
	var (
		smu     sync.Mutex
		samples []Sample
		sampErr error
	)
	sampDone := make(chan struct{})
	sampStop := make(chan struct{})
	go func() {
		defer close(sampDone)
		t := time.NewTicker(r.p.SampleInterval)
		defer t.Stop()
		for {
			select {
			case <-sampStop:
				return
			case now := <-t.C:
				s, err := r.o.Probe.Sample(r.p.GPU)
				smu.Lock()
				if err != nil {
					if sampErr == nil {
						sampErr = err
					}
				} else {
					s.Time, s.GPU = now.UTC(), r.p.GPU
					samples = append(samples, s)
				}
				smu.Unlock()
			}
		}
	}()
	stopSampler := func() {
		select {
		case <-sampStop:
		default:
			close(sampStop)
		}
		<-sampDone
	}
	defer stopSampler()

	// Start-up barrier: every member reports progress once.
	poll := time.NewTicker(5 * time.Millisecond)
	defer poll.Stop()
	for {
		ready := true
		for k, m := range ms {
			if len(m.observations()) == 0 {
				ready = false
				if m.exited() {
					return fail("member %d (%s) exited before reporting progress: %v (see logs)", k, m.name, exitText(m.err))
				}
			}
		}
		if ready {
			break
		}
		select {
		case <-cctx.Done():
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			return fail("timeout after %s: not every member reported progress (see logs)", r.p.Timeout)
		case <-poll.C:
		}
	}
	t0 := time.Now()
	from, end := t0.Add(r.p.Warmup), t0.Add(r.p.Warmup+r.p.Measure)
	timer := time.NewTimer(time.Until(end))
	defer timer.Stop()
wait:
	for {
		select {
		case <-cctx.Done():
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			return fail("timeout after %s during warm-up/measurement", r.p.Timeout)
		case <-timer.C:
			break wait
		case <-poll.C:
			for k, m := range ms {
				if m.exited() {
					return fail("member %d (%s) exited during warm-up/measurement: %v (see logs)", k, m.name, exitText(m.err))
				}
			}
		}
	}
	stopSampler()
	if err := stop(); err != nil {
		return fail("%v", err)
	}
	for k, m := range ms {
		w := r.p.workload(m.name)
		tp, err := throughput(m.observations(), w.Progress.re != nil, from, end)
		if err != nil {
			return fail("member %d (%s): %v", k, m.name, err)
		}
		res.Throughput = append(res.Throughput, tp)
	}
	smu.Lock()
	for _, s := range samples {
		phase := "measure"
		switch {
		case s.Time.Before(t0):
			phase = "startup"
		case s.Time.Before(from):
			phase = "warmup"
		}
		res.Samples = append(res.Samples, CellSample{Phase: phase, Sample: s})
	}
	if sampErr != nil && len(samples) == 0 {
		fmt.Fprintf(r.log, "cell %s: warning: NVML sampling failed: %v\n", res.ID, sampErr)
	}
	smu.Unlock()
	res.Status = "ok"
	res.Seconds = time.Since(res.Started).Seconds()
	return res, nil
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
