#!/usr/bin/env bash
# fidelity-slurm.sh FIXTURE_DIR... — record what a real Slurm does with each
# fixture's jobs, as golden data for policies/slurm's fidelity tests
# (docs/fidelity.md).
#
# For each fixture directory (policies/slurm/testdata/fidelity/<name>/) it:
#   1. installs Slurm and munge from Debian if missing (idempotent);
#   2. starts, inside a fresh temporary directory, a private munged (own key
#      and socket), a slurmctld and one `slurmd -N <node>` per node of the
#      fixture's slurm.conf on loopback (own ports), each node with Gres=gpu:8
#      backed by empty fake device files; nothing is written outside that
#      directory;
#   2b. if the fixture's slurm.conf says
#      AccountingStorageType=accounting_storage/slurmdbd (fair share needs
#      the association usage slurmctld keeps with slurmdbd): installs
#      slurmdbd and mariadb-server from Debian if missing, starts a private
#      MariaDB (own --datadir, --socket, --port on loopback, created by
#      mariadb-install-db in the directory) and a private slurmdbd on it,
#      and runs `sacctmgr -i` with each line of the fixture's sacctmgr.txt
#      (cluster, accounts, users and their shares) before slurmctld starts;
#   3. runs the fixture's optional setup.sh (with SLURM_CONF, T0 and FIXTURE
#      set) to create reservations and the like;
#   4. submits the jobs of jobs.csv (gpusim's native trace) at T0 + submit_s
#      with `sbatch --wrap 'sleep duration_s'`: -N replicas, --gres=gpu:gpus,
#      -c cpu_milli/1000 (default 1), -t walltime_s/60 (whole minutes),
#      -p queue when set, -J id; each job runs one task per node. The jobs of
#      one second are submitted by concurrent sbatch calls (one after another
#      they would take about 0.1 s each); Slurm's job ids give their order.
#      (Submitting ahead with --begin is no good: a job whose begin time
#      passes waits for the next full main-scheduler pass, sched_interval.)
#   5. waits for the queue to drain and writes recorded.csv (one row per run of
#      each job, from jobcomp/filetxt; submit, start and end to the
#      millisecond from slurmctld's log, eligible in whole seconds; all
#      relative to T0) and
#      recorded.meta (Slurm version, T0, where T0 falls in the wall-clock
#      minute, when slurmctld started relative to T0), and from slurmctld's
#      log (SlurmctldDebug=debug2) the instants the replay uses:
#      bfcycles.csv, schedpasses.csv and releases.csv (slurm-bfplans.sh);
#   6. stops every daemon by its PID and removes the directory.
#
# Environment: KEEP=1 keeps the temporary directory (logs) for inspection;
# LOGCOPY=FILE copies slurmctld's log there; SLURMCTLD_DEBUG (default
# debug2: the main-scheduler passes are logged at debug, the epilog-complete
# messages at debug2) sets SlurmctldDebug;
# PORT_BASE (default 16800) moves slurmctld to PORT_BASE+17 and the nodes'
# ports from 17000 to PORT_BASE+1000, to run beside another Slurm.
set -euo pipefail
PORT_BASE=${PORT_BASE:-16800}

ensure_slurm() {
	if command -v slurmctld >/dev/null && command -v slurmd >/dev/null &&
		command -v sbatch >/dev/null && command -v munged >/dev/null; then
		return
	fi
	if [ "$(id -u)" != 0 ]; then
		echo "fidelity-slurm: Slurm is not installed and this is not root: apt-get install slurm-wlm munge" >&2
		exit 2
	fi
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y slurm-wlm munge
}

# ensure_slurmdbd installs Debian's slurmdbd (the same 22.05 release as
# slurmctld) and MariaDB if missing.
ensure_slurmdbd() {
	if command -v slurmdbd >/dev/null && command -v mariadbd >/dev/null &&
		command -v mariadb-install-db >/dev/null && command -v sacctmgr >/dev/null; then
		return
	fi
	if [ "$(id -u)" != 0 ]; then
		echo "fidelity-slurm: slurmdbd or MariaDB is not installed and this is not root: apt-get install slurmdbd mariadb-server" >&2
		exit 2
	fi
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y slurmdbd mariadb-server
}

