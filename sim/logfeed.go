package sim

import (
	"errors"
	"sync"
)

// logFeedStep is how many events the engine records between two publications
// to a LogFeed (a power of two: the test in record is a mask).
const logFeedStep = 1 << 14

// ErrRunAborted is returned by LogFeed.Wait when the run that feeds it ended
// with an error (or was cancelled): the log it saw is incomplete.
var ErrRunAborted = errors.New("the run ended before its event log was complete")

// LogFeed hands an engine's event log to a concurrent reader while the engine
// runs, so that a writer can encode the events recorded so far instead of
// waiting for the end of the run (gpusim run streams events.parquet this way).
//
// The engine publishes its log every logFeedStep events and once when Run
// returns. Events already published never change: a reader may use the slice
// Wait returns (up to its length) while the engine keeps appending. Set it as
// Config.LogFeed; a feed serves one engine.
type LogFeed struct {
	mu      sync.Mutex
	cond    sync.Cond
	jobs    []Job
	log     []Event
	done    bool
	aborted bool
}

// NewLogFeed returns an empty feed.
func NewLogFeed() *LogFeed {
	f := &LogFeed{}
	f.cond.L = &f.mu
	return f
}

// publish makes log[:len(log)] visible to readers; done says the run is over
// (aborted: with an error).
func (f *LogFeed) publish(log []Event, done, aborted bool) {
	f.mu.Lock()
	f.log, f.done, f.aborted = log, done, aborted
	f.mu.Unlock()
	f.cond.Broadcast()
}

// Wait blocks until at least n events are published or the run has ended, and
// returns the published log and whether the run has ended (then the log is
// whole). When the run ended with an error it returns ErrRunAborted.
func (f *LogFeed) Wait(n int) ([]Event, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.log) < n && !f.done {
		f.cond.Wait()
	}
	if f.aborted {
		return nil, true, ErrRunAborted
	}
	return f.log, f.done, nil
}

// Jobs returns the job table of the engine the feed serves (nil before
// NewEngine). While the run goes on, readers may read only the jobs' Spec,
// which the engine never changes after NewEngine.
func (f *LogFeed) Jobs() []Job {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.jobs
}

// Abort ends the feed as aborted without a run: for callers whose engine
// failed to build or run, so a reader blocked in Wait returns.
func (f *LogFeed) Abort() { f.publish(nil, true, true) }
