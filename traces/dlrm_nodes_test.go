package traces

import (
	"encoding/csv"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpusim/gpusim/sim"
)

const dlrmFile = "testdata/alibaba-dlrm-2025/disaggregated_DLRM_trace_even_apps.csv"

func TestDLRMReal(t *testing.T) {
	jobs, rep, err := ReadJobs(FormatAlibabaDLRM, dlrmFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 13624 || rep.SkippedTotal() != 0 {
		t.Fatalf("%d jobs %v", len(jobs), rep)
	}
	// Independent recomputation from the raw CSV.
	f, _ := os.Open(dlrmFile)
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	num := func(s string, def float64) float64 {
		if s == "" {
			return def
		}
		v, _ := strconv.ParseFloat(s, 64)
		return v
	}
	cn, hn, alive := 0, 0, 0
	for i, r := range recs[1:] {
		j := jobs[i]
		c := num(r[14], 0)
		s := num(r[15], c)
		d := num(r[16], DLRMTraceEnd)
		if r[16] == "" {
			alive++
		}
		gpus, _ := strconv.Atoi(r[5])
		if string(j.ID) != r[0] || j.Queue != r[1] || j.User != r[2] || int(j.GPUsPerReplica) != gpus ||
			j.CPUMilli != int64(num(r[3], 0)*1000) || j.MemoryMiB != int64(num(r[9], 0)*1024) ||
			j.Submit != sim.Time(sim.Seconds(c)) || j.Duration != sim.Seconds(d)-sim.Seconds(s) || j.Class != sim.ClassServing {
			t.Fatalf("row %d: %v -> %+v", i+2, r, j)
		}
		if r[1] == "CN" {
			cn++
		} else {
			hn++
		}
	}
	if cn != 9164 || hn != 4460 {
		t.Fatalf("cn=%d hn=%d", cn, hn)
	}
	if alive == 0 || !strings.Contains(strings.Join(rep.Notes, "\n"), "max_instance_per_node") {
		t.Fatal(rep.Notes)
	}
}

func TestDLRMBad(t *testing.T) {
	hdr := "instance_sn,role,app_name,cpu_request,gpu_request,memory_request,max_instance_per_node,creation_time,scheduled_time,deletion_time\n"
	good := "i0,HN,app_0,12,1,120.0,8,,,\n"
	for name, c := range map[string]struct{ row, reason string }{
		"bad number":  {"i1,HN,app_0,12,1,120.0,8,abc,,\n", "creation_time: bad number"},
		"negative":    {"i1,HN,app_0,12,1,120.0,8,-5,,\n", "creation_time: negative time"},
		"early del":   {"i1,HN,app_0,12,1,120.0,8,10,20,15\n", "deletion_time: deleted before start"},
		"bad role":    {"i1,XX,app_0,12,1,120.0,8,,,\n", "role: unknown role"},
		"bad limit":   {"i1,HN,app_0,12,1,120.0,0,,,\n", "max_instance_per_node: bad value"},
		"bad gpu":     {"i1,HN,app_0,12,x,120.0,8,,,\n", "gpu_request: bad integer"},
		"missing app": {"i1,HN,,12,1,120.0,8,,,\n", "app_name: missing value"},
	} {
		jobs, rep, err := ReadJobs(FormatAlibabaDLRM, writeTemp(t, "d.csv", hdr+good+c.row))
		if err != nil || len(jobs) != 1 || rep.Skipped[c.reason] != 1 {
			t.Errorf("%s: %v %v", name, err, rep)
		}
	}
	if _, _, err := ReadJobs(FormatAlibabaDLRM, writeTemp(t, "d.csv", "instance_sn,role\ni,HN\n")); err == nil || !IsRowError(err) {
		t.Error(err)
	}
}

func TestPAIMachinesReal(t *testing.T) {
	nodes, err := ReadNodes(FormatPAIMachines, "testdata/alibaba-pai-2020-machines/pai_machine_spec.csv")
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int32{}
	cpuNodes := 0
	for _, n := range nodes {
		per[n.GPUModel] += n.GPUs
		if n.GPUs == 0 {
			cpuNodes++
		}
	}
	if len(nodes) != 1897 || cpuNodes != 83 {
		t.Fatalf("%d nodes, %d cpu", len(nodes), cpuNodes)
	}
	if d := cmp.Diff(map[string]int32{"MISC": 2240, "P100": 1596, "V100M32": 1080, "T4": 994, "V100": 832, "": 0}, per); d != "" {
		t.Fatal(d)
	}
	if nodes[0].CPUMilli != 96000 || nodes[0].MemoryMiB != 512*1024 {
		t.Fatalf("%+v", nodes[0])
	}
	if _, err := sim.NewCluster(nodes); err != nil {
		t.Fatal(err)
	}
	// With a header row too.
	hdr, _ := os.ReadFile("testdata/alibaba-pai-2020-machines/pai_machine_spec.header")
	body, _ := os.ReadFile("testdata/alibaba-pai-2020-machines/pai_machine_spec.csv")
	with, err := ReadNodes(FormatPAIMachines, writeTemp(t, "m.csv", string(hdr)+string(body)))
	if err != nil || !cmp.Equal(with, nodes) {
		t.Fatalf("with header: %v", err)
	}
	if _, err := ReadNodes(FormatPAIMachines, writeTemp(t, "m.csv", "m1,CPU,96,512,2\n")); err == nil || !strings.Contains(err.Error(), ":1: column cap_gpu") {
		t.Fatal(err)
	}
}

func TestSpotNodesReal(t *testing.T) {
	nodes, err := ReadNodes(FormatSpotGPUNodes, "testdata/alibaba-spot-gpu-2026-nodes/node_info_df.csv")
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int32{}
	var total int32
	for _, n := range nodes {
		per[n.GPUModel] += n.GPUs
		total += n.GPUs
	}
	if len(nodes) != 4278 || total != 10412 {
		t.Fatalf("%d nodes %d GPUs", len(nodes), total)
	}
	want := map[string]int32{"A100-SXM4-80GB": 3456, "A10": 2494, "H800": 1752, "GPU-series-1": 1558, "GPU-series-2": 976, "A800-SXM4-80GB": 176}
	if d := cmp.Diff(want, per); d != "" {
		t.Fatal(d)
	}
	cs := ClusterSource{Format: FormatSpotGPUNodes, Path: "alibaba-spot-gpu-2026-nodes/node_info_df.csv", DefaultMemoryMiB: 1 << 20}
	got, err := cs.Load("testdata")
	if err != nil || got[0].MemoryMiB != 1<<20 {
		t.Fatal(err)
	}
	if _, err := ReadNodes(FormatSpotGPUNodes, writeTemp(t, "n.csv", "gpu_model,gpu_capacity_num,cpu_num,node_name\nA10,x,1,n\n")); err == nil || !strings.Contains(err.Error(), ":2: column gpu_capacity_num: bad integer") {
		t.Fatal(err)
	}
}
