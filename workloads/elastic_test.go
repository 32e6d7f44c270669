package workloads

import (
	"testing"

	"github.com/gpusim/gpusim/sim"
)

// An elastic class makes elastic gangs: every job of the class carries the
// class's sizes, its preferred count is one of them (the drawn count
// clamped and brought down to a size), and the other classes' jobs and the
// other per-job draws are unchanged (arrival times follow the load, so they
// move with the preferred sizes).
func TestSyntheticElasticClass(t *testing.T) {
	s := DefaultSynthetic()
	s.Jobs = 400
	s.SetDefaults()
	rigid := gen(t, s, 7, 256, 8)
	ci := -1
	for i, c := range s.Classes {
		if c.Class == string(sim.ClassTraining) {
			ci = i
		}
	}
	s.Classes[ci].Elastic = &Elastic{MinReplicas: 2, MaxReplicas: 7, Step: 2}
	if fe := s.Validate(); len(fe) > 0 {
		t.Fatal(fe)
	}
	jobs := gen(t, s, 7, 256, 8)
	n := 0
	for i, j := range jobs {
		r := rigid[i]
		if j.Duration != r.Duration || j.GPUsPerReplica != r.GPUsPerReplica || j.Class != r.Class {
			t.Fatalf("job %d: elastic class changed other draws: %+v vs %+v", i, j, r)
		}
		if j.Class != sim.ClassTraining || j.GPUsPerReplica == 0 {
			if j.Elastic != nil || j.Replicas != r.Replicas {
				t.Fatalf("job %s of class %s changed", j.ID, j.Class)
			}
			continue
		}
		n++
		want := min(max(r.Replicas, 2), 7)
		want -= (want - 2) % 2
		if j.Elastic == nil || j.Replicas != want || !j.Elastic.Valid(j.Replicas) || j.Elastic.Max != 7 {
			t.Fatalf("job %s: replicas %d (drawn %d), elastic %+v; want preferred %d", j.ID, j.Replicas, r.Replicas, j.Elastic, want)
		}
		if err := j.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	if n == 0 {
		t.Fatal("no training job")
	}
	s.Classes[ci].Elastic = &Elastic{MinReplicas: 2, MaxReplicas: 7, Step: 2, PreferredReplicas: 5}
	if fe := s.Validate(); len(fe) != 1 || fe[0].Path != "classes["+string(rune('0'+ci))+"].elastic.preferredReplicas" {
		t.Errorf("preferred 5 with step 2 from 2: %v", fe)
	}
}
