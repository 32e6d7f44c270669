package traces

import (
	"strings"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

// The artifact's workload 1: every row imported; ncf-29 (1 GPU, batch 32768,
// submitted at 5,880 s) trains for 47 s, the training part of its published
// 77 s JCT under Tiresias (30 s restart + 47 s; shared/traces/pollux-osdi21
// README).
func TestPolluxWorkload(t *testing.T) {
	jobs, rep, err := ReadJobs(FormatPollux, "../workloads/pollux/data/workloads/workload-1.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 160 || rep.Rows != 160 {
		t.Fatalf("jobs %d rows %d", len(jobs), rep.Rows)
	}
	var found bool
	for _, j := range jobs {
		if j.TotalGPUs() < 1 || j.TotalGPUs() > 64 || j.Duration <= 0 || j.Queue != j.Workload {
			t.Errorf("job %s: %+v", j.ID, j)
		}
		if j.ID == "ncf-29" {
			found = true
			if j.Duration != sim.Seconds(47) || j.Submit != sim.Time(sim.Seconds(5880)) || j.TotalGPUs() != 1 || j.Class != sim.ClassTraining {
				t.Errorf("ncf-29: %+v", j)
			}
		}
		// Gangs of at most 4 GPUs per replica (the artifact's nodes).
		if j.GPUsPerReplica > 4 {
			t.Errorf("job %s: %d GPUs per replica", j.ID, j.GPUsPerReplica)
		}
	}
	if !found {
		t.Error("ncf-29 missing")
	}
}

func TestPolluxBadRows(t *testing.T) {
	hdr := "name,time,application,num_replicas,batch_size\n"
	good := "a,0,cifar10,2,256\n"
	for _, c := range []struct{ name, row, reason string }{
		{"app", "b,0,resnet,1,128\n", "application: unknown application"},
		{"replicas", "b,0,cifar10,65,128\n", "num_replicas: out of range"},
		{"batch", "b,0,cifar10,1,64\n", "batch_size: out of range"},
		{"time", "b,-3,cifar10,1,128\n", "time: negative time"},
		{"missing", "b,,cifar10,1,128\n", "time: missing value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := writeTemp(t, "w.csv", hdr+good+c.row)
			jobs, rep, err := ReadJobs(FormatPollux, p)
			if err != nil {
				t.Fatal(err)
			}
			if len(jobs) != 1 || rep.Skipped[c.reason] != 1 || rep.FirstSkip[c.reason] != 3 {
				t.Fatalf("jobs=%d report=%v", len(jobs), rep)
			}
			_, _, err = ReadJobsWith(FormatPollux, p, ReadOptions{Strict: true})
			if err == nil || !strings.Contains(err.Error(), p+":3: ") {
				t.Fatalf("strict: %v", err)
			}
		})
	}
	if _, _, err := ReadJobs(FormatPollux, writeTemp(t, "w.csv", "name,time,application,num_replicas,batch_size,colour\na,0,ncf,1,256,red\n")); err == nil || !IsRowError(err) {
		t.Errorf("unknown column: %v", err)
	}
}
