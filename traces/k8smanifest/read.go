// Package k8smanifest translates Kubernetes manifests into simulator jobs: a
// directory (or one multi-document YAML file) of batch/v1 Jobs, Pods,
// scheduler-plugins and Volcano PodGroups, Kubeflow TFJobs, PyTorchJobs and
// MPIJobs, JobSets and PriorityClasses, plus an arrival schedule (the
// gpusim.io/submit-time and gpusim.io/duration annotations, or a schedule.csv
// of name,submit_s,duration_s), becomes []sim.JobSpec. The rules, and what is
// ignored, are in docs/k8s-manifests.md. Every problem is reported as
// "file:line: field.path: message"; the result is deterministic (files in
// name order, jobs sorted by submit time then ID).
package k8smanifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/internal/yamlmsg"
	"github.com/gpusim/gpusim/sim"
)

// ScheduleFile is the name of the optional arrival schedule in a manifest
// directory.
const ScheduleFile = "schedule.csv"

// maxErrors bounds how many problems one read reports.
const maxErrors = 50

// File is one input file: its name (used in messages) and its bytes.
type File struct {
	Name string
	Data []byte
}

// Result is a translated workload: the jobs, sorted by (submit, ID), and notes
// on what was read but not simulated (sorted, without repeats).
type Result struct {
	Jobs  []sim.JobSpec
	Notes []string
}

// Error is one problem in the input: "File:Line: Path: Msg" (Line 0 and an
// empty Path are left out).
type Error struct {
	File string
	Line int
	Path string
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":")
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Load reads path: a directory (its *.yaml and *.yml files in name order, and
// schedule.csv when present; subdirectories are not read) or one YAML file.
// Problems are returned joined (errors.Join of *Error); file-system errors are
// returned wrapped.
func Load(path string) (*Result, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return Parse([]File{{Name: path, Data: b}}, nil)
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var files []File
	var sched *File
	for _, e := range ents { // os.ReadDir sorts by name
		if e.IsDir() {
			continue
		}
		name := e.Name()
		ext := strings.ToLower(filepath.Ext(name))
		if ext != ".yaml" && ext != ".yml" && name != ScheduleFile {
			continue
		}
		p := filepath.Join(path, name)
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		if name == ScheduleFile {
			sched = &File{Name: p, Data: b}
			continue
		}
		files = append(files, File{Name: p, Data: b})
	}
	if len(files) == 0 {
		return nil, &Error{File: path, Msg: "no *.yaml or *.yml manifests in the directory"}
	}
	return Parse(files, sched)
}

// Parse translates files (in the given order) with an optional schedule CSV.
func Parse(files []File, schedule *File) (*Result, error) {
	t := newTranslator()
	for _, f := range files {
		t.readFile(f)
	}
	if len(t.errs) == 0 {
		t.translate()
	}
	if len(t.errs) == 0 && schedule != nil {
		t.readSchedule(*schedule)
	}
	if len(t.errs) == 0 {
		t.finish()
	}
	if len(t.errs) > 0 {
		return nil, t.err()
	}
	notes := slices.Sorted(func(yield func(string) bool) {
		for n := range t.notes {
			if !yield(n) {
				return
			}
		}
	})
	return &Result{Jobs: t.jobs, Notes: notes}, nil
}

// doc is one decoded manifest: where it is, for messages.
type doc struct {
	file string
	root *yaml.Node
}

// line returns the line of path (mapping keys and sequence indexes) under the
// document's root: the line of the last key found (of the item, for an
// index), or of the root when nothing is found.
func (d doc) line(path ...string) int {
	n, line := d.root, d.root.Line
	for _, p := range path {
		k, v := child(n, p)
		if v == nil {
			break
		}
		n, line = v, k.Line
	}
	return line
}

// child returns the key and value of key in a mapping, or the item (twice)
// of index key in a sequence; nil when absent.
func child(n *yaml.Node, key string) (k, v *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				return n.Content[i], n.Content[i+1]
			}
		}
	case yaml.SequenceNode:
		if i, err := strconv.Atoi(key); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i], n.Content[i]
		}
	}
	return nil, nil
}

