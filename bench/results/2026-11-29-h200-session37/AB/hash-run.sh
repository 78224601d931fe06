#!/bin/bash
# Session 37: the dependency tables' slot choice (0: Fibonacci hash, 1: address order), A/B inside each process.
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD
end=$((SECONDS + ${1:-240}))
i=0
while [ $SECONDS -lt $end ]; do i=$((i+1))
  echo -n "$i:"
  ./hash-ab --benchmark_min_time=0.2 --benchmark_repetitions=${REPS:-6} --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true 2>/dev/null | grep _median | sort | awk '{n=$1; sub("/manual_time_median","",n); split($NF,a,"="); printf " %s=%s", n, a[2]}'
  echo
done
