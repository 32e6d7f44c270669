package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpusim/gpusim/sim"
)

// streamResult builds, without running the engine, a result of n jobs and 3n
// events on 16 nodes x 8 GPUs with every state, unstarted jobs (NaN/null
// times), multi-replica placements, preemptions with requeue delays, several
// queues, users and teams, and a few samples. It is large enough to span
// several Parquet row groups and job-row chunks.
func streamResult(t testing.TB, n int) *sim.Result {
	t.Helper()
	c := testCluster(t, 16, 8)
	rng := sim.Stream(7, "bigResult")
	res := &sim.Result{Cluster: c, Policy: "big", End: sim.Time(sim.Seconds(float64(n)))}
	res.Jobs = make([]sim.Job, n)
	states := []sim.JobState{sim.StateCompleted, sim.StateCompleted, sim.StateCompleted, sim.StateRunning, sim.StatePending, sim.StateKilled, sim.StateTimeout}
	classes := []sim.JobClass{sim.ClassTraining, sim.ClassExperiment, sim.ClassServing, sim.ClassBatchInference}
	for i := range res.Jobs {
		j := &res.Jobs[i]
		submit := sim.Time(sim.Seconds(float64(i) * 0.7))
		rep := int32(1 + i%3/2)
		j.Spec = sim.JobSpec{ID: sim.JobID(fmt.Sprintf("job-%07d", i)), Submit: submit, Duration: sim.Duration(1 + rng.IntN(1e10)),
			Replicas: rep, GPUsPerReplica: int32(1 + i%4), GPUMilli: 1000, Class: classes[i%4],
			Queue: []string{"", "q1", "q2", "q3"}[i%4], User: fmt.Sprintf("u%d", i%37), Team: fmt.Sprintf("t%d", i%5)}
		j.Ref = sim.JobRef(i)
		j.State = states[i%len(states)]
		j.Estimate = j.Spec.Duration + sim.Duration(i%1000)
		j.FirstStart, j.LastStart, j.End = sim.Never, sim.Never, sim.Never
		if j.State != sim.StatePending {
			j.FirstStart = submit.Add(sim.Duration(rng.IntN(1e9)))
			j.LastStart = j.FirstStart
			for r := int32(0); r < rep; r++ {
				node := sim.NodeID((i + int(r)) % 16)
				j.Nodes = append(j.Nodes, node)
				first, _ := c.NodeGPUs(node)
				for g := int32(0); g < j.Spec.GPUsPerReplica; g++ {
					j.GPUs = append(j.GPUs, first+sim.GPUID(g))
				}
			}
			res.Log = append(res.Log, sim.Event{Time: j.FirstStart, Kind: sim.EvStart, Job: j.Ref})
			if i%11 == 0 {
				j.Preempted = 1
				j.Wasted = sim.Duration(rng.IntN(1e8))
				j.Overhead = j.Wasted / 3
				res.Log = append(res.Log, sim.Event{Time: j.FirstStart.Add(5), Kind: sim.EvPreempt, Job: j.Ref},
					sim.Event{Time: j.FirstStart.Add(sim.Duration(10 + i%97)), Kind: sim.EvStart, Job: j.Ref})
			}
		}
		if j.State != sim.StatePending && j.State != sim.StateRunning {
			j.End = j.FirstStart.Add(j.Spec.Duration)
			kind := sim.EvFinish
			if j.State == sim.StateKilled {
				kind = sim.EvKill
			} else if j.State == sim.StateTimeout {
				kind = sim.EvTimeout
			}
			res.Log = append(res.Log, sim.Event{Time: j.End, Kind: kind, Job: j.Ref})
		}
		res.Log = append(res.Log, sim.Event{Time: submit, Kind: sim.EvWait, Job: j.Ref, Value: int64(i % 3)})
	}
	res.Log = append(res.Log, sim.Event{Time: res.End, Kind: sim.EvArrive, Job: -1})
	for k := 0; k < 100; k++ {
		res.Samples = append(res.Samples, sim.Sample{Time: sim.Time(sim.Seconds(float64(k * 60))), AllocMilli: int64(k * 1000), BusyGPUs: int32(k), Running: int32(k), Pending: int32(100 - k)})
	}
	res.Makespan = res.End
	res.Events = int64(len(res.Log))
	return res
}