# start_slurmdbd DIR: a private MariaDB and slurmdbd in DIR (files under
# DIR/mysql, DIR/run, DIR/log), their PID files appended to PIDFILES.
start_slurmdbd() {
	local D=$1
	ensure_slurmdbd
	mariadb-install-db --no-defaults --user=root --datadir="$D/mysql" \
		--auth-root-authentication-method=normal --skip-test-db >"$D/log/mariadb-install.log" 2>&1
	# in a subshell, so that the submission loop's `wait` does not wait for it
	(mariadbd --no-defaults --user=root --datadir="$D/mysql" \
		--socket="$D/run/mysql.sock" --port=$((PORT_BASE + 6)) --bind-address=127.0.0.1 \
		--pid-file="$D/run/mariadbd.pid" --log-error="$D/log/mariadbd.log" \
		--skip-name-resolve --innodb-buffer-pool-size=64M &)
	for _ in $(seq 100); do [ -f "$D/run/mariadbd.pid" ] && [ -S "$D/run/mysql.sock" ] && break; sleep 0.2; done
	[ -f "$D/run/mariadbd.pid" ] || { echo "fidelity-slurm: MariaDB did not start (see $D/log/mariadbd.log)" >&2; exit 1; }
	PIDFILES+=("$D/run/mariadbd.pid")
	{
		echo "AuthType=auth/munge"
		echo "AuthInfo=socket=$D/run/munge.socket"
		echo "DbdHost=localhost"
		echo "DbdAddr=127.0.0.1"
		echo "DbdPort=$((PORT_BASE + 19))"
		echo "SlurmUser=root"
		echo "LogFile=$D/log/slurmdbd.log"
		echo "PidFile=$D/run/slurmdbd.pid"
		echo "StorageType=accounting_storage/mysql"
		echo "StorageHost=127.0.0.1"
		echo "StoragePort=$((PORT_BASE + 6))"
		echo "StorageUser=root"
		echo "StorageLoc=gpusimfid_acct_db"
	} >"$D/etc/slurmdbd.conf"
	chmod 600 "$D/etc/slurmdbd.conf"
	slurmdbd # finds slurmdbd.conf next to $SLURM_CONF
	for _ in $(seq 50); do [ -f "$D/run/slurmdbd.pid" ] && break; sleep 0.2; done
	PIDFILES+=("$D/run/slurmdbd.pid")
	for _ in $(seq 100); do sacctmgr -n list cluster >/dev/null 2>&1 && break; sleep 0.2; done
	sacctmgr -n list cluster >/dev/null || { echo "fidelity-slurm: slurmdbd did not answer (see $D/log/slurmdbd.log)" >&2; exit 1; }
}

now() { date +%s.%N; }

# epoch TIME: a Slurm timestamp (2026-11-26T18:42:47, local time) as Unix seconds.
epoch() {
	case "$1" in
	Unknown | None | "") echo "" ;;
	*) date -d "$1" +%s ;;
	esac
}

