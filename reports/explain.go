package reports

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpusim/gpusim/sim"
)

// NotExamined is the pseudo-reason of pending time with no recorded wait reason:
// the policy never reported on the job in that interval, because it stopped
// scanning the queue at an earlier job (queue order).
const NotExamined = "not-examined"

// notExaminedText explains NotExamined.
const notExaminedText = "not examined: behind earlier jobs in queue order (the policy recorded no reason)"

// Step is one line of a job's timeline.
type Step struct {
	TimeU  int64  // virtual time, µs
	Kind   string // event kind (arrive, wait, reserve, start, preempt, finish, kill, timeout)
	Detail string // wait: reason name; reserve: reserved start (µs) as text
	Value  int64
}

// ReasonTime is the pending time spent under one reason.
type ReasonTime struct {
	Reason string // a sim.Reason name or NotExamined
	U      int64  // µs
}

// Explanation is why one job waited, derived from a run directory's events.
type Explanation struct {
	Job      JobRow
	Policy   string
	EndU     int64 // when the run stopped, µs
	Steps    []Step
	Pending  []ReasonTime // per reason, in order of first occurrence
	PendingU int64        // total pending time (until start, or until the run end)
	Estimate *StartEstimate
}

// StartEstimate is the estimated earliest start of a job still pending at the
// end of a run (see EstimateStart).
type StartEstimate struct {
	Replicas, GPUsPerReplica int32
	Models                   []string // allowed GPU models (empty: any)
	FreeNow                  int64    // free whole GPUs of allowed models at the end
	BestNode                 int32    // most free GPUs on one allowed node at the end
	NodesWithRoom            int      // replicas that fit on allowed nodes at the end
	FitsNow                  bool     // enough room by GPU count at the end
	AtU                      int64    // estimated earliest start, µs (valid when Possible && !FitsNow)
	After                    []string // running jobs whose estimated end frees the room
	Possible                 bool     // false: does not fit even on the empty cluster
}

// ExplainJob builds the explanation of job id from a run read with events.
// Pending intervals are charged to the last recorded wait reason; an interval
// with no reason since the job arrived (or was requeued) is NotExamined.
func ExplainJob(r *Run, id string) (*Explanation, error) {
	k := slices.IndexFunc(r.Jobs, func(j JobRow) bool { return j.ID == id })
	if k < 0 {
		return nil, fmt.Errorf("%s: no job %q in %s", r.Dir, id, JobsFile)
	}
	if len(r.Events) == 0 {
		return nil, fmt.Errorf("%s: %s is empty or missing (was the run made with --no-events?)", r.Dir, EventsFile)
	}
	x := &Explanation{Job: r.Jobs[k], Policy: r.Summary.Policy, EndU: int64(math.Round(r.Summary.EndS * 1e6))}
	pending := false
	reason := ""
	var since int64
	acc := map[string]int64{}
	var order []string
	charge := func(to int64) {
		if !pending || to <= since {
			return
		}
		why := reason
		if why == "" {
			why = NotExamined
		}
		if _, ok := acc[why]; !ok {
			order = append(order, why)
		}
		acc[why] += to - since
		x.PendingU += to - since
	}
	for _, e := range r.Events {
		if e.JobID != id {
			continue
		}
		x.EndU = max(x.EndU, e.TimeU)
		s := Step{TimeU: e.TimeU, Kind: e.Kind, Value: e.Value, Detail: e.Detail}
		switch e.Kind {
		case "arrive":
			pending, reason, since = true, "", e.TimeU
		case "wait":
			charge(e.TimeU)
			since = e.TimeU
			reason = e.Detail
			if reason == "" {
				reason = sim.Reason(e.Value).String()
			}
			s.Detail = reason
		case "start":
			charge(e.TimeU)
			pending = false
		case "preempt", "suspend":
			pending, reason, since = true, "", e.TimeU
		case "finish", "kill", "timeout":
			charge(e.TimeU)
			pending = false
		}
		x.Steps = append(x.Steps, s)
	}
	charge(x.EndU)
	for _, why := range order {
		x.Pending = append(x.Pending, ReasonTime{why, acc[why]})
	}
	return x, nil
}

