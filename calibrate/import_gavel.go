package calibrate

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// ImportOptions control the importers.
type ImportOptions struct {
	// Name is metadata.name of the result; empty: "<format>:<file base name>".
	Name string
	// GPUModel keeps only this GPU model of a multi-model source (Gavel: k80,
	// p100, v100, case-insensitive); for a source without GPU models (Lucid) it
	// is the model written to metadata.gpuModel. Empty: all models / none.
	GPUModel string
	// Mode is the sharing mode the pairs are recorded under; empty: timeslice
	// (both sources ran the two jobs as plain concurrent processes on one GPU).
	Mode string
}

// ImportReport counts what an importer kept and skipped.
type ImportReport struct {
	Workloads      int // distinct workloads written
	Pairs          int // pair groups written (over all GPU models)
	SkippedZero    int // pairs with a zero throughput or speed (infeasible / not run)
	SkippedScale   int // Gavel entries with a scale factor other than 1 (multi-GPU jobs)
	SkippedModels  int // Gavel GPU types not imported (*_unconsolidated, or not --gpu-model)
	SkippedDupPair int // Lucid rows that repeat an already-seen pair (first kept)
}

func (o *ImportOptions) mode() (string, error) {
	switch o.Mode {
	case "":
		return ModeTimeslice, nil
	case ModeTimeslice, ModeMPS:
		return o.Mode, nil
	}
	return "", fmt.Errorf("import mode %q: want timeslice or mps", o.Mode)
}

var gavelKeyRE = regexp.MustCompile(`^\('(.+)', ([0-9]+)\)$`)
var gavelBatchRE = regexp.MustCompile(`^(.*) \(batch size ([0-9]+)\)$`)

// GavelWorkloadName maps a Gavel job type ("ResNet-18 (batch size 16)") to a
// gpusim workload name ("ResNet-18_bs16"): the model with characters outside
// [A-Za-z0-9._-] replaced by '_', then "_bs<N>" for the batch size.
func GavelWorkloadName(jobType string) string {
	model, bs := jobType, ""
	if m := gavelBatchRE.FindStringSubmatch(jobType); m != nil {
		model, bs = m[1], "_bs"+m[2]
	}
	return sanitizeName(model) + bs
}