record() {
	local fix=$1
	fix=$(cd "$fix" && pwd)
	for f in slurm.conf jobs.csv; do
		[ -f "$fix/$f" ] || { echo "fidelity-slurm: $fix/$f: missing" >&2; exit 2; }
	done
	local D
	D=$(mktemp -d /tmp/gpusim-slurmfid.XXXXXX)
	PIDFILES=()
	WORKDIR=$D
	trap cleanup EXIT
	trap 'cleanup; trap - EXIT; exit 1' INT TERM
	mkdir -p "$D"/{etc,spool,log,run,state,dev,jobs,mysql}
	local dbd=
	if grep -q '^AccountingStorageType=accounting_storage/slurmdbd' "$fix/slurm.conf"; then dbd=1; fi
	for i in 0 1 2 3 4 5 6 7; do : >"$D/dev/nvidia$i"; done
	mungekey -c -k "$D/etc/munge.key" -b 1024 -f
	chmod 600 "$D/etc/munge.key"
	munged --key-file="$D/etc/munge.key" --socket="$D/run/munge.socket" \
		--pid-file="$D/run/munged.pid" --log-file="$D/log/munged.log" \
		--seed-file="$D/run/munge.seed" -f
	PIDFILES+=("$D/run/munged.pid")
	cat >"$D/etc/slurm.conf" <<EOF
ClusterName=gpusimfid
SlurmctldHost=localhost
SlurmctldPort=$((PORT_BASE + 17))
SlurmdPort=$((PORT_BASE + 18))
AuthType=auth/munge
AuthInfo=socket=$D/run/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/%n
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/run/slurmd-%n.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmctldDebug=${SLURMCTLD_DEBUG:-debug2}
DebugFlags=Backfill
SlurmdLogFile=$D/log/slurmd-%n.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
$(if [ -n "$dbd" ]; then
		echo "AccountingStorageHost=localhost"
		echo "AccountingStoragePort=$((PORT_BASE + 19))"
		# the munge socket of the connections to slurmdbd
		echo "AccountingStoragePass=$D/run/munge.socket"
	else
		echo "AccountingStorageType=accounting_storage/none"
	fi)
JobCompType=jobcomp/filetxt
JobCompLoc=$D/log/jobcomp.txt
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
MinJobAge=3600
InactiveLimit=0
KillWait=1
Waittime=0
EOF
	# node ports: the fixture's 17000-based ports moved to PORT_BASE + 1000
	sed -e "s#@DIR@#$D#g" -e "s#Port=\[17\([0-9]*\)-17\([0-9]*\)\]#Port=[$((PORT_BASE / 1000 + 1))\1-$((PORT_BASE / 1000 + 1))\2]#" "$fix/slurm.conf" >>"$D/etc/slurm.conf"
	echo "Name=gpu File=$D/dev/nvidia[0-7]" >"$D/etc/gres.conf"
	export SLURM_CONF=$D/etc/slurm.conf
	if [ -n "$dbd" ]; then
		start_slurmdbd "$D"
		[ -f "$fix/sacctmgr.txt" ] || { echo "fidelity-slurm: $fix/sacctmgr.txt: missing (slurmdbd fixture)" >&2; exit 2; }
		local cmd
		while read -r cmd; do
			case "$cmd" in '#'* | '') continue ;; esac
			# shellcheck disable=SC2086 # one sacctmgr command line per line
			sacctmgr -i $cmd >>"$D/log/sacctmgr.log" 2>&1 ||
				{ echo "fidelity-slurm: sacctmgr $cmd failed:" >&2; cat "$D/log/sacctmgr.log" >&2; exit 1; }
		done <"$fix/sacctmgr.txt"
	fi
	local ctld_start
	ctld_start=$(now)
	slurmctld -f "$SLURM_CONF" -i
	PIDFILES+=("$D/run/slurmctld.pid")
	for _ in $(seq 50); do scontrol ping >/dev/null 2>&1 && break; sleep 0.2; done
	scontrol ping >/dev/null 2>&1 || { echo "fidelity-slurm: slurmctld did not start:" >&2; tail -5 "$D/log/slurmctld.log" >&2; exit 1; }
	local nodes
	nodes=$(scontrol show hostnames "$(sinfo -h -N -o %N | sort -u | paste -sd,)")
	for n in $nodes; do
		slurmd -f "$SLURM_CONF" -N "$n"
		PIDFILES+=("$D/run/slurmd-$n.pid")
	done
	local nn
	nn=$(echo "$nodes" | wc -w)
	for _ in $(seq 150); do
		[ "$(sinfo -h -N -t idle -o %N | sort -u | wc -l)" = "$nn" ] && break
		sleep 0.2
	done
	[ "$(sinfo -h -N -t idle -o %N | sort -u | wc -l)" = "$nn" ] || {
		echo "fidelity-slurm: nodes did not come up:" >&2; sinfo -N >&2; exit 1; }
	# T0: two whole seconds from now, so that submit offsets are exact seconds.
	local T0
	T0=$(($(date +%s) + 2))
	export T0 FIXTURE=$fix
	if [ -f "$fix/setup.sh" ]; then bash "$fix/setup.sh"; fi
	# jobs.csv columns by header name.
	awk -F, 'NR==1{for(i=1;i<=NF;i++)c[$i]=i; next}
		NF>1{cpu=(c["cpu_milli"]&&$c["cpu_milli"]!="")?$c["cpu_milli"]/1000:1;
		rep=(c["replicas"]&&$c["replicas"]!="")?$c["replicas"]:1;
		wt=(c["walltime_s"]&&$c["walltime_s"]!="")?$c["walltime_s"]/60:0;
		q=c["queue"]?$c["queue"]:""; a=c["team"]?$c["team"]:"";
		print $c["id"], $c["submit_s"], rep, $c["gpus"], cpu, wt, $c["duration_s"], (q==""?"-":q), (a==""?"-":a)}' \
		"$fix/jobs.csv" >"$D/jobs/list"
	local cur=-1
	while read -r id sub rep gpus cpu wt dur q acct; do
		if [ "${sub%.*}" != "$cur" ]; then
			wait # the previous second's sbatch calls
			cur=${sub%.*}
			local wait
			wait=$(echo "$T0 + $cur - $(now)" | bc -l)
			case "$wait" in -* | 0) ;; *) sleep "$wait" ;; esac
		fi
		local args=(--parsable -J "$id" -N "$rep" --ntasks-per-node=1 -c "$cpu" -o /dev/null -D "$D/jobs")
		[ "$gpus" != 0 ] && args+=(--gres="gpu:$gpus")
		[ "$wt" != 0 ] && args+=(-t "$wt")
		[ "$q" != - ] && args+=(-p "$q")
		[ "$acct" != - ] && args+=(-A "$acct")
		sbatch "${args[@]}" --wrap "sleep $dur" >/dev/null &
	done <"$D/jobs/list"
	wait
	# Drain: every job finished.
	for _ in $(seq 7200); do
		[ -z "$(squeue -h -o %i)" ] && break
		sleep 1
	done
	[ -z "$(squeue -h -o %i)" ] || { echo "fidelity-slurm: queue did not drain" >&2; exit 1; }
	sleep 1
	# Millisecond times from slurmctld's log: submissions, starts (main
	# scheduler "sched: Allocate", backfill "_start_job: Started") and
	# completions ("_job_complete: ... done", or job_time_limit's "Time limit
	# exhausted" for a run killed at its limit), one line per event and job,
	# as "kind jobid seconds-from-T0".
	grep -E '_slurm_rpc_submit_batch_job: JobId=|sched: Allocate JobId=|_start_job: Started JobId=|_job_complete: JobId=[0-9]+ done|Time limit exhausted for JobId=' \
		"$D/log/slurmctld.log" | while read -r ts rest; do
		local kind jid t
		case "$rest" in
		*_slurm_rpc_submit_batch_job*) kind=submit ;;
		*_job_complete* | *"Time limit exhausted"*) kind=end ;;
		*) kind=start ;;
		esac
		jid=$(sed -n 's/.*JobId=\([0-9]*\).*/\1/p' <<<"$rest")
		t=$(date -d "$(tr -d '[]' <<<"$ts")" +%s.%3N)
		echo "$kind $jid $(echo "$t - $T0" | bc -l)"
	done >"$D/log/events"
	# msec KIND JOBID K DEFAULT: the K-th (1-based) KIND time of JOBID if it
	# agrees with jobcomp's whole second DEFAULT, else DEFAULT.
	msec() {
		awk -v k="$1" -v j="$2" -v n="$3" -v d="$4" '$1==k && $2==j {c++; if (c==n && $3-d > -1.5 && $3-d < 1.5) {printf "%.3f\n", $3; f=1; exit}} END {if (!f) print d}' "$D/log/events"
	}
	{
		echo "id,jobid,state,submit_s,eligible_s,start_s,end_s,nodes"
		local line
		while read -r line; do
			local jid name st sub el startt endt nl
			jid=$(sed -n 's/.*JobId=\([0-9]*\) .*/\1/p' <<<"$line")
			name=$(sed -n 's/.* Name=\([^ ]*\) .*/\1/p' <<<"$line")
			st=$(sed -n 's/.* JobState=\([^ ]*\) .*/\1/p' <<<"$line")
			sub=$(epoch "$(sed -n 's/.* SubmitTime=\([^ ]*\) .*/\1/p' <<<"$line")")
			el=$(epoch "$(sed -n 's/.* EligibleTime=\([^ ]*\) .*/\1/p' <<<"$line")")
			startt=$(epoch "$(sed -n 's/.* StartTime=\([^ ]*\) .*/\1/p' <<<"$line")")
			endt=$(epoch "$(sed -n 's/.* EndTime=\([^ ]*\) .*/\1/p' <<<"$line")")
			nl=$(sed -n 's/.* NodeList=\([^ ]*\) .*/\1/p' <<<"$line")
			nl=$(scontrol show hostnames "$nl" 2>/dev/null | paste -sd'|')
			# the run's index among this job's runs (jobcomp lists them in order)
			local k
			k=$(($(grep -c "^$jid\$" "$D/log/seen" 2>/dev/null || true) + 1))
			echo "$jid" >>"$D/log/seen"
			echo "$name,$jid,$st,$(msec submit "$jid" 1 $((sub - T0))),$((el - T0)),$(msec start "$jid" "$k" $((startt - T0))),$(msec end "$jid" "$k" $((endt - T0))),$nl"
		done <"$D/log/jobcomp.txt"
	} >"$fix/recorded.csv.tmp"
	mv "$fix/recorded.csv.tmp" "$fix/recorded.csv"
	# What the replay on recorded instants needs, for the whole run: every
	# backfill cycle start (bfcycles.csv), every main-scheduler pass
	# (schedpasses.csv) and when each node of each run was released
	# (releases.csv: slurmd's epilog-complete message). BFPLANS=1 (or an
	# existing bfplans.csv) also writes backfill's plans, from the
	# _dump_job_sched lines, for cycles before BFPLANS_UNTIL seconds (all if
	# unset).
	local bfp
	bfp="$(dirname "$0")/slurm-bfplans.sh"
	"$bfp" --cycles "$D/log/slurmctld.log" "$T0" >"$fix/bfcycles.csv"
	"$bfp" --passes "$D/log/slurmctld.log" "$T0" >"$fix/schedpasses.csv"
	"$bfp" --releases "$D/log/slurmctld.log" "$T0" >"$fix/releases.csv"
	if [ -n "${BFPLANS:-}" ] || [ -f "$fix/bfplans.csv" ]; then
		"$bfp" "$D/log/slurmctld.log" "$T0" |
			awk -F, -v u="${BFPLANS_UNTIL:-}" 'NR == 1 || u == "" || $1 < u' >"$fix/bfplans.csv"
	fi
	if [ -n "${LOGCOPY:-}" ]; then cp "$D/log/slurmctld.log" "$LOGCOPY"; fi
	local ctld_rel
	ctld_rel=$(echo "$ctld_start - $T0" | bc -l)
	{
		echo "slurm_version: $(slurmctld -V | awk '{print $2}')"
		echo "recorded_utc: $(date -u -d "@$T0" +%Y-%m-%dT%H:%M:%SZ)"
		echo "t0_unix: $T0"
		echo "t0_second_of_minute: $((T0 % 60))"
		printf 'slurmctld_start_s: %.1f\n' "$ctld_rel"
		# priority/multifactor's decay thread logs its start (the
		# PriorityCalcPeriod passes are timed from it; only with slurmdbd)
		local dl
		dl=$(grep -m1 '_read_last_decay_ran' "$D/log/slurmctld.log" | cut -d' ' -f1 | tr -d '[]' || true)
		if [ -n "$dl" ] && [ -n "$dbd" ]; then
			printf 'decay_start_s: %.3f\n' "$(echo "$(date -d "$dl" +%s.%3N) - $T0" | bc -l)"
		fi
	} >"$fix/recorded.meta"
	cleanup
	trap - EXIT
	echo "fidelity-slurm: $fix: $(($(wc -l <"$fix/recorded.csv") - 1)) runs recorded"
}

