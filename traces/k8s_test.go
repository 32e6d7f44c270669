package traces

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The k8s format reads examples/k8s through the registry; a bad manifest is a
// *RowError naming file:line (bad input, exit code 2 in the CLI).
func TestK8sFormat(t *testing.T) {
	jobs, rep, err := ReadJobs(FormatK8s, "../examples/k8s")
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 5 || rep.Imported != 5 || rep.Rows != 5 || len(rep.Notes) != 3 {
		t.Fatalf("%d jobs, report %+v", len(jobs), rep)
	}
	if jobs[0].ID != "nlp/bert-finetune" || jobs[0].Replicas != 4 || jobs[0].GPUsPerReplica != 1 {
		t.Errorf("first job %+v", jobs[0])
	}
	dir := t.TempDir()
	bad := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, resorces: {}}]\n"
	if err := os.WriteFile(filepath.Join(dir, "p.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = ReadJobs(FormatK8s, dir)
	if err == nil || !IsRowError(err) || !strings.Contains(err.Error(), "p.yaml:5: spec.containers[0].resorces: unknown field") {
		t.Fatalf("err = %v", err)
	}
}
