#!/usr/bin/env bash
# slurm-bfplans.sh SLURMCTLD_LOG T0 — the backfill plans of a recording as CSV
# (docs/fidelity.md): one row per reservation that sched/backfill made in a
# cycle, from slurmctld's `_dump_job_sched` lines (DebugFlags=Backfill):
# cycle_s (when the line was logged), jobid, start_s (the will-run start),
# end_s (the reservation's end, rounded down to bf_resolution in 22.05) and
# nodes ('|'-separated), all in seconds from T0 (Unix time of t=0). Log times
# are the local time of the recording machine (TZ as when it was recorded).
#
# slurm-bfplans.sh --cycles SLURMCTLD_LOG T0 writes the start of every
# backfill cycle instead (cycle_s): when _attempt_backfill has built its job
# queue, under slurmctld's locks ("N jobs to backfill", SlurmctldDebug=debug,
# or "no jobs to backfill", DebugFlags=Backfill). Its "beginning" line comes
# before it takes the locks: a job submitted a few ms after that line can
# still be in the cycle's queue.
#
# slurm-bfplans.sh --passes SLURMCTLD_LOG T0 writes every main-scheduler pass
# (pass_s, kind): job_scheduler.c schedule()'s "sched: Running job scheduler
# for default depth." / "full queue." (SlurmctldDebug=debug); kind is
# "default" or "full".
#
# slurm-bfplans.sh --releases SLURMCTLD_LOG T0 writes when each node of each
# run was released (jobid, run (1-based), node, end_s: the run's end, and
# release_s; SlurmctldDebug=debug2). A node stays COMPLETING after the end
# until job_epilog_complete(): for a job that ended by itself (no steps left,
# no Epilog) slurmd answers the terminate request with
# ESLURMD_KILL_JOB_ALREADY_COMPLETE and agent.c _thread_per_group_rpc calls it
# at once, logged just after as "node_did_resp nK"; for a killed job
# (time limit, preemption) slurmd sends MESSAGE_EPILOG_COMPLETE, logged by
# proc_req.c _slurm_rpc_epilog_complete ("JobId=N Node=nK").
set -euo pipefail
cycles=
case "${1:-}" in --cycles | --passes | --releases) cycles=${1#--}; shift ;; esac
[ $# -eq 2 ] || { echo "usage: $0 [--cycles|--passes|--releases] SLURMCTLD_LOG T0" >&2; exit 2; }
case "$cycles" in
cycles) echo "cycle_s" ;;
passes) echo "pass_s,kind" ;;
releases) echo "jobid,run,node,end_s,release_s" ;;
*) echo "cycle_s,jobid,start_s,end_s,nodes" ;;
esac
gawk -v t0="$2" -v cycles="$cycles" '
# secs("2026-11-26T21:20:56.727"): Unix time (local time zone)
function secs(s,   d, f) {
	f = 0
	if (match(s, /\.[0-9]+$/)) { f = substr(s, RSTART) + 0; s = substr(s, 1, RSTART - 1) }
	gsub(/[-T:]/, " ", s)
	return mktime(s) + f
}
# hosts("n[0-1,6-7]") = "n0|n1|n6|n7"
function hosts(x,   p, inner, parts, k, r, a, b, i, out) {
	if (x !~ /\[/) return x
	p = substr(x, 1, index(x, "[") - 1)
	inner = substr(x, index(x, "[") + 1); sub(/\]$/, "", inner)
	split(inner, parts, ",")
	out = ""
	for (k = 1; k in parts; k++) {
		if (split(parts[k], r, "-") == 2) { a = r[1] + 0; b = r[2] + 0 } else { a = b = parts[k] + 0 }
		for (i = a; i <= b; i++) out = out (out == "" ? "" : "|") p i
	}
	return out
}
cycles == "passes" && /sched: Running job scheduler for/ {
	c = $1; gsub(/[][]/, "", c)
	printf "%.3f,%s\n", secs(c) - t0, ($0 ~ /full queue/ ? "full" : "default")
}
# releases: the nodes of a run (from its start line) become pending at its end;
# each pending node is released by its epilog-complete message or else by the
# first node_did_resp after the end (the answer to the terminate request), and is
# written out when the node next starts a job, or at the end of the log.
function rel_start(jid, nl,   hs, k, h) {
	split(hosts(nl), hs, "|")
	nodes[jid] = hosts(nl)
	for (k = 1; k in hs; k++) rel_close(hs[k])
}
function rel_end(jid, t,   hs, k, h) {
	runs[jid]++
	split(nodes[jid], hs, "|")
	for (k = 1; k in hs; k++) {
		h = hs[k]
		if (h == "") continue
		pend[h] = pend[h] " " jid
		key = jid SUBSEP h
		endt[key] = t; run[key] = runs[jid]; ep[key] = ""; dr[key] = ""
	}
}
function rel_close(h,   ps, k, key) {
	split(pend[h], ps, " ")
	for (k = 1; k in ps; k++) {
		if (ps[k] == "") continue
		key = ps[k] SUBSEP h
		r = ep[key] != "" ? ep[key] : dr[key]
		if (r != "") printf "%s,%d,%s,%.3f,%.3f\n", ps[k], run[key], h, endt[key] - t0, r - t0
	}
	pend[h] = ""
}
cycles == "releases" {
	c = $1; gsub(/[][]/, "", c); t = secs(c)
}
cycles == "releases" && /_start_job: Started JobId=[0-9]+ in batch on / {
	match($0, /JobId=[0-9]+/); jid = substr($0, RSTART + 6, RLENGTH - 6)
	rel_start(jid, $NF)
}
cycles == "releases" && /sched: Allocate JobId=[0-9]+ NodeList=/ {
	match($0, /JobId=[0-9]+/); jid = substr($0, RSTART + 6, RLENGTH - 6)
	match($0, /NodeList=[^ ]+/); rel_start(jid, substr($0, RSTART + 9, RLENGTH - 9))
}
cycles == "releases" && (/_job_complete: JobId=[0-9]+ done/ || /Time limit exhausted for JobId=[0-9]+/ || /preempted JobId=[0-9]+ has been requeued/ || /preempted JobId=[0-9]+ has been killed/) {
	match($0, /JobId=[0-9]+/); jid = substr($0, RSTART + 6, RLENGTH - 6)
	if (!(jid in ended) || ended[jid] != runs[jid]) { rel_end(jid, t); ended[jid] = runs[jid] }
}
cycles == "releases" && /_slurm_rpc_epilog_complete: JobId=[0-9]+ Node=/ {
	match($0, /JobId=[0-9]+/); jid = substr($0, RSTART + 6, RLENGTH - 6)
	match($0, /Node=[^ ]+/); h = substr($0, RSTART + 5, RLENGTH - 5)
	key = jid SUBSEP h
	if ((key in ep) && ep[key] == "") ep[key] = t
}
cycles == "releases" && /node_did_resp [^ ]+$/ {
	h = $NF
	n = split(pend[h], ps, " ")
	for (k = 1; k <= n; k++) if (ps[k] != "" && dr[ps[k] SUBSEP h] == "") dr[ps[k] SUBSEP h] = t
}
END { if (cycles == "releases") for (h in pend) rel_close(h) }
cycles == "cycles" && /_attempt_backfill: ([0-9]+|no) jobs to backfill/ {
	c = $1; gsub(/[][]/, "", c)
	printf "%.3f\n", secs(c) - t0
}
cycles == "" && /_dump_job_sched: JobId=[0-9]+ to start at/ {
	c = $1; gsub(/[][]/, "", c)
	match($0, /JobId=[0-9]+/); jid = substr($0, RSTART + 6, RLENGTH - 6)
	match($0, /to start at [^,]+/); st = substr($0, RSTART + 12, RLENGTH - 12)
	match($0, /end at [^ ]+/); en = substr($0, RSTART + 7, RLENGTH - 7)
	match($0, /on nodes [^ ]+/); nl = substr($0, RSTART + 9, RLENGTH - 9)
	printf "%.3f,%s,%d,%d,%s\n", secs(c) - t0, jid, secs(st) - t0, secs(en) - t0, hosts(nl)
}' "$1"