# cleanup cancels any job still there (an aborted run), stops every daemon
# this script started, by PID, and removes its directory.
cleanup() {
	local i
	if [ -n "${SLURM_CONF:-}" ] && [ -n "$(squeue -h -o %i 2>/dev/null)" ]; then
		scancel --quiet $(squeue -h -o %i) 2>/dev/null || true
		sleep 3
	fi
	for ((i = ${#PIDFILES[@]} - 1; i >= 0; i--)); do
		local f=${PIDFILES[$i]}
		[ -f "$f" ] || continue
		local pid
		pid=$(cat "$f")
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 50); do
			# gone, or a zombie waiting for its parent
			[ "$(ps -o stat= -p "$pid" 2>/dev/null | cut -c1)" = "" ] && break
			[ "$(ps -o stat= -p "$pid" 2>/dev/null | cut -c1)" = Z ] && break
			sleep 0.1
		done
		kill -9 "$pid" 2>/dev/null || true
	done
	PIDFILES=()
	if [ -n "${WORKDIR:-}" ] && [ -z "${KEEP:-}" ]; then rm -rf "$WORKDIR"; fi
	if [ -n "${KEEP:-}" ]; then echo "fidelity-slurm: kept $WORKDIR" >&2; fi
	WORKDIR=
}

[ $# -ge 1 ] || { echo "usage: $0 FIXTURE_DIR..." >&2; exit 2; }
ensure_slurm
for fix in "$@"; do record "$fix"; done
