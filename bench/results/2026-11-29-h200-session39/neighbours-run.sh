#!/usr/bin/env bash
# Session 39's probe on the GPU host (neighbours.cpp): glassbox's one-thread
# forward + backward pinned to vCPU 3, alone and with seven neighbour threads
# pinned to vCPUs 0-2 and 4-7 (the rest of the vCPUs an 8-thread run would
# use), in registers or in memory; then the 8-thread run itself on vCPUs 0-7
# (its rate is all eight threads'); the four modes alternate, ROUNDS (default
# 4) rounds, four repetitions a process. Run from the repository root with
# the bundle unpacked.
set -uo pipefail
dir=$(dirname "$0")
g++ -O2 -std=c++20 -pthread "$dir/neighbours.cpp" -o build/neighbours || exit 1
flags=(--benchmark_min_time=0.3 --benchmark_repetitions=4)
one='BM_ChainForwardBackwardThreads/1000/.*threads:1$'
eight='BM_ChainForwardBackwardThreads/1000/.*threads:8$'
for round in $(seq 1 "${ROUNDS:-4}"); do
  for mode in alone reg mem eight; do
    case $mode in
      reg | mem) taskset -c 0-2,4-7 build/neighbours $mode 7 8 >/dev/null & sleep 0.2 ;;
    esac
    pin=(taskset -c 3) filter=$one
    [ $mode = eight ] && pin=(taskset -c 0-7) filter=$eight
    rates=$("${pin[@]}" build/gpu-bundle/run glassbox-bench-engine "${flags[@]}" --benchmark_filter="$filter" 2>/dev/null |
      sed -n 's/.*threads:[18] .*items_per_second=\([0-9.]*\)M\/s.*/\1/p' | tr '\n' ' ')
    echo "$round $mode M nodes/s: $rates"
    wait
  done
done