// EstimateStart estimates when a job still pending at the end of a run could
// start: from the cluster's nodes, the run's jobs still running at the end
// (their nodes, GPUs per replica and estimated end = last start + estimate), and
// the job's spec. It counts whole GPUs only, per node (a replica needs
// GPUsPerReplica free GPUs on one node of an allowed model); it ignores CPU and
// memory, topology domains below the node, fractional sharing, other pending
// jobs and the policy's order, and it uses the policy's estimates, not true
// durations. lastStartU maps running job ids to their last start (µs).
func EstimateStart(nodes []sim.NodeSpec, jobs []JobRow, lastStartU map[string]int64, spec *sim.JobSpec, endU int64) *StartEstimate {
	est := &StartEstimate{Replicas: spec.Replicas, GPUsPerReplica: spec.GPUsPerReplica, Models: spec.GPUModels}
	idx := map[string]int{}
	free := make([]int32, len(nodes))
	allowed := make([]bool, len(nodes))
	for i, n := range nodes {
		idx[n.Name] = i
		free[i] = n.GPUs
		allowed[i] = spec.AllowsModel(n.GPUModel)
	}
	type rel struct {
		endU  int64
		id    string
		nodes []int
		gpus  int32
	}
	var rels []rel
	for i := range jobs {
		j := &jobs[i]
		if j.State != sim.StateRunning.String() || j.Nodes == "" {
			continue
		}
		start, ok := lastStartU[j.ID]
		if !ok {
			start = int64(math.Round(j.Start * 1e6))
		}
		r := rel{endU: max(start+int64(math.Round(j.Estimate*1e6)), endU), id: j.ID, gpus: j.GPUsPerRe}
		for _, name := range strings.Split(j.Nodes, "|") {
			if n, ok := idx[name]; ok {
				free[n] -= j.GPUsPerRe
				r.nodes = append(r.nodes, n)
			}
		}
		rels = append(rels, r)
	}
	slices.SortFunc(rels, func(a, b rel) int {
		if a.endU != b.endU {
			if a.endU < b.endU {
				return -1
			}
			return 1
		}
		return strings.Compare(a.id, b.id)
	})
	room := func() (replicas int, freeAll int64, best int32) {
		for i := range nodes {
			if !allowed[i] {
				continue
			}
			f := max(free[i], 0)
			freeAll += int64(f)
			best = max(best, f)
			if spec.GPUsPerReplica > 0 {
				replicas += int(f / spec.GPUsPerReplica)
			} else {
				replicas += int(spec.Replicas) // CPU-only: GPU count never blocks
			}
		}
		return
	}
	est.NodesWithRoom, est.FreeNow, est.BestNode = room()
	// Possible on the empty cluster?
	var capRep int
	for i, n := range nodes {
		if allowed[i] && spec.GPUsPerReplica > 0 {
			capRep += int(n.GPUs / spec.GPUsPerReplica)
		} else if allowed[i] {
			capRep += int(spec.Replicas)
		}
	}
	est.Possible = capRep >= int(spec.Replicas)
	if !est.Possible {
		return est
	}
	if est.NodesWithRoom >= int(spec.Replicas) {
		est.FitsNow = true
		est.AtU = endU
		return est
	}
	for _, r := range rels {
		for _, n := range r.nodes {
			free[n] += r.gpus
		}
		est.After = append(est.After, r.id)
		if got, _, _ := room(); got >= int(spec.Replicas) {
			est.AtU = r.endU
			return est
		}
	}
	est.Possible = false // unreachable when the nodes list is the run's cluster
	return est
}

// FormatDuration formats µs as a short human duration: "45s", "1.5s",
// "40m0s", "2h3m4s" (rounded to the millisecond).
func FormatDuration(u int64) string {
	if u < 0 {
		return "-" + FormatDuration(-u)
	}
	if u < 60e6 {
		return FormatNumber(math.Round(float64(u)/1e3)/1e3) + "s"
	}
	return (time.Duration(u) * time.Microsecond).Round(time.Millisecond).String()
}

// fmtT formats a virtual time: "t=90s" or "t=5400s (+1h30m0s)".
func fmtT(u int64) string {
	s := "t=" + FormatNumber(float64(u)/1e6) + "s"
	if u >= 60e6 {
		s += " (" + FormatDuration(u) + ")"
	}
	return s
}

