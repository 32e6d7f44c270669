#!/bin/bash
# Run the example sweep as a Slurm job array: one array task per shard.
#
# Slurm sets SLURM_ARRAY_TASK_ID (0..N-1 with --array=0-N-1) and
# SLURM_ARRAY_TASK_COUNT in every task; each task runs one shard and writes its
# partial table under results/. Submit, then merge when the array is done:
#
#   sbatch examples/sweep/slurm-array.sh
#   # or chain the merge:
#   jid=$(sbatch --parsable examples/sweep/slurm-array.sh)
#   sbatch --dependency=afterok:$jid --wrap \
#       'gpusim merge results/sweep-example/shard-* -o results/sweep-example/merged'
#
# The simulator is CPU-only: no GPUs (--gres) are needed. gpusim must be on PATH
# (go install github.com/gpusim/gpusim/cmd/gpusim@latest).
#SBATCH --job-name=gpusim-sweep
#SBATCH --array=0-2
#SBATCH --cpus-per-task=2
#SBATCH --mem=4G
#SBATCH --time=00:30:00
#SBATCH --output=results/slurm-%A_%a.out
set -euo pipefail

SWEEP=${SWEEP:-examples/sweep/sweep.yaml}
SHARDS=${SLURM_ARRAY_TASK_COUNT:-3}
OUT=results/sweep-example/shard-${SLURM_ARRAY_TASK_ID}

mkdir -p results
exec gpusim sweep "$SWEEP" --shard "${SLURM_ARRAY_TASK_ID}/${SHARDS}" \
    --parallel "${SLURM_CPUS_PER_TASK:-1}" -o "$OUT" --quiet