// joinPath renders path segments as a field path ("spec.containers[0]"):
// numeric segments are indexes; segments with dots (label keys) are quoted.
func joinPath(path []string) string {
	var b strings.Builder
	for _, p := range path {
		if _, err := strconv.Atoi(p); err == nil {
			b.WriteString("[" + p + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteString(".")
		}
		if strings.ContainsAny(p, "./") {
			b.WriteString(strconv.Quote(p))
		} else {
			b.WriteString(p)
		}
	}
	return b.String()
}

// errorf records a problem at the value of path in d.
func (t *translator) errorf(d doc, path []string, format string, args ...any) {
	t.errs = append(t.errs, &Error{File: d.file, Line: d.line(path...), Path: joinPath(path), Msg: fmt.Sprintf(format, args...)})
}

func (t *translator) notef(format string, args ...any) {
	t.notes[fmt.Sprintf(format, args...)] = true
}

func (t *translator) err() error {
	errs := t.errs
	extra := 0
	if len(errs) > maxErrors {
		extra = len(errs) - maxErrors
		errs = errs[:maxErrors]
	}
	out := make([]error, 0, len(errs)+1)
	for _, e := range errs {
		out = append(out, e)
	}
	if extra > 0 {
		out = append(out, fmt.Errorf("... and %d more problems", extra))
	}
	return errors.Join(out...)
}

// readFile decodes every document of f and files each object by kind.
func (t *translator) readFile(f File) {
	dec := yaml.NewDecoder(bytes.NewReader(f.Data))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if err == io.EOF {
			return
		}
		if err != nil {
			for _, p := range yamlmsg.Problems(nil, err) {
				t.errs = append(t.errs, &Error{File: f.Name, Line: p.Line, Msg: p.Msg})
			}
			return // a syntax error ends the stream
		}
		if len(n.Content) == 0 {
			continue
		}
		root := n.Content[0]
		if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
			continue
		}
		d := doc{file: f.Name, root: root}
		if root.Kind != yaml.MappingNode {
			t.errs = append(t.errs, &Error{File: f.Name, Line: root.Line, Msg: "a manifest must be a mapping with apiVersion and kind"})
			continue
		}
		t.readObject(d)
	}
}

// decodeStrict checks root against out's type (unknown fields, as
// policies.CheckFields does for inline Kueue manifests) and decodes it;
// it reports every problem and returns whether out is usable.
func (t *translator) decodeStrict(d doc, out any) bool {
	ok := true
	unknownFields(d.root, reflect.TypeOf(out), "", func(line int, path string) {
		t.errs = append(t.errs, &Error{File: d.file, Line: line, Path: path, Msg: "unknown field"})
		ok = false
	})
	if err := d.root.Decode(out); err != nil {
		for _, p := range yamlmsg.Problems(d.root, err) {
			t.errs = append(t.errs, &Error{File: d.file, Line: p.Line, Path: p.Path, Msg: p.Msg})
		}
		ok = false
	}
	return ok
}

// kinds maps each supported kind to its accepted apiVersions.
var kinds = map[string][]string{
	"Pod":           {"v1"},
	"Job":           {"batch/v1"},
	"PodGroup":      {"scheduling.x-k8s.io/v1alpha1", "scheduling.sigs.k8s.io/v1alpha1", "scheduling.volcano.sh/v1beta1"},
	"TFJob":         {"kubeflow.org/v1"},
	"PyTorchJob":    {"kubeflow.org/v1"},
	"MPIJob":        {"kubeflow.org/v2beta1", "kubeflow.org/v1"},
	"JobSet":        {"jobset.x-k8s.io/v1alpha2"},
	"PriorityClass": {"scheduling.k8s.io/v1"},
	"ResourceQuota": {"v1"},
}

// ignoredKinds are read and skipped with a note: they do not describe work.
var ignoredKinds = map[string]bool{"Namespace": true, "Service": true, "ConfigMap": true, "Secret": true, "ServiceAccount": true}

