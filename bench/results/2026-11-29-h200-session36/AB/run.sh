#!/bin/bash
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD
flags=(--benchmark_min_time=0.2 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true)
for i in $(seq 1 ${1:-8}); do for b in base pf; do
  echo -n "$i $b:"
  ./eng-$b "${flags[@]}" --benchmark_filter="${2:-.}" 2>/dev/null | grep _median | awk '{n=$1; sub("/manual_time_median","",n); sub("/real_time","",n); sub("_median","",n); printf " %s=%s", n, $NF}'
  echo
done; done
