#!/usr/bin/env bash
# Session 38's probe on the GPU host: is the one-thread forward + backward
# rate a property of the process (its address layout: ASLR places the heap,
# stacks and libraries anew in each) or of the moment (neighbours on the
# host)? Processes pinned to one vCPU, alternating with ASLR on and off
# (setarch -R: every process the same layout), four repetitions in each.
# Run from the repository root with the bundle unpacked.
set -uo pipefail
flags=(--benchmark_filter='BM_ChainForwardBackwardThreads/1000/.*threads:1$' --benchmark_min_time=0.3
  --benchmark_repetitions=4)
for process in $(seq 1 "${1:-8}"); do
  for mode in aslr fixed; do
    pre=(taskset -c 3)
    [ $mode = fixed ] && pre+=(setarch "$(uname -m)" -R)
    rates=$("${pre[@]}" build/gpu-bundle/run glassbox-bench-engine "${flags[@]}" 2>/dev/null |
      sed -n 's/.*threads:1 .*items_per_second=\([0-9.]*\)M\/s.*/\1/p' | tr '\n' ' ')
    echo "$process $mode M nodes/s: $rates"
  done
done
