package live

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpusim/gpusim/internal/fsutil"
)

// JournalFile is the journal's name inside the state directory.
const JournalFile = "journal.jsonl"

// JournalVersion is the journal format version (Header.Version).
const JournalVersion = 1

// Record kinds (Record.Rec).
const (
	RecHeader = "header" // first line: what is being run
	RecLaunch = "launch" // about to start a run (written and synced before the fork)
	RecStart  = "start"  // the run's process started: PID, start time, placement
	RecEnd    = "end"    // the run ended on its own or at its walltime (Outcome)
	RecStop   = "stop"   // the run was preempted (requeued) by the policy or an operator
	RecDone   = "done"   // every job ended; outputs written
	RecSubmit = "submit" // a job from the queue directory joined the run (Spec)
)

// Record is one line of the journal (JSON, one object per line). Fields not
// used by a kind are omitted. Times are the run's virtual time in µs.
type Record struct {
	Rec string `json:"rec"`
	// Header.
	Version        int     `json:"version,omitempty"`
	Policy         string  `json:"policy,omitempty"`
	Scenario       string  `json:"scenario,omitempty"`
	ScenarioSHA256 string  `json:"scenario_sha256,omitempty"`
	Scale          float64 `json:"scale,omitempty"`
	EpochUnixNano  int64   `json:"epoch_unix_ns,omitempty"`
	Jobs           int     `json:"jobs,omitempty"`
	// Run records.
	TimeUS int64  `json:"t_us"`
	Job    string `json:"job,omitempty"`
	Run    int    `json:"run"`
	// Start.
	PID        int    `json:"pid,omitempty"`
	StartTicks uint64 `json:"start_ticks,omitempty"` // /proc/PID/stat starttime
	GPUs       []int  `json:"gpus,omitempty"`        // sim GPU ids of the placement
	Nodes      []int  `json:"nodes,omitempty"`       // sim node ids, one per replica
	Devices    string `json:"devices,omitempty"`     // CUDA_VISIBLE_DEVICES given to the run
	// End.
	Outcome string `json:"outcome,omitempty"`
	Exit    *int   `json:"exit,omitempty"` // exit status when known
	// Stop: the engine's Preempt (mode requeue, kill, lease, migrate; grace
	// and migration delay in virtual µs).
	Reason  string `json:"reason,omitempty"`
	Mode    string `json:"mode,omitempty"`
	GraceUS int64  `json:"grace_us,omitempty"`
	DelayUS int64  `json:"delay_us,omitempty"`
	// Submit.
	Spec *SpecRecord `json:"spec,omitempty"`
}

// Journal is the append-only, fsynced record of a live run: a restarted runner
// reads it back (Records) to resume without starting any run twice.
type Journal struct {
	f       *os.File
	path    string
	records []Record
}

// OpenJournal opens (creating if needed) dir/journal.jsonl and reads its
// records. A torn last line (a crash in the middle of a write) is dropped and
// truncated away; any other malformed line is an error naming the line.
func OpenJournal(dir string) (*Journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	path := filepath.Join(dir, JournalFile)
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("journal: %w", err)
	}
	j := &Journal{path: path}
	good := 0
	line := 0
	for len(b[good:]) > 0 {
		rest := b[good:]
		nl := bytes.IndexByte(rest, '\n')
		line++
		if nl < 0 { // torn tail: never synced completely
			break
		}
		var r Record
		dec := json.NewDecoder(bytes.NewReader(rest[:nl]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("%s:%d: journal record: %w", path, line, err)
		}
		if r.Rec == "" {
			return nil, fmt.Errorf("%s:%d: rec: missing record kind", path, line)
		}
		j.records = append(j.records, r)
		good += nl + 1
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if err := f.Truncate(int64(good)); err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: %w", err)
	}
	if _, err := f.Seek(int64(good), 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: %w", err)
	}
	if err := fsutil.SyncDir(dir); err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: %w", err)
	}
	j.f = f
	return j, nil
}

// Records returns the records read when the journal was opened, in order.
func (j *Journal) Records() []Record { return j.records }

// Append writes r as one line and fsyncs it: when Append returns, the record
// survives a crash of the runner or the machine.
func (j *Journal) Append(r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	w := bufio.NewWriterSize(j.f, len(b)+1)
	w.Write(b)
	w.WriteByte('\n')
	if err := w.Flush(); err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	return nil
}

// Close closes the journal file.
func (j *Journal) Close() error { return j.f.Close() }