// WriteText writes the explanation as text (fixed format, deterministic).
func (x *Explanation) WriteText(w io.Writer) error {
	var b strings.Builder
	j := &x.Job
	fmt.Fprintf(&b, "job %s (policy %s): %d x %d GPUs", j.ID, x.Policy, j.Replicas, j.GPUsPerRe)
	if j.GPUMilli > 0 && j.GPUMilli < 1000 {
		fmt.Fprintf(&b, " (%d milli-GPU each)", j.GPUMilli)
	}
	fmt.Fprintf(&b, ", class %s, queue %s, user %s, estimate %s, final state %s\n",
		j.Class, QueueName(j.Queue), UserName(j.User), FormatDuration(int64(math.Round(j.Estimate*1e6))), j.State)
	if j.Preempt > 0 || j.Wasted > 0 {
		fmt.Fprintf(&b, "preempted %d time(s); wasted %s of run time (checkpoint save/restore %s)\n", j.Preempt,
			FormatDuration(int64(math.Round(j.Wasted*1e6))), FormatDuration(int64(math.Round(j.Overhead*1e6))))
	}
	b.WriteString("\ntimeline:\n")
	for _, s := range x.Steps {
		fmt.Fprintf(&b, "  %-32s %-8s", fmtT(s.TimeU), s.Kind)
		switch s.Kind {
		case "arrive":
			b.WriteString(" submitted")
		case "wait":
			r, ok := sim.ParseReason(s.Detail)
			text := s.Detail
			if ok {
				text = r.Text()
			}
			fmt.Fprintf(&b, " %s: %s", s.Detail, text)
		case "reserve":
			fmt.Fprintf(&b, " backfill reservation: start reserved at %s", fmtT(s.Value))
		case "start":
			b.WriteString(" started")
		case "preempt":
			b.WriteString(" preempted and requeued")
		case "suspend":
			b.WriteString(" suspended (keeps its work and memory; resumes on the same nodes)")
		case "finish":
			b.WriteString(" completed")
		case "kill":
			b.WriteString(" killed by the policy")
		case "timeout":
			b.WriteString(" stopped at its walltime")
		}
		b.WriteByte('\n')
	}
	if j.Nodes != "" {
		fmt.Fprintf(&b, "  last placement: %s\n", strings.ReplaceAll(j.Nodes, "|", ", "))
	}
	if j.State == sim.StatePending.String() {
		fmt.Fprintf(&b, "  %-32s %-8s still pending when the run stopped\n", fmtT(x.EndU), "end")
	}
	if len(x.Steps) == 0 {
		fmt.Fprintf(&b, "  no events: submitted at %s, after the run stopped at %s\n",
			fmtT(int64(math.Round(j.Submit*1e6))), fmtT(x.EndU))
	}
	fmt.Fprintf(&b, "\ntime pending: %s", FormatDuration(x.PendingU))
	if len(x.Steps) == 0 {
		b.WriteString(" (not arrived)\n")
	} else if len(x.Pending) == 0 {
		b.WriteString(" (started when it arrived)\n")
	} else {
		b.WriteString(", by last recorded reason:\n")
		for _, p := range x.Pending {
			pct := 0.0
			if x.PendingU > 0 {
				pct = 100 * float64(p.U) / float64(x.PendingU)
			}
			text := notExaminedText
			if r, ok := sim.ParseReason(p.Reason); ok {
				text = r.Text()
			}
			fmt.Fprintf(&b, "  %-12s %12s %5.1f%%  %s\n", p.Reason, FormatDuration(p.U), pct, text)
		}
	}
	if e := x.Estimate; e != nil {
		b.WriteString("\nearliest start (estimate):\n")
		models := "any model"
		if len(e.Models) > 0 {
			models = "model " + strings.Join(e.Models, " or ")
		}
		fmt.Fprintf(&b, "  needs %d x %d GPUs on nodes of %s; at the end %d such GPUs are free (at most %d on one node, room for %d of %d replicas)\n",
			e.Replicas, e.GPUsPerReplica, models, e.FreeNow, e.BestNode, min(e.NodesWithRoom, int(e.Replicas)), e.Replicas)
		switch {
		case !e.Possible:
			b.WriteString("  it does not fit even on the empty cluster\n")
		case e.FitsNow:
			b.WriteString("  it fits by GPU count now: what holds it is the policy (order, reservations, quota) or CPU/memory/topology\n")
		default:
			verb := "ends"
			if len(e.After) > 1 {
				verb = "end"
			}
			fmt.Fprintf(&b, "  earliest by estimates at %s (+%s after the run end), once %s %s\n",
				fmtT(e.AtU), FormatDuration(e.AtU-x.EndU), listJobs(e.After), verb)
		}
		b.WriteString("  (estimate: running jobs end at last start + estimate; counts whole GPUs per node; ignores CPU/memory,\n   topology below the node, other pending jobs and the policy's order)\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func listJobs(ids []string) string {
	const maxList = 5
	if len(ids) <= maxList {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:maxList], ", "), len(ids)-maxList)
}

// LastStarts returns the last start time (µs) of every job in an event log.
func LastStarts(events []EventRow) map[string]int64 {
	out := map[string]int64{}
	for _, e := range events {
		if e.Kind == "start" {
			out[e.JobID] = e.TimeU
		}
	}
	return out
}
