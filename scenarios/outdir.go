package scenarios

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpusim/gpusim/internal/fsutil"
	"github.com/gpusim/gpusim/reports"
)

// writePolicyDir writes one policy's run directory outDir/label so that it is
// either absent or complete: write fills a temporary sibling directory, which is
// then renamed into place (replacing an earlier run of the same label). A run
// killed half way leaves only the temporary directory, which the next run into
// outDir removes.
func writePolicyDir(outDir, label string, write func(dir string) error) (string, error) {
	final := filepath.Join(outDir, label)
	tmp, err := os.MkdirTemp(outDir, "."+label+fsutil.TempInfix)
	if err != nil {
		return "", fmt.Errorf("policy %s: %w", label, err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("policy %s: %w", label, err)
	}
	if err := write(tmp); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	if err := fsutil.PublishDir(tmp, final); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	return final, nil
}

// PrepareOutDir readies outDir for a run of s (see reports.PrepareOutDir) and
// returns the policy directories of earlier runs of the same scenario to keep in
// the manifest. Nothing happens when outDir is "". Run and RunFill call it unless
// RunOptions.SharedOutDir is set, in which case the caller (running several Runs
// into one directory at once) calls it before them and FinishOutDir after.
func (s *Scenario) PrepareOutDir(outDir string) ([]string, error) {
	if outDir == "" {
		return nil, nil
	}
	return reports.PrepareOutDir(outDir, s.hash)
}

// FinishOutDir writes outDir's manifest: the kept policies of earlier runs of
// this scenario and this run's labels. It is written last, after every policy
// directory is in place.
func (s *Scenario) FinishOutDir(outDir string, keep, labels []string) error {
	if outDir == "" {
		return nil
	}
	m := &reports.Manifest{Scenario: s.Name, ScenarioSHA256: s.hash, Seed: s.SeedValue(),
		Policies: append(append([]string(nil), keep...), labels...)}
	if err := reports.WriteManifest(outDir, m); err != nil {
		return err
	}
	return fsutil.SyncDir(outDir)
}

// finishRuns writes the output directory's manifest (FinishOutDir) for the
// runs just made, labelled by label, unless the caller owns a shared
// directory (opts.SharedOutDir) and writes it itself.
func finishRuns[R any](s *Scenario, opts RunOptions, keep []string, runs []R, label func(*R) string) error {
	if opts.SharedOutDir {
		return nil
	}
	labels := make([]string, len(runs))
	for k := range runs {
		labels[k] = label(&runs[k])
	}
	return s.FinishOutDir(opts.OutDir, keep, labels)
}