// sanitizeName makes s a valid workload name (nameRE).
func sanitizeName(s string) string {
	b := []byte(strings.TrimSpace(s))
	for i, c := range b {
		if !(isAlnum(c) || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || !isAlnum(b[0]) {
		b = append([]byte("w"), b...)
	}
	return string(b)
}

// gavelEntry is one job of one GPU type in the Gavel file, with its key's line.
type gavelEntry struct {
	job   string // Gavel job type
	scale int
	line  int
	null  float64
	hasNl bool
	pairs map[string][2]float64 // other job key → [this, other]
}

// ImportGavel reads Gavel's simulation_throughputs.json (or
// physical_cluster_throughputs.json; shape in ../shared/interference/README.md):
// {gpu_type: {"('<job type>', <scale>)": {"null": isolated, "('<other>', <scale>)":
// [this, other]}}}, throughputs in steps/s. For each GPU type (k80 → "K80"; the
// *_unconsolidated types, which only differ for multi-GPU jobs, are skipped) it
// writes one mode entry with gpuModel set: the alone throughputs ("null") and a
// pair group per unordered pair of scale-factor-1 jobs, member factor = pair
// value / that job's null value (Gavel's own definition of the co-location
// throughput ratio, scheduler/utils.py read_all_throughputs_json_v2 →
// simulation throughputs). Entries whose scale factor is not 1 are multi-GPU
// jobs sharing several GPUs and are skipped; pairs with a zero value (Gavel's
// mark for a combination that does not fit or was not run) are skipped too.
// Errors name file:line and the key path. Output order is sorted (workloads by
// name, GPU types by name, pairs by member names), so the result is
// deterministic.
func ImportGavel(name string, r io.Reader, o ImportOptions) (*InterferenceMatrix, ImportReport, error) {
	var rep ImportReport
	mode, err := o.mode()
	if err != nil {
		return nil, rep, err
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, rep, fmt.Errorf("read %s: %w", name, err)
	}
	types, err := parseGavel(name, b)
	if err != nil {
		return nil, rep, err
	}
	gpus := make([]string, 0, len(types))
	for g := range types {
		gpus = append(gpus, g)
	}
	sort.Strings(gpus)
	m := &InterferenceMatrix{APIVersion: APIVersion, Kind: InterferenceKind,
		Metadata: MatrixMetadata{Name: o.Name, Repetitions: 1}}
	if m.Metadata.Name == "" {
		m.Metadata.Name = "gavel:" + filepath.Base(name)
	}
	wnames := map[string]string{} // gpusim name → Gavel job type
	for _, g := range gpus {
		if strings.HasSuffix(g, "_unconsolidated") || (o.GPUModel != "" && !strings.EqualFold(o.GPUModel, g)) {
			rep.SkippedModels++
			continue
		}
		jobs := types[g]
		mr := ModeResult{Mode: mode, GPUModel: strings.ToUpper(g), Alone: []AloneResult{}, Groups: []GroupResult{}}
		keys := make([]string, 0, len(jobs))
		for k, e := range jobs {
			if e.scale != 1 {
				rep.SkippedScale++
				continue
			}
			if !e.hasNl {
				return nil, rep, fmt.Errorf("%s:%d: %s.%s: no \"null\" (isolated throughput) entry", name, e.line, g, k)
			}
			w := GavelWorkloadName(e.job)
			if prev, ok := wnames[w]; ok && prev != e.job {
				return nil, rep, fmt.Errorf("%s:%d: %s.%s: job types %q and %q both map to workload name %q", name, e.line, g, k, prev, e.job, w)
			}
			wnames[w] = e.job
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			return GavelWorkloadName(jobs[keys[i]].job) < GavelWorkloadName(jobs[keys[j]].job)
		})
		for _, k := range keys {
			e := jobs[k]
			mr.Alone = append(mr.Alone, AloneResult{Workload: GavelWorkloadName(e.job), Throughput: Stat{Mean: e.null, Repetitions: 1}})
		}
		for i, ka := range keys {
			a := jobs[ka]
			for _, kb := range keys[i:] {
				bb := jobs[kb]
				v, ok := a.pairs[kb]
				if !ok {
					if w, ok2 := bb.pairs[ka]; ok2 {
						v, ok = [2]float64{w[1], w[0]}, true
					}
				}
				if !ok {
					continue
				}
				if v[0] == 0 || v[1] == 0 || a.null == 0 || bb.null == 0 {
					rep.SkippedZero++
					continue
				}
				mr.Groups = append(mr.Groups, GroupResult{Members: []MemberResult{
					{Workload: GavelWorkloadName(a.job), Stat: Stat{Mean: v[0] / a.null, Repetitions: 1}},
					{Workload: GavelWorkloadName(bb.job), Stat: Stat{Mean: v[1] / bb.null, Repetitions: 1}},
				}})
				rep.Pairs++
			}
		}
		m.Modes = append(m.Modes, mr)
	}
	if len(m.Modes) == 0 {
		return nil, rep, fmt.Errorf("%s: no GPU type imported (have %s; --gpu-model %q)", name, strings.Join(gpus, ", "), o.GPUModel)
	}
	ws := make([]string, 0, len(wnames))
	for w := range wnames {
		ws = append(ws, w)
	}
	sort.Strings(ws)
	for _, w := range ws {
		m.Workloads = append(m.Workloads, WorkloadProfile{Name: w, Class: "gavel: " + wnames[w]})
	}
	rep.Workloads = len(ws)
	if err := m.validate().render(name, nil); err != nil {
		return nil, rep, err
	}
	m.normalize()
	return m, rep, nil
}

// parseGavel decodes the three-level object, keeping each key's line.
func parseGavel(name string, b []byte) (map[string]map[string]*gavelEntry, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	line := func() int { return 1 + bytes.Count(b[:dec.InputOffset()], []byte{'\n'}) }
	fail := func(path, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s: %s", name, line(), path, fmt.Sprintf(format, args...))
	}
	wrap := func(path string, err error) error {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("%s:%d: %s: %v", name, 1+bytes.Count(b[:min(int(se.Offset), len(b))], []byte{'\n'}), path, err)
		}
		return fail(path, "%v", err)
	}
	open := func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return wrap(path, err)
		}
		if d, ok := tok.(json.Delim); !ok || d != '{' {
			return fail(path, "want an object, got %v", tok)
		}
		return nil
	}
	key := func(path string) (string, bool, error) {
		if !dec.More() {
			if _, err := dec.Token(); err != nil { // '}'
				return "", false, wrap(path, err)
			}
			return "", false, nil
		}
		tok, err := dec.Token()
		if err != nil {
			return "", false, wrap(path, err)
		}
		return tok.(string), true, nil
	}
	out := map[string]map[string]*gavelEntry{}
	if err := open("(top level)"); err != nil {
		return nil, err
	}
	for {
		g, ok, err := key("(top level)")
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if _, dup := out[g]; dup {
			return nil, fail(g, "duplicate GPU type")
		}
		jobs := map[string]*gavelEntry{}
		out[g] = jobs
		if err := open(g); err != nil {
			return nil, err
		}
		for {
			k, ok, err := key(g)
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			path := g + "." + k
			mm := gavelKeyRE.FindStringSubmatch(k)
			if mm == nil {
				return nil, fail(path, "job key must look like \"('<job type>', <scale factor>)\"")
			}
			if _, dup := jobs[k]; dup {
				return nil, fail(path, "duplicate job")
			}
			sc, _ := strconv.Atoi(mm[2])
			e := &gavelEntry{job: mm[1], scale: sc, line: line(), pairs: map[string][2]float64{}}
			jobs[k] = e
			if err := open(path); err != nil {
				return nil, err
			}
			for {
				pk, ok, err := key(path)
				if err != nil {
					return nil, err
				}
				if !ok {
					break
				}
				pp := path + "." + pk
				if pk == "null" {
					var x float64
					if err := dec.Decode(&x); err != nil {
						return nil, fail(pp, "isolated throughput must be a number: %v", err)
					}
					if math.IsNaN(x) || x < 0 {
						return nil, fail(pp, "isolated throughput must be >= 0, got %v", x)
					}
					e.null, e.hasNl = x, true
					continue
				}
				if !gavelKeyRE.MatchString(pk) {
					return nil, fail(pp, "pair key must be \"null\" or look like \"('<job type>', <scale factor>)\"")
				}
				var v []float64
				if err := dec.Decode(&v); err != nil || len(v) != 2 {
					return nil, fail(pp, "pair value must be [this job's throughput, other job's throughput]")
				}
				if v[0] < 0 || v[1] < 0 {
					return nil, fail(pp, "throughputs must be >= 0, got %v", v)
				}
				if _, dup := e.pairs[pk]; dup {
					return nil, fail(pp, "duplicate pair")
				}
				e.pairs[pk] = [2]float64{v[0], v[1]}
			}
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fail("(top level)", "trailing data after the object")
	}
	return out, nil
}

