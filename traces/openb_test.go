package traces

import (
	"encoding/csv"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

const openbDir = "testdata/alibaba-openb-2023/"

func TestOpenBPodsReal(t *testing.T) {
	for _, c := range []struct {
		file       string
		rows       int
		withSpec   int
		multiGPU   int
		totalMilli int64
	}{
		{"openb_pod_list_default.csv", 8152, 0, 75, 6086800},
		{"openb_pod_list_gpuspec10.csv", 8152, 732, 75, 6086800},
		{"openb_pod_list_multigpu20.csv", 8324, 0, 247, 7086800},
	} {
		jobs, rep, err := ReadJobs(FormatOpenBPods, openbDir+c.file)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if len(jobs) != c.rows || rep.Rows != c.rows || rep.SkippedTotal() != 0 {
			t.Fatalf("%s: %d jobs, report %v", c.file, len(jobs), rep)
		}
		var spec, multi, cpuOnly, sharing int
		var milli int64
		for i := range jobs {
			j := &jobs[i]
			if len(j.GPUModels) > 0 {
				spec++
			}
			if j.GPUsPerReplica > 1 {
				multi++
			}
			if j.GPUsPerReplica == 0 {
				cpuOnly++
			}
			if j.Fractional() {
				sharing++
			}
			milli += j.GPUDemandMilli()
		}
		// Numbers published in the dataset README.
		if spec != c.withSpec || multi != c.multiGPU || cpuOnly != 1088 || sharing != 3078 || milli != c.totalMilli {
			t.Errorf("%s: spec=%d multi=%d cpu=%d sharing=%d milli=%d", c.file, spec, multi, cpuOnly, sharing, milli)
		}
	}
}

// TestOpenBPodsIndependent recomputes every field of the default list straight from
// the CSV and compares.
func TestOpenBPodsIndependent(t *testing.T) {
	path := openbDir + "openb_pod_list_default.csv"
	jobs, _, err := ReadJobs(FormatOpenBPods, path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	recs = recs[1:]
	if len(recs) != len(jobs) {
		t.Fatalf("%d rows vs %d jobs", len(recs), len(jobs))
	}
	atoi := func(s string) int64 { v, _ := strconv.ParseInt(s, 10, 64); return v }
	pending := 0
	for i, r := range recs {
		j := jobs[i]
		start := r[10]
		if start == "" {
			start = r[8]
			pending++
		}
		wantMilli := atoi(r[4])
		if atoi(r[3]) == 0 {
			wantMilli = 1000
		}
		if string(j.ID) != r[0] || j.CPUMilli != atoi(r[1]) || j.MemoryMiB != atoi(r[2]) || int64(j.GPUsPerReplica) != atoi(r[3]) ||
			int64(j.GPUMilli) != wantMilli || j.Queue != r[6] || j.Submit != sim.Time(atoi(r[8])*1e6) ||
			j.Duration != sim.Duration((atoi(r[9])-atoi(start))*1e6) || j.Replicas != 1 {
			t.Fatalf("row %d: %v -> %+v", i+2, r, j)
		}
	}
	if pending != 897 {
		t.Fatalf("pending %d", pending)
	}
	if jobs[0].Class != sim.ClassServing {
		t.Fatalf("class of LS pod: %v", jobs[0].Class)
	}
}

func TestOpenBPodsBadRows(t *testing.T) {
	hdr := "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
	good := "p0,1000,1024,1,500,,LS,Running,0,10,1\n"
	cases := []struct{ name, row, reason string }{
		{"bad number", "p1,1000,1024,1,500,,LS,Running,x,10,1\n", "creation_time: bad number"},
		{"negative time", "p1,1000,1024,1,500,,LS,Running,-1,10,1\n", "creation_time: negative time"},
		{"unknown model", "p1,1000,1024,1,500,H100,LS,Running,0,10,1\n", "gpu_spec: unknown GPU model"},
		{"milli range", "p1,1000,1024,1,1500,,LS,Running,0,10,1\n", "gpu_milli: out of range 1..1000"},
		{"fractional multi", "p1,1000,1024,2,500,,LS,Running,0,10,1\n", "gpu_milli: fractional share with num_gpu > 1"},
		{"deleted early", "p1,1000,1024,1,500,,LS,Running,0,10,20\n", "deletion_time: deleted before start"},
		{"bad qos", "p1,1000,1024,1,500,,XX,Running,0,10,1\n", "qos: unknown qos"},
		{"missing", "p1,,1024,1,500,,LS,Running,0,10,1\n", "cpu_milli: missing value"},
		{"fields", "p1,1000\n", "wrong number of fields"},
		{"duplicate", good, "duplicate job id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeTemp(t, "pods.csv", hdr+good+c.row)
			jobs, rep, err := ReadJobs(FormatOpenBPods, p)
			if err != nil {
				t.Fatal(err)
			}
			if len(jobs) != 1 || rep.Skipped[c.reason] != 1 || rep.FirstSkip[c.reason] != 3 || rep.Rows != 2 {
				t.Fatalf("jobs=%d report=%v", len(jobs), rep)
			}
			_, _, err = ReadJobsWith(FormatOpenBPods, p, ReadOptions{Strict: true})
			if err == nil || !strings.Contains(err.Error(), p+":3: ") {
				t.Fatalf("strict: %v", err)
			}
		})
	}
	// Structural problems are errors.
	for name, content := range map[string]string{
		"missing column": "name,cpu_milli,memory_mib,num_gpu\np,1,1,1\n",
		"unknown column": "name,cpu_milli,memory_mib,num_gpu,gpu_milli,colour\np,1,1,1,1000,red\n",
		"no deletion":    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time\np,1,1,1,1000,0\n",
	} {
		if _, _, err := ReadJobs(FormatOpenBPods, writeTemp(t, "pods.csv", content)); err == nil || !IsRowError(err) {
			t.Errorf("%s: err %v", name, err)
		}
	}
}

func TestOpenBNodesReal(t *testing.T) {
	nodes, err := ReadNodes(FormatOpenBNodes, openbDir+"openb_node_list_gpu_node.csv")
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int32{}
	var gpus int32
	var cpu int64
	for _, n := range nodes {
		per[n.GPUModel] += n.GPUs
		gpus += n.GPUs
		cpu += n.CPUMilli
	}
	want := map[string]int32{"G2": 4392, "T4": 842, "G3": 312, "P100": 265, "V100M32": 204, "V100M16": 195, "A10": 2}
	if len(nodes) != 1213 || gpus != 6212 || cpu != 107018000 {
		t.Fatalf("nodes=%d gpus=%d cpu=%d", len(nodes), gpus, cpu)
	}
	for m, n := range want {
		if per[m] != n {
			t.Errorf("%s: %d GPUs, want %d", m, per[m], n)
		}
	}
	if _, err := sim.NewCluster(nodes); err != nil {
		t.Fatal(err)
	}
	all, err := ReadNodes(FormatOpenBNodes, openbDir+"openb_node_list_all_node.csv")
	if err != nil {
		t.Fatal(err)
	}
	cpuOnly := 0
	for _, n := range all {
		if n.GPUs == 0 {
			cpuOnly++
			if n.Pool != "cpu" || n.GPUModel != "" {
				t.Fatalf("cpu node %+v", n)
			}
		}
	}
	if len(all) != 1523 || cpuOnly != 310 {
		t.Fatalf("all=%d cpuOnly=%d", len(all), cpuOnly)
	}
	if _, err := sim.NewCluster(all); err != nil {
		t.Fatal(err)
	}
}

func TestOpenBNodesBad(t *testing.T) {
	hdr := "sn,cpu_milli,memory_mib,gpu,model\n"
	for name, c := range map[string]struct{ content, want string }{
		"missing column": {"sn,cpu_milli,memory_mib,gpu\nn,1,1,1\n", "F:1: column model: missing required column"},
		"bad number":     {hdr + "n,x,1,1,T4\n", `F:2: column cpu_milli: bad integer: "x"`},
		"negative":       {hdr + "n,-1,1,1,T4\n", "F:2: column cpu_milli: negative value: -1"},
		"no model":       {hdr + "n,1,1,2,\n", "F:2: column model: missing value"},
		"duplicate":      {hdr + "n,1,1,2,T4\nn,1,1,2,T4\n", `F:3: duplicate node name "n" (first on line 2)`},
		"empty":          {hdr, "F: no nodes"},
	} {
		p := writeTemp(t, "F", c.content)
		_, err := ReadNodes(FormatOpenBNodes, p)
		if err == nil || !strings.HasPrefix(strings.ReplaceAll(err.Error(), p, "F"), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}