func writeBytes(t *testing.T, write func(w io.Writer) error) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// The streaming writers of WriteRunDir (job rows derived a chunk at a time,
// Parquet built a column at a time) write exactly the bytes of the whole-file
// writers, across chunk and row-group boundaries, for a real run and for none.
func TestStreamingWritersMatchWholeFileWriters(t *testing.T) {
	n := rowGroupRows + jobRowChunk + 17 // more than one row group and chunk
	cases := map[string]*sim.Result{
		"big":   streamResult(t, n),
		"mixed": mixedResult(t, greedy{}, 3),
		"empty": {Cluster: testCluster(t, 1, 8)},
	}
	if len(cases["big"].Log) <= rowGroupRows {
		t.Fatalf("the big log has %d events, want more than a row group", len(cases["big"].Log))
	}
	for name, res := range cases {
		t.Run(name, func(t *testing.T) {
			rows := JobRows(res)
			if got, want := writeBytes(t, func(w io.Writer) error { return writeJobsCSVOf(w, res) }),
				writeBytes(t, func(w io.Writer) error { return WriteJobsCSV(w, rows) }); !bytes.Equal(got, want) {
				t.Errorf("jobs.csv: streaming writer differs (%d vs %d bytes)", len(got), len(want))
			}
			if got, want := writeBytes(t, func(w io.Writer) error { return writeJobsParquetOf(w, res) }),
				writeBytes(t, func(w io.Writer) error { return WriteJobsParquet(w, rows) }); !bytes.Equal(got, want) {
				t.Errorf("jobs.parquet: column writer differs (%d vs %d bytes)", len(got), len(want))
			}
			if got, want := writeBytes(t, func(w io.Writer) error { return writeEventsParquetColumns(w, res) }),
				writeBytes(t, func(w io.Writer) error { return WriteEventsParquet(w, res) }); !bytes.Equal(got, want) {
				t.Errorf("events.parquet: column writer differs (%d vs %d bytes)", len(got), len(want))
			}
		})
	}
}

// referenceSummarize is SummarizeWith's job loop as it was before the grouped
// scratch (one accumulator per group fed job by job), kept to prove the
// rewrite gives the same summary.
func referenceSummarize(res *sim.Result, price Prices) *Summary {
	type racc struct {
		jobs, completed, preempt int
		wait, jct, sd, requeue   []float64
		gpuH, wastedH, cost      float64
	}
	toAcc := func(a *racc) acc {
		return acc{jobs: a.jobs, completed: a.completed, preempt: a.preempt, wait: a.wait, jct: a.jct, sd: a.sd,
			requeue: a.requeue, gpuH: a.gpuH, wastedH: a.wastedH, cost: a.cost}
	}
	s := &Summary{Classes: map[string]GroupSummary{}, PerQueue: map[string]GroupSummary{}, PerUser: map[string]GroupSummary{}, PerTeam: map[string]GroupSummary{}}
	var all racc
	groups := [4]map[string]*racc{{}, {}, {}, {}}
	get := func(m map[string]*racc, k string) *racc {
		if m[k] == nil {
			m[k] = &racc{}
		}
		return m[k]
	}
	held, wasted, requeue := gpuHours(res)
	var totalH float64
	add := func(a *racc, m JobMetrics, done bool) {
		a.jobs++
		if done {
			a.completed++
		}
		if m.HasWait {
			a.wait = append(a.wait, m.Wait)
		}
		if m.HasJCT {
			a.jct = append(a.jct, m.JCT)
			a.sd = append(a.sd, m.Slowdown)
		}
	}
	for i := range res.Jobs {
		j := &res.Jobs[i]
		totalH += held[i]
		m := MetricsOf(j)
		done := j.State == sim.StateCompleted
		add(&all, m, done)
		cost := held[i] * price.of(res, j)
		for g, k := range []string{classOf(j.Spec.Class), QueueName(j.Spec.Queue), UserName(j.Spec.User), UserName(j.Spec.Team)} {
			a := get(groups[g], k)
			add(a, m, done)
			a.preempt += int(j.Preempted)
			a.gpuH += held[i]
			a.wastedH += wasted[i]
			a.cost += cost
			a.requeue = append(a.requeue, requeue[sim.JobRef(i)]...)
		}
	}
	s.WaitS, s.JCTS, s.Slowdown = ComputeStats(all.wait), ComputeStats(all.jct), ComputeStats(all.sd)
	means := [4]map[string]float64{{}, {}, {}, {}}
	for g, out := range []map[string]GroupSummary{s.Classes, s.PerQueue, s.PerUser, s.PerTeam} {
		for k, a := range groups[g] {
			aa := toAcc(a)
			out[k] = aa.group(totalH)
			if len(aa.sd) > 0 {
				means[g][k] = mean(aa.sd)
			}
		}
	}
	s.Fairness.JainUsers = round(jainOfMeans(means[2]))
	s.Fairness.JainQueues = round(jainOfMeans(means[1]))
	return s
}

