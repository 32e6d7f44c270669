package traces

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpusim/gpusim/sim"
)

const synDir = "testdata/synthetic/"

func sec(s float64) sim.Duration { return sim.Seconds(s) }

func TestHeliosSynthetic(t *testing.T) {
	jobs, rep, err := ReadJobs(FormatHelios, synDir+"helios_cluster_log.csv")
	if err != nil {
		t.Fatal(err)
	}
	mk := func(id string, sub, dur float64, reps, gpus int32, cpu int64, user, vc string) sim.JobSpec {
		return sim.JobSpec{ID: sim.JobID(id), Submit: sim.Time(sec(sub)), Duration: sec(dur), Replicas: reps, GPUsPerReplica: gpus,
			GPUMilli: 1000, CPUMilli: cpu, User: user, Queue: vc, Class: sim.ClassUnknown}
	}
	want := []sim.JobSpec{
		mk("1425511", 61, 36848, 1, 1, 1000, "uXBbc", "vcJkd"),
		mk("1425512", 87, 249, 1, 4, 16000, "uVMrF", "vchbv"),
		mk("1425513", 88, 675233, 1, 1, 1000, "uzqls", "vcpDC"),
		mk("1425514", 120, 7200, 2, 8, 32000, "uzqls", "vcpDC"),
		mk("1425515", 0, 60, 1, 0, 8000, "uXBbc", "vcJkd"),
	}
	if d := cmp.Diff(want, jobs); d != "" {
		t.Fatal(d)
	}
	if rep.Rows != 6 || rep.Skipped["start_time: never started"] != 1 || rep.FirstSkip["start_time: never started"] != 7 {
		t.Fatal(rep)
	}
}

func TestSlurmSynthetic(t *testing.T) {
	jobs, rep, err := ReadJobs(FormatSlurmSacct, synDir+"sacct.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := []sim.JobSpec{
		{ID: "1001", Submit: sim.Time(sec(60)), Duration: sec(3600), Walltime: sec(7200), Replicas: 1, GPUsPerReplica: 1, GPUMilli: 1000,
			CPUMilli: 8000, MemoryMiB: 32768, Priority: 4294, Queue: "gpu", User: "alice", Team: "ml", Class: sim.ClassUnknown},
		{ID: "1002", Submit: 0, Duration: sec(93600), Walltime: sec(172800), Replicas: 2, GPUsPerReplica: 8, GPUMilli: 1000, GPUModels: []string{"a100"},
			CPUMilli: 32000, MemoryMiB: 262144, Priority: 5000, Queue: "gpu", User: "bob", Team: "vision", Class: sim.ClassUnknown},
		{ID: "1003_1", Submit: sim.Time(sec(360)), Duration: sec(90), Walltime: sec(1800), Replicas: 1, GPUsPerReplica: 0, GPUMilli: 1000,
			CPUMilli: 2000, MemoryMiB: 4000, Priority: 100, Queue: "debug", User: "carol", Team: "ml", Class: sim.ClassUnknown},
	}
	if d := cmp.Diff(want, jobs); d != "" {
		t.Fatal(d)
	}
	if rep.Rows != 7 || rep.Skipped["jobid: job step"] != 2 || rep.Skipped["start: never started"] != 2 {
		t.Fatal(rep)
	}
}

