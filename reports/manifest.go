package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpusim/gpusim/internal/fsutil"
)

// ManifestFile names the manifest that `gpusim run -o DIR` writes into DIR after
// every policy directory of the run is in place. `gpusim report DIR` follows it,
// so directories left over from other runs are never mixed into a report.
const ManifestFile = "gpusim-run.json"

// Manifest lists the policy directories that one output directory holds for one
// effective scenario. Runs of the same effective scenario (same SHA-256) into the
// same directory accumulate their policies; a run of another scenario replaces
// the manifest and removes the directories the old one listed.
type Manifest struct {
	Kind           string   `json:"kind"` // always "gpusim-run"
	Scenario       string   `json:"scenario"`
	ScenarioSHA256 string   `json:"scenario_sha256"`
	Seed           uint64   `json:"seed"`
	Policies       []string `json:"policies"` // directory names under DIR, sorted
}

const manifestKind = "gpusim-run"

// ReadManifest reads DIR/gpusim-run.json; (nil, nil) when there is none.
func ReadManifest(dir string) (*Manifest, error) {
	p := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil || m.Kind != manifestKind {
		return nil, fmt.Errorf("%s: not a gpusim run manifest (delete it, or the directory, and run again)", p)
	}
	for _, pol := range m.Policies {
		if pol == "" || pol != filepath.Base(pol) || strings.HasPrefix(pol, ".") {
			return nil, fmt.Errorf("%s: bad policy directory name %q", p, pol)
		}
	}
	return &m, nil
}

// WriteManifest writes m into dir atomically (policies sorted, deduplicated).
func WriteManifest(dir string, m *Manifest) error {
	m.Kind = manifestKind
	slices.Sort(m.Policies)
	m.Policies = slices.Compact(m.Policies)
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return fsutil.WriteBytesAtomic(filepath.Join(dir, ManifestFile), append(b, '\n'))
}

// PrepareOutDir readies dir for a run of the scenario identified by sha: it
// removes temporary files and directories that an interrupted run left behind,
// and, when dir holds the manifest of another scenario, removes the policy
// directories that manifest lists (they belong to gpusim and would be stale). It
// returns the policies to keep listed in the new manifest (those of an earlier run
// of the same scenario that are still complete).
func PrepareOutDir(dir, sha string) (keep []string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if _, err := fsutil.CleanTemps(dir); err != nil {
		return nil, fmt.Errorf("clean %s: %w", dir, err)
	}
	m, err := ReadManifest(dir)
	if err != nil || m == nil {
		return nil, err
	}
	if m.ScenarioSHA256 != sha {
		for _, p := range m.Policies {
			if err := os.RemoveAll(filepath.Join(dir, p)); err != nil {
				return nil, fmt.Errorf("remove stale run %s: %w", filepath.Join(dir, p), err)
			}
		}
		if err := os.Remove(filepath.Join(dir, ManifestFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		return nil, nil
	}
	for _, p := range m.Policies {
		if CheckRunDir(filepath.Join(dir, p)) == nil {
			keep = append(keep, p)
		}
	}
	return keep, nil
}

// CheckSummaryDir is the completeness check for commands that read only
// summary.json (check): dir is not a temporary directory and holds summary.json.
func CheckSummaryDir(dir string) error {
	base := filepath.Base(filepath.Clean(dir))
	if strings.HasPrefix(base, ".") && strings.Contains(base, fsutil.TempInfix) {
		return fmt.Errorf("%s: %w: a temporary directory of a run that did not finish (run again)", dir, ErrIncompleteRun)
	}
	if _, err := os.Stat(filepath.Join(dir, SummaryFile)); err != nil {
		return fmt.Errorf("%s: %w: no %s (the run did not finish; run again)", dir, ErrIncompleteRun, SummaryFile)
	}
	return nil
}

// ErrIncompleteRun is wrapped by CheckRunDir's errors.
var ErrIncompleteRun = errors.New("incomplete run directory")

// CheckRunDir reports whether dir is a complete run directory: summary.json
// (which every writer puts in place last) and the job table (jobs.parquet or
// jobs.csv) are present, and dir is not a temporary directory of a run still
// being written or killed. Errors wrap ErrIncompleteRun and say what is missing.
func CheckRunDir(dir string) error {
	base := filepath.Base(filepath.Clean(dir))
	if strings.HasPrefix(base, ".") && strings.Contains(base, fsutil.TempInfix) {
		return fmt.Errorf("%s: %w: a temporary directory of a run that did not finish (run again)", dir, ErrIncompleteRun)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("run dir: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("run dir %s: not a directory", dir)
	}
	b, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		return fmt.Errorf("%s: %w: no %s (the run did not finish; run again)", dir, ErrIncompleteRun, SummaryFile)
	}
	if !json.Valid(b) {
		return fmt.Errorf("%s: invalid summary JSON", filepath.Join(dir, SummaryFile))
	}
	if isFillSummary(filepath.Join(dir, SummaryFile)) {
		return nil // a fill-experiment run holds summary.json only
	}
	_, e1 := os.Stat(filepath.Join(dir, JobsFile))
	_, e2 := os.Stat(filepath.Join(dir, JobsCSVFile))
	if e1 != nil && e2 != nil {
		return fmt.Errorf("%s: %w: neither %s nor %s", dir, ErrIncompleteRun, JobsFile, JobsCSVFile)
	}
	return nil
}

// isFillSummary reports whether the summary at path is an FGD fill experiment's
// ("experiment": "fill"), which has no job table.
func isFillSummary(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var head struct {
		Experiment string `json:"experiment"`
	}
	return json.Unmarshal(b, &head) == nil && head.Experiment == "fill"
}

// MixedScenarios reports, for a set of run directories, a warning when they come
// from different scenarios: different scenario names, or the same name and seed
// with different effective-scenario hashes (the file changed between the runs).
// Runs of one scenario under different seeds (as `gpusim compare` writes them) are
// not mixed. It returns "" when the runs agree or a summary cannot be read (the
// report itself reports unreadable summaries).
func MixedScenarios(dirs []string) string {
	type key struct {
		name string
		seed uint64
	}
	names := map[string]bool{}
	hashes := map[key]string{}
	var order []string
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, SummaryFile))
		if err != nil {
			return ""
		}
		var head struct {
			Provenance Provenance `json:"provenance"`
		}
		if json.Unmarshal(b, &head) != nil {
			return ""
		}
		p := head.Provenance
		if !names[p.Scenario] {
			names[p.Scenario] = true
			order = append(order, fmt.Sprintf("%q", p.Scenario))
		}
		k := key{p.Scenario, p.Seed}
		if h, ok := hashes[k]; ok && h != p.ScenarioSHA256 {
			return fmt.Sprintf("runs of scenario %q with seed %d come from different scenario contents (sha256 %.12s… and %.12s…); the report mixes them", p.Scenario, p.Seed, h, p.ScenarioSHA256)
		}
		hashes[k] = p.ScenarioSHA256
	}
	if len(order) > 1 {
		return fmt.Sprintf("the runs come from different scenarios (%s); the report mixes them", strings.Join(order, ", "))
	}
	return ""
}