// KindNames returns the supported kinds, sorted.
func KindNames() []string {
	out := make([]string, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (t *translator) readObject(d doc) {
	var h header
	if err := d.root.Decode(&h); err != nil {
		for _, p := range yamlmsg.Problems(d.root, err) {
			t.errs = append(t.errs, &Error{File: d.file, Line: p.Line, Path: p.Path, Msg: p.Msg})
		}
		return
	}
	if h.Kind == "" {
		t.errorf(d, []string{"kind"}, "required")
		return
	}
	if ignoredKinds[h.Kind] {
		t.notef("%s objects are not simulated (ignored)", h.Kind)
		return
	}
	versions, ok := kinds[h.Kind]
	if !ok {
		t.errorf(d, []string{"kind"}, "unknown kind %q (supported: %s)", h.Kind, strings.Join(KindNames(), ", "))
		return
	}
	if !slices.Contains(versions, h.APIVersion) {
		t.errorf(d, []string{"apiVersion"}, "%s: unsupported apiVersion %q (want %s)", h.Kind, h.APIVersion, strings.Join(versions, " or "))
		return
	}
	if h.Metadata.Name == "" {
		t.errorf(d, []string{"metadata", "name"}, "%s: required", h.Kind)
		return
	}
	key := h.Kind + " " + nsName(&h.Metadata)
	if prev, dup := t.seen[key]; dup {
		t.errorf(d, []string{"metadata", "name"}, "duplicate %s %q (first at %s)", h.Kind, nsName(&h.Metadata), prev)
		return
	}
	t.seen[key] = fmt.Sprintf("%s:%d", d.file, d.root.Line)
	switch h.Kind {
	case "Pod":
		o := &object[podSpec]{}
		if t.decodeStrict(d, o) {
			t.pods = append(t.pods, decoded[podSpec]{d, o})
		}
	case "Job":
		o := &object[batchJobSpec]{}
		if t.decodeStrict(d, o) {
			t.jobsK8s = append(t.jobsK8s, decoded[batchJobSpec]{d, o})
		}
	case "PodGroup":
		o := &object[podGroupSpec]{}
		if t.decodeStrict(d, o) {
			t.groups = append(t.groups, &podGroup{doc: d, obj: o})
		}
	case "TFJob":
		o := &object[tfJobSpec]{}
		if t.decodeStrict(d, o) {
			t.kubeflow = append(t.kubeflow, kubeflowJob{d, &o.Metadata, "tfReplicaSpecs", o.Spec.ReplicaSpecs, &o.Spec.RunPolicy, tfTypes})
		}
	case "PyTorchJob":
		o := &object[pyTorchJobSpec]{}
		if t.decodeStrict(d, o) {
			t.kubeflow = append(t.kubeflow, kubeflowJob{d, &o.Metadata, "pytorchReplicaSpecs", o.Spec.ReplicaSpecs, &o.Spec.RunPolicy, pyTorchTypes})
			if !o.Spec.ElasticPolicy.IsZero() {
				t.notef("PyTorchJob elasticPolicy is not simulated: the gang is the declared replicas")
			}
		}
	case "MPIJob":
		o := &object[mpiJobSpec]{}
		if t.decodeStrict(d, o) {
			t.kubeflow = append(t.kubeflow, kubeflowJob{d, &o.Metadata, "mpiReplicaSpecs", o.Spec.ReplicaSpecs, &o.Spec.RunPolicy, mpiTypes})
		}
	case "JobSet":
		o := &object[jobSetSpec]{}
		if t.decodeStrict(d, o) {
			t.jobSets = append(t.jobSets, decoded[jobSetSpec]{d, o})
		}
	case "PriorityClass":
		o := &priorityClass{}
		if t.decodeStrict(d, o) {
			t.addPriorityClass(d, o)
		}
	case "ResourceQuota":
		if !t.decodeStrict(d, &object[resourceQuotaSpec]{}) {
			return
		}
		t.notef("ResourceQuota %q is not simulated (ignored): model quotas with the kueue or volcano policy", nsName(&h.Metadata))
	}
}

// nsName is the object's name, prefixed by "namespace/" unless the namespace
// is empty or "default".
func nsName(m *objectMeta) string {
	if m.Namespace == "" || m.Namespace == "default" {
		return m.Name
	}
	return m.Namespace + "/" + m.Name
}
