package pollux

import (
	"fmt"
	"os"
	"testing"
	"time"

	pm "github.com/gpusim/gpusim/workloads/pollux"
)

func TestQuickArtifact(t *testing.T) {
	pol := os.Getenv("POL")
	load := os.Getenv("LOAD")
	dir := "data/workloads"
	if load == "0.5" {
		dir = "data/workloads-0.5"
	} else {
		load = "1.0"
	}
	for w := 1; w <= 8; w++ {
		f, _ := pm.DataFS().Open(fmt.Sprintf("%s/workload-%d.csv", dir, w))
		jobs, err := pm.ReadWorkload(f, "w")
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		r, err := Simulate(jobs, pol, DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		pub := Published[[2]string{pol, load}][w-1]
		t.Logf("w%d %s mean %.1f pub %.1f diff %+.1f%% (%v)", w, pol, r.MeanJCT(), pub, 100*(r.MeanJCT()/pub-1), time.Since(t0))
	}
}

func TestQuickJobs(t *testing.T) {
	pol := os.Getenv("POL")
	f, _ := pm.DataFS().Open(os.Getenv("WF"))
	jobs, _ := pm.ReadWorkload(f, "w")
	r, err := Simulate(jobs, pol, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range r.Names {
		fmt.Printf("%s %s %d %d %.0f\n", n, jobs[i].App, jobs[i].Replicas, jobs[i].BatchSize, r.JCT[i])
	}
}