// GavelJob is one job key of Gavel's throughput file: its job type ("ResNet-50
// (batch size 64)") and scale factor (GPUs of the gang).
type GavelJob struct {
	Type  string
	Scale int
}

// ReadGavelIsolated reads the isolated ("null") throughputs, in steps/s, of
// Gavel's simulation_throughputs.json: per GPU type as the file names it (k80,
// p100, v100, ...; the *_unconsolidated types included) and per job. A scale
// factor's throughput is the whole gang's (Gavel's scheduler/utils.py
// read_all_throughputs_json_v2 and Scheduler._get_num_steps). Errors name
// file:line and the key path, as ImportGavel's.
func ReadGavelIsolated(name string, r io.Reader) (map[string]map[GavelJob]float64, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	raw, err := parseGavel(name, b)
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[GavelJob]float64, len(raw))
	for g, jobs := range raw {
		m := make(map[GavelJob]float64, len(jobs))
		for _, e := range jobs {
			if e.hasNl {
				m[GavelJob{Type: e.job, Scale: e.scale}] = e.null
			}
		}
		out[g] = m
	}
	return out, nil
}

// gavelThroughputs is Gavel's scheduler/simulation_throughputs.json (MIT; see
// testdata/gavel/NOTICE.md for origin and licence).
//
//go:embed testdata/gavel/simulation_throughputs.json
var gavelThroughputs []byte

// GavelThroughputsFile returns the embedded copy of Gavel's
// scheduler/simulation_throughputs.json (MIT; testdata/gavel/NOTICE.md); the
// caller must not modify it.
func GavelThroughputsFile() []byte { return gavelThroughputs }
