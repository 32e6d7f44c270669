package traces

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fuzzRead writes data to a file named name and reads it with format; it must
// return jobs or an error, never panic, and every job it returns must be valid.
func fuzzRead(t *testing.T, format, name string, data []byte) {
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	jobs, rep, err := ReadJobs(format, p)
	if err != nil {
		return
	}
	if rep.Imported != len(jobs) || rep.Imported+rep.SkippedTotal() != rep.Rows {
		t.Fatalf("report %v vs %d jobs", rep, len(jobs))
	}
	for i := range jobs {
		if verr := jobs[i].Validate(); verr != nil {
			t.Fatalf("invalid job %+v: %v", jobs[i], verr)
		}
	}
	// Whatever was imported survives a native CSV round trip unchanged.
	var buf bytes.Buffer
	if err := WriteNativeCSV(&buf, jobs); err != nil {
		t.Fatal(err)
	}
	q := filepath.Join(t.TempDir(), "rt.csv")
	if err := os.WriteFile(q, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	back, _, err := ReadJobsWith(FormatNative, q, ReadOptions{AllowDuplicateIDs: true})
	if err != nil {
		t.Fatalf("round trip: %v\n%s", err, buf.String())
	}
	if len(jobs) == 0 {
		jobs = nil
	}
	if d := cmp.Diff(jobs, back); d != "" {
		t.Fatalf("round trip differs: %s", d)
	}
}

func fuzzNodes(t *testing.T, format, name string, data []byte) {
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	nodes, err := ReadNodes(format, p)
	if err != nil {
		return
	}
	for _, n := range nodes {
		if n.GPUs < 0 || n.CPUMilli < 0 || n.MemoryMiB < 0 || (n.GPUs > 0 && n.GPUModel == "") {
			t.Fatalf("bad node %+v", n)
		}
	}
}

func seedFile(f *testing.F, path string, max int) {
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	if len(b) > max {
		b = b[:max]
	}
	f.Add(b)
}

func FuzzNative(f *testing.F) {
	seedFile(f, "testdata/native/small.csv", 4096)
	f.Add([]byte("\ufeffid,submit_s,gpus,duration_s\r\n\"a\"\"b\",1e3,1,0.000001\r\n"))
	f.Add([]byte("id,submit_s,gpus,duration_s,gpu_milli\na,0,1,1,1\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, FormatNative, "f.csv", data) })
}

func FuzzNativeParquet(f *testing.F) {
	jobs, _, err := ReadJobs(FormatNative, "testdata/native/small.csv")
	if err != nil {
		f.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteNativeParquet(&buf, jobs); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, FormatNative, "f.parquet", data) })
}

func FuzzOpenBPods(f *testing.F) {
	seedFile(f, openbDir+"openb_pod_list_gpuspec10.csv", 3000)
	seedFile(f, openbDir+"openb_pod_list_multigpu20.csv", 1000)
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, FormatOpenBPods, "f.csv", data) })
}

func FuzzPhillyGavel(f *testing.F) {
	seedFile(f, phillyDir+"philly_gavel_jobs.csv", 2000)
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, FormatPhillyGavel, "f.csv", data) })
}

func FuzzGavelRaw(f *testing.F) {
	seedFile(f, phillyDir+"raw_gavel_seed0/925e2b.trace", 2000)
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, FormatPhillyGavel, "vc.trace", data) })
}

func FuzzDLRM(f *testing.F) {
	seedFile(f, dlrmFile, 3000)
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, FormatAlibabaDLRM, "f.csv", data) })
}

func FuzzHelios(f *testing.F) {
	seedFile(f, synDir+"helios_cluster_log.csv", 4000)
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, FormatHelios, "f.csv", data) })
}

func FuzzSlurm(f *testing.F) {
	seedFile(f, synDir+"sacct.txt", 4000)
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, FormatSlurmSacct, "f.txt", data) })
}

func FuzzPAIJobs(f *testing.F) {
	seedFile(f, synDir+"pai/pai_task_table.csv", 4000)
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, FormatPAIJobs, "pai_task_table.csv", data) })
}

func FuzzPhilly(f *testing.F) {
	seedFile(f, synDir+"philly_cluster_job_log.json", 4000)
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, FormatPhilly, "f.json", data) })
}

func FuzzNodeLists(f *testing.F) {
	seedFile(f, openbDir+"openb_node_list_all_node.csv", 1000)
	seedFile(f, "testdata/alibaba-pai-2020-machines/pai_machine_spec.csv", 1000)
	seedFile(f, "testdata/alibaba-spot-gpu-2026-nodes/node_info_df.csv", 1000)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, format := range NodeFormats() {
			fuzzNodes(t, format, "n.csv", data)
		}
	})
}
