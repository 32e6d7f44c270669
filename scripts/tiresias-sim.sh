#!/usr/bin/env bash
# Regenerates the golden fixtures of policies/tiresias/testdata/simulator/ by
# running Tiresias's own simulator (SymbioticLab/Tiresias, simulator/run_sim.py;
# Python 2.7, numpy) on the traces and clusters TestAgainstTiresiasSimulator
# compares gpusim with (docs/tiresias.md "Against the Tiresias simulator").
#
#   scripts/tiresias-sim.sh /path/to/Tiresias/simulator [python2.7]
#
# The simulator and its 60_job.csv are not in this repository (the Tiresias
# repository has no licence); only their outputs are: per job its id, GPUs,
# first start, end, preemption and promotion counts, as the simulator's job.csv
# logs them. Placement is --scheme=count (resource counting, as dlas_sim_jobs
# always does): --scheme=yarn leaks node memory on every sjf pass
# (_Cluster.empty_infra does not reset _Node.free_mem) and stops with "This
# cluster is not large enough" after 49 of the 60 jobs on n32g4, 10 on n4g4.
set -euo pipefail
sim=${1:?usage: tiresias-sim.sh TIRESIAS_SIMULATOR_DIR [PYTHON2]}
py=${2:-python2.7}
here=$(cd "$(dirname "$0")/.." && pwd)
out=$here/policies/tiresias/testdata/simulator
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Cluster specs (the simulator's format; n32g4 is its own n32g4.csv).
printf 'num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n1,32,4,40,256\n' >"$tmp/n32g4.csv"
printf 'num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n1,4,4,40,256\n' >"$tmp/n4g4.csv"
cp "$out/synthetic_job.csv" "$tmp/synthetic_job.csv"
cp "$sim/60_job.csv" "$tmp/60_job.csv"

run() { # trace cluster schedule
  local log=$tmp/log-$1-$2-$3
  (cd "$sim" && "$py" run_sim.py --cluster_spec="$tmp/$2.csv" --scheme=count \
    --trace_file="$tmp/$1_job.csv" --schedule="$3" --log_path="$log" >/dev/null)
  # job.csv (count scheme): time,job_id,num_gpu,submit_time,start_time,end_time,
  # executed_time,JCT,duration,pending_time,preempt,resume,promote
  {
    echo "job_id,start_time,end_time,preempt,promote"
    tail -n +2 "$log/job.csv" | tr -d '\r' | awk -F, '{print $2","$5","$6","$11","$13}' | sort -t, -k1,1n
  } >"$out/$1-$2-$3.csv"
  echo "$out/$1-$2-$3.csv: $(($(wc -l <"$out/$1-$2-$3.csv") - 1)) jobs"
}
for c in n32g4 n4g4; do
  for s in sjf dlas-gpu; do run 60 "$c" "$s"; done
done
for s in sjf dlas-gpu dlas-gpu-2; do run synthetic n4g4 "$s"; done
