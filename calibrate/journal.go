package calibrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// JournalFile is the name of the per-run journal inside the output directory.
const JournalFile = "journal.jsonl"

// CellResult is one journaled cell. Status "ok" cells are never measured again
// by a resumed run; "failed" cells are retried.
type CellResult struct {
	Cell
	ID     string `json:"id"`
	Status string `json:"status"` // "ok" or "failed"
	Error  string `json:"error,omitempty"`
	// Throughput[k] is member k's throughput in the measurement window (items/s).
	Throughput []float64 `json:"throughput,omitempty"`
	// Devices[k] is the CUDA_VISIBLE_DEVICES value member k ran with.
	Devices []string     `json:"devices,omitempty"`
	Samples []CellSample `json:"samples,omitempty"`
	Started time.Time    `json:"started"`
	Seconds float64      `json:"seconds"`
}

// CellSample is an NVML sample taken during a cell. Phase is "warmup" or
// "measure".
type CellSample struct {
	Phase string `json:"phase"`
	Sample
}

type journalHeader struct {
	Journal  string `json:"journal"` // "gpusim-calibrate"
	PlanHash string `json:"planHash"`
}

// Journal is the append-only record of finished cells (JSON lines, the first line
// a header naming the plan's hash). Each entry is fsynced before the next cell
// starts; a torn last line (crash mid-write) is dropped on reload.
type Journal struct {
	path string
	f    *os.File
	// Done maps cell ID to its latest "ok" result.
	Done map[string]CellResult
}

// OpenJournal opens (or creates) the journal at path for a plan with hash
// planHash. An existing journal written for a different plan is an error, so a
// resumed run never mixes measurements of different plans.
func OpenJournal(path, planHash string) (*Journal, error) {
	j := &Journal{path: path, Done: map[string]CellResult{}}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("read journal: %w", err)
	default:
		if n := len(b); n > 0 && b[n-1] != '\n' {
			// A torn last line (interrupted mid-write): that cell is simply not
			// done. Cut it off so later entries start on a clean line.
			keep := bytes.LastIndexByte(b, '\n') + 1
			if err := os.Truncate(path, int64(keep)); err != nil {
				return nil, fmt.Errorf("journal %s: drop torn last line: %w", path, err)
			}
			b = b[:keep]
		}
		if len(b) > 0 {
			if err := j.load(b, planHash); err != nil {
				return nil, err
			}
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	j.f = f
	if len(b) == 0 {
		if err := j.append(journalHeader{Journal: "gpusim-calibrate", PlanHash: planHash}); err != nil {
			f.Close()
			return nil, err
		}
	}
	return j, nil
}

func (j *Journal) load(b []byte, planHash string) error {
	for i, raw := range bytes.Split(b, []byte("\n")) {
		text := bytes.TrimSpace(raw)
		if i == 0 {
			var h journalHeader
			if err := json.Unmarshal(text, &h); err != nil || h.Journal != "gpusim-calibrate" {
				return fmt.Errorf("%s:1: not a gpusim calibrate journal", j.path)
			}
			if h.PlanHash != planHash {
				return fmt.Errorf("%s: written for a different plan (hash %s, this plan %s); use a new output directory or remove the journal to start over", j.path, h.PlanHash, planHash)
			}
			continue
		}
		if len(text) == 0 {
			continue
		}
		var r CellResult
		if err := json.Unmarshal(text, &r); err != nil {
			return fmt.Errorf("%s:%d: bad journal entry: %w", j.path, i+1, err)
		}
		if r.Status == "ok" {
			j.Done[r.ID] = r
		}
	}
	return nil
}

// Record appends r and syncs it to disk.
func (j *Journal) Record(r CellResult) error {
	if err := j.append(r); err != nil {
		return err
	}
	if r.Status == "ok" {
		j.Done[r.ID] = r
	}
	return nil
}

func (j *Journal) append(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	b = append(b, '\n')
	if _, err := j.f.Write(b); err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	return nil
}

// Close closes the journal file.
func (j *Journal) Close() error { return j.f.Close() }
