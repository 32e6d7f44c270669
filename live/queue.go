package live

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/internal/yamlmsg"
	"github.com/gpusim/gpusim/sim"
)

// QueueJob is one job file of a queue directory (YAML or JSON; one job per
// file). Unknown fields are errors.
type QueueJob struct {
	// ID defaults to the file name without its extension.
	ID       string `yaml:"id"`
	GPUs     int32  `yaml:"gpus"`     // GPUs per replica (required)
	Replicas int32  `yaml:"replicas"` // default 1
	// DurationS is the expected run time in seconds: what {duration} and the
	// simulated twin use (0 with a command that ends on its own).
	DurationS float64 `yaml:"duration_s"`
	// WalltimeS is the time limit in seconds (0 = none): the policy's estimate
	// and, with enforceWalltime, a hard limit.
	WalltimeS float64 `yaml:"walltime_s"`
	Queue     string  `yaml:"queue"`
	User      string  `yaml:"user"`
	Priority  int32   `yaml:"priority"`
	Class     string  `yaml:"class"`
	// Command overrides --command for this job (same placeholders).
	Command []string `yaml:"command"`
}

// queueExts are the file extensions read from a queue directory; other files
// (and names starting with '.') are ignored.
var queueExts = map[string]bool{".yaml": true, ".yml": true, ".json": true}

// ParseQueueJob decodes and validates a job file. Every problem is reported as
// "file:line: field: message".
func ParseQueueJob(file string, b []byte) (sim.JobSpec, []string, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil {
		return sim.JobSpec{}, nil, yamlmsg.FileError(file, nil, err)
	}
	var q QueueJob
	dec = yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&q); err != nil {
		return sim.JobSpec{}, nil, yamlmsg.FileError(file, &doc, err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	var errs []error
	bad := func(field, msg string) {
		errs = append(errs, fmt.Errorf("%s:%d: %s: %s", file, yamlmsg.LineOf(root, field), field, msg))
	}
	if q.ID == "" {
		q.ID = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	if q.ID != filepath.Base(q.ID) || strings.HasPrefix(q.ID, ".") || strings.ContainsAny(q.ID, "\x00\n") {
		bad("id", fmt.Sprintf("%q cannot name a job (no '/', no leading '.')", q.ID))
	}
	if q.Replicas == 0 {
		q.Replicas = 1
	}
	if q.GPUs < 0 {
		bad("gpus", "must be >= 0")
	}
	if q.Replicas < 1 {
		bad("replicas", "must be >= 1")
	}
	if !(q.DurationS >= 0) || q.DurationS > 1e12 {
		bad("duration_s", "must be in [0, 1e12] seconds")
	}
	if !(q.WalltimeS >= 0) || q.WalltimeS > 1e12 {
		bad("walltime_s", "must be in [0, 1e12] seconds")
	}
	class := sim.ClassUnknown
	if q.Class != "" {
		c, err := sim.ParseClass(q.Class)
		if err != nil {
			bad("class", err.Error())
		}
		class = c
	}
	if len(errs) > 0 {
		return sim.JobSpec{}, nil, errors.Join(errs...)
	}
	s := sim.JobSpec{ID: sim.JobID(q.ID), Replicas: q.Replicas, GPUsPerReplica: q.GPUs, GPUMilli: sim.WholeGPU,
		Duration: sim.Seconds(q.DurationS), Walltime: sim.Seconds(q.WalltimeS), Queue: q.Queue, User: q.User,
		Priority: q.Priority, Class: class}
	if err := s.Validate(); err != nil {
		return sim.JobSpec{}, nil, fmt.Errorf("%s: %w", file, err)
	}
	return s, q.Command, nil
}

// scanQueue submits the job files of the queue directory, in name order: a
// valid job is journalled (a submit record with the whole spec) and moved to
// accepted/, an invalid one to rejected/ with its error beside it
// (<name>.error). A file whose job the journal already holds (a crash after the
// submit record) is only moved.
func (r *Runner) scanQueue() error {
	dir := r.opt.QueueDir
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("live: queue: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		if !e.Type().IsRegular() || strings.HasPrefix(name, ".") || !queueExts[strings.ToLower(filepath.Ext(name))] {
			continue
		}
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("live: queue: %w", err)
		}
		spec, argv, perr := ParseQueueJob(path, b)
		if perr == nil {
			if _, known := r.live.Lookup(spec.ID); known && r.submitted[spec.ID] {
				r.logf("%-12s already submitted (%s)", spec.ID, name)
				if err := moveTo(dir, "accepted", name); err != nil {
					return err
				}
				continue
			}
			perr = r.submit(spec, argv)
		}
		if perr != nil {
			r.logf("%-12s rejected: %v", name, perr)
			if err := moveTo(dir, "rejected", name); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, "rejected", name+".error"), []byte(perr.Error()+"\n"), 0o600); err != nil {
				return fmt.Errorf("live: queue: %w", err)
			}
			continue
		}
		if err := moveTo(dir, "accepted", name); err != nil {
			return err
		}
	}
	return nil
}

