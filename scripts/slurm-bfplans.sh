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
# backfill cycle instead (cycle_s, from "_attempt_backfill: beginning").
set -euo pipefail
cycles=
if [ "${1:-}" = --cycles ]; then cycles=1; shift; fi
[ $# -eq 2 ] || { echo "usage: $0 [--cycles] SLURMCTLD_LOG T0" >&2; exit 2; }
if [ -n "$cycles" ]; then echo "cycle_s"; else echo "cycle_s,jobid,start_s,end_s,nodes"; fi
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
cycles != "" && /_attempt_backfill: beginning/ {
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
