#!/bin/bash
# The script the 2026-11-26 measurement ran on the GPU machine, from the repository
# root, with bin/gpusim built here (go build -o bin/gpusim ./cmd/gpusim) and $OUT an
# output folder; it tars each step's results into $OUT.
B=bin/gpusim
W=/tmp/w; mkdir -p $W
nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit,clocks.max.sm --format=csv
which nvidia-cuda-mps-control
( $B calibrate discover --template-out $W/node.yaml > $W/discover.txt 2>&1; echo discover rc=$?
  $B calibrate discover --json > $W/discover.json 2>>$W/discover.txt
  $B calibrate telemetry -o $W/telemetry-idle.parquet --duration 5s --interval 1s; echo telemetry rc=$? )
cat $W/discover.txt | head -40
tar czf $OUT/discover.tgz -C $W .
timeout 210 $B calibrate run calibrate/testdata/h100-measured/plan-timeslice.yaml -o $W/ts > $W/ts.log 2>&1; echo ts rc=$?
grep -v '^cell' $W/ts.log | tail -40
tar czf $OUT/ts.tgz -C $W ts ts.log
timeout 150 $B calibrate run calibrate/testdata/h100-measured/plan-mps.yaml -o $W/mps > $W/mps.log 2>&1; echo mps rc=$?
tail -25 $W/mps.log
tar czf $OUT/mps.tgz -C $W mps mps.log
ls -la $OUT