// SummarizeWith's grouped computation gives exactly the figures of one
// accumulator per group fed job by job (same float sums, same percentiles).
func TestSummarizeMatchesPerGroupAccumulators(t *testing.T) {
	prices := Prices{PerModel: map[string]float64{"a100": 2.5}, Default: 1.25}
	big := streamResult(t, 20000)
	big.Log = big.Log[:len(big.Log)-1] // gpuHours needs every event to name a job
	for name, res := range map[string]*sim.Result{
		"big": big, "mixed": mixedResult(t, greedy{}, 5), "small": smallResult(t), "empty": {},
	} {
		t.Run(name, func(t *testing.T) {
			got := SummarizeWith(res, Provenance{}, time.Second, prices)
			want := referenceSummarize(res, prices)
			for _, c := range []struct {
				name      string
				got, want any
			}{
				{"wait", got.WaitS, want.WaitS}, {"jct", got.JCTS, want.JCTS}, {"slowdown", got.Slowdown, want.Slowdown},
				{"classes", got.Classes, want.Classes}, {"queues", got.PerQueue, want.PerQueue},
				{"users", got.PerUser, want.PerUser}, {"teams", got.PerTeam, want.PerTeam}, {"fairness", got.Fairness, want.Fairness},
			} {
				g, _ := json.Marshal(c.got)
				w, _ := json.Marshal(c.want)
				if !bytes.Equal(g, w) {
					t.Errorf("%s:\n got %s\nwant %s", c.name, g, w)
				}
			}
			if name == "big" && (len(got.PerUser) != 37 || got.Jobs.Preemptions == 0 || got.PerQueue["q1"].RequeueDelayS.Max == 0) {
				t.Errorf("big result does not exercise groups/requeues: %d users, %d preemptions", len(got.PerUser), got.Jobs.Preemptions)
			}
		})
	}
}

// WriteRunDirFunc returns the summary it wrote, and writes summary.json only
// after every data file: when one fails there is no summary.json.
func TestWriteRunDirFuncSummaryLast(t *testing.T) {
	res := mixedResult(t, greedy{}, 1)
	dir := t.TempDir()
	s, err := WriteRunDirFunc(dir, res, func() *Summary { return Summarize(res, Provenance{Scenario: "x"}, 0) })
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := MarshalSummary(s); !bytes.Equal(b, want) {
		t.Error("summary.json is not the returned summary")
	}
	bad := t.TempDir()
	// A non-empty directory where jobs.parquet goes: its rename fails.
	if err := os.MkdirAll(filepath.Join(bad, JobsFile, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = WriteRunDirFunc(bad, res, func() *Summary { return Summarize(res, Provenance{}, 0) })
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte(JobsFile)) {
		t.Fatalf("err = %v, want an error naming %s", err, JobsFile)
	}
	if _, err := os.Stat(filepath.Join(bad, SummaryFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("summary.json written although jobs.parquet failed (stat: %v)", err)
	}
	if _, err := WriteRunDirFunc(t.TempDir(), res, func() *Summary { return nil }); err == nil {
		t.Error("nil summary accepted")
	}
}