func TestSlurmDurations(t *testing.T) {
	for s, want := range map[string]float64{"30": 1800, "30:15": 1815, "01:02:03": 3723, "2-03": 2*86400 + 3*3600, "2-03:04": 2*86400 + 3*3600 + 240,
		"1-00:00:01": 86401, "00:00:01.5": 1.5} {
		got, err := parseSlurmDuration(s)
		if err != nil || got != want {
			t.Errorf("%s: %v %v", s, got, err)
		}
	}
	for _, s := range []string{"", "a", "1:2:3:4", "-5", "1-", "1:-2"} {
		if _, err := parseSlurmDuration(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	for s, want := range map[string]int64{"64G": 65536, "4000M": 4000, "4000": 4000, "1T": 1 << 20, "1536K": 2} {
		if got, err := parseMemMiB(s); err != nil || got != want {
			t.Errorf("%s: %d %v", s, got, err)
		}
	}
	if m, _ := slurmReqMem("1000Mc", 4, 1); m != 4000 {
		t.Error(m)
	}
}

func TestPAIJobsSynthetic(t *testing.T) {
	jobs, rep, err := ReadJobs(FormatPAIJobs, synDir+"pai/pai_task_table.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := []sim.JobSpec{
		{ID: "4f057009a5d481acec67b088/tensorflow", Submit: sim.Time(sec(1739100)), Duration: sec(38), Replicas: 1, GPUsPerReplica: 1, GPUMilli: 500,
			GPUModels: []string{"MISC"}, CPUMilli: 6000, MemoryMiB: 30000, User: "58540f191766", Class: sim.ClassUnknown},
		{ID: "a1/ps", Submit: sim.Time(sec(90)), Duration: sec(3900), Replicas: 2, GPUMilli: 1000, CPUMilli: 8000, MemoryMiB: 16384, User: "u1", Class: sim.ClassUnknown},
		{ID: "a1/worker", Submit: sim.Time(sec(90)), Duration: sec(3890), Replicas: 4, GPUsPerReplica: 1, GPUMilli: 1000, GPUModels: []string{"V100"},
			CPUMilli: 12000, MemoryMiB: 32768, User: "u1", Class: sim.ClassUnknown},
		{ID: "b2/worker", Submit: sim.Time(sec(450)), Duration: sec(300), Replicas: 2, GPUsPerReplica: 1, GPUMilli: 1000, GPUModels: []string{"T4"},
			CPUMilli: 4000, MemoryMiB: 8192, User: "u2", Class: sim.ClassUnknown},
		{ID: "e5/worker", Submit: sim.Time(sec(990)), Duration: sec(2000), Replicas: 1, GPUsPerReplica: 8, GPUMilli: 1000, GPUModels: []string{"V100M32"},
			CPUMilli: 6000, MemoryMiB: 20480, User: "u1", Class: sim.ClassUnknown},
	}
	if d := cmp.Diff(want, jobs); d != "" {
		t.Fatal(d)
	}
	if rep.Rows != 7 || rep.Skipped["end_time: no end time"] != 1 || rep.Skipped["start_time: never started"] != 1 ||
		!strings.Contains(strings.Join(rep.Notes, "\n"), "1 tasks had a GPU share that was rounded up") {
		t.Fatal(rep)
	}
	// Without the job table: submit = task start, no user.
	p := writeTemp(t, "pai_task_table.csv", "job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type\nx,w,1,Terminated,5,10,100,1,25,T4\n")
	jobs, _, err = ReadJobs(FormatPAIJobs, p)
	if err != nil || len(jobs) != 1 || jobs[0].Submit != sim.Time(sec(5)) || jobs[0].GPUMilli != 250 || jobs[0].User != "" {
		t.Fatal(err, jobs)
	}
}

func TestPhillyJSONSynthetic(t *testing.T) {
	jobs, rep, err := ReadJobs(FormatPhilly, synDir+"philly_cluster_job_log.json")
	if err != nil {
		t.Fatal(err)
	}
	mk := func(id string, sub, dur float64, reps, gpus int32, vc, user string) sim.JobSpec {
		return sim.JobSpec{ID: sim.JobID(id), Submit: sim.Time(sec(sub)), Duration: sec(dur), Replicas: reps, GPUsPerReplica: gpus, GPUMilli: 1000,
			Queue: vc, User: user, Class: sim.ClassTraining}
	}
	want := []sim.JobSpec{
		mk("application_1506638472019_10238", 1299, 1018, 2, 4, "ee9e8c", "6b2d14"),
		mk("application_1506638472019_10239", 0, 1200, 1, 1, "6214e9", "a9f3e1"),
		mk("application_1506638472019_10242", 8940, 7200, 3, 4, "ee9e8c", "6b2d14"),
	}
	if d := cmp.Diff(want, jobs); d != "" {
		t.Fatal(d)
	}
	if rep.Rows != 5 || rep.FirstSkip["attempts: never ran"] != 27 || rep.FirstSkip["attempts.end_time: missing value"] != 28 {
		t.Fatal(rep)
	}
	// Strict mode names the line.
	_, _, err = ReadJobsWith(FormatPhilly, synDir+"philly_cluster_job_log.json", ReadOptions{Strict: true})
	if err == nil || !strings.Contains(err.Error(), "philly_cluster_job_log.json:27: column attempts: never ran") {
		t.Fatal(err)
	}
}

func TestRawBadInputs(t *testing.T) {
	for name, c := range map[string]struct{ format, file, content, want string }{
		"philly not array":  {FormatPhilly, "p.json", `{"a": 1}`, "not a JSON array"},
		"philly truncated":  {FormatPhilly, "p.json", "[\n{\"jobid\": \"x\",", "malformed JSON"},
		"philly wrong type": {FormatPhilly, "p.json", "[\n\n{\"jobid\": 5}]", ":3: column jobid: want string"},
		"helios no column":  {FormatHelios, "h.csv", "job_id,gpu_num\n1,1\n", "missing required column"},
		"slurm no column":   {FormatSlurmSacct, "s.txt", "JobID|State\n1|X\n", "missing required column"},
		"pai short":         {FormatPAIJobs, "t.csv", "job_name,task_name\nx,y\n", "missing required column"},
	} {
		_, _, err := ReadJobs(c.format, writeTemp(t, c.file, c.content))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Bad values are counted skips.
	for name, c := range map[string]struct{ format, file, content, reason string }{
		"helios bad date":   {FormatHelios, "h.csv", "job_id,gpu_num,submit_time,duration\n1,1,yesterday,5\n", "submit_time: bad timestamp"},
		"helios negative":   {FormatHelios, "h.csv", "job_id,gpu_num,submit_time,duration\n1,1,2020-01-01 00:00:00,-5\n", "duration: negative time"},
		"helios bad gpus":   {FormatHelios, "h.csv", "job_id,gpu_num,submit_time,duration\n1,x,2020-01-01 00:00:00,5\n", "gpu_num: bad integer"},
		"slurm bad elapsed": {FormatSlurmSacct, "s.txt", "JobID|Submit|Start|Elapsed\n1|2020-01-01T00:00:00|2020-01-01T00:00:00|xx\n", "elapsed: bad duration"},
		"slurm bad tres":    {FormatSlurmSacct, "s.txt", "JobID|Submit|Start|Elapsed|AllocTRES\n1|2020-01-01T00:00:00|2020-01-01T00:00:00|00:01|gres/gpu=x\n", "alloctres: bad TRES"},
		"pai negative":      {FormatPAIJobs, "t.csv", "x,w,1,T,-5,10,1,1,1,T4\n", "start_time: negative time"},
		"pai bad number":    {FormatPAIJobs, "t.csv", "x,w,1,T,abc,10,1,1,1,T4\n", "start_time: bad number"},
		"philly bad date":   {FormatPhilly, "p.json", `[{"jobid":"a","submitted_time":"soon","attempts":[]}]`, "submitted_time: bad timestamp"},
	} {
		_, rep, err := ReadJobs(c.format, writeTemp(t, c.file, c.content))
		if err != nil || rep.Skipped[c.reason] != 1 {
			t.Errorf("%s: %v %v", name, err, rep)
		}
	}
}