// submit adds a queue job to the live run and journals it.
func (r *Runner) submit(spec sim.JobSpec, argv []string) error {
	if err := r.cfg.Cluster.Feasible(&spec); err != nil {
		return fmt.Errorf("job %s can never run on this machine: %w", spec.ID, err)
	}
	if _, known := r.live.Lookup(spec.ID); known {
		return fmt.Errorf("job id %q is already in this run", spec.ID)
	}
	ref, err := r.live.Submit(spec)
	if err != nil {
		return err
	}
	j := r.live.View().Job(ref)
	r.submitted[spec.ID] = true
	if len(argv) > 0 {
		r.local.commands[spec.ID] = argv
	}
	r.logf("%-12s submitted (%d x %d GPUs)", spec.ID, spec.Replicas, spec.GPUsPerReplica)
	return r.journal.Append(Record{Rec: RecSubmit, TimeUS: int64(j.Spec.Submit), Job: string(spec.ID), Spec: specRecord(&j.Spec, argv)})
}

// SpecRecord is a submitted job's spec in the journal.
type SpecRecord struct {
	GPUs       int32    `json:"gpus"`
	Replicas   int32    `json:"replicas"`
	DurationUS int64    `json:"duration_us"`
	WalltimeUS int64    `json:"walltime_us"`
	Queue      string   `json:"queue,omitempty"`
	User       string   `json:"user,omitempty"`
	Priority   int32    `json:"priority,omitempty"`
	Class      string   `json:"class,omitempty"`
	Command    []string `json:"command,omitempty"`
}

func specRecord(s *sim.JobSpec, argv []string) *SpecRecord {
	return &SpecRecord{GPUs: s.GPUsPerReplica, Replicas: s.Replicas, DurationUS: int64(s.Duration), WalltimeUS: int64(s.Walltime),
		Queue: s.Queue, User: s.User, Priority: s.Priority, Class: string(s.Class), Command: argv}
}

// jobSpec rebuilds a submitted job from its journal record.
func (sr *SpecRecord) jobSpec(id string) (sim.JobSpec, error) {
	class, err := sim.ParseClass(sr.Class)
	if err != nil {
		return sim.JobSpec{}, err
	}
	return sim.JobSpec{ID: sim.JobID(id), Replicas: sr.Replicas, GPUsPerReplica: sr.GPUs, GPUMilli: sim.WholeGPU,
		Duration: sim.Duration(sr.DurationUS), Walltime: sim.Duration(sr.WalltimeUS), Queue: sr.Queue, User: sr.User,
		Priority: sr.Priority, Class: class}, nil
}

func moveTo(dir, sub, name string) error {
	if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
		return fmt.Errorf("live: queue: %w", err)
	}
	if err := os.Rename(filepath.Join(dir, name), filepath.Join(dir, sub, name)); err != nil {
		return fmt.Errorf("live: queue: %w", err)
	}
	return nil
}

// RequestStop asks the runner of stateDir to stop taking jobs from its queue
// directory and to end once every job has ended (`gpusim live stop`).
func RequestStop(stateDir string) error {
	if _, err := os.Stat(filepath.Join(stateDir, JournalFile)); err != nil {
		return fmt.Errorf("state dir %s: no live run there: %w", stateDir, err)
	}
	dir := filepath.Join(stateDir, "control")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "stop"), nil, 0o600)
}
