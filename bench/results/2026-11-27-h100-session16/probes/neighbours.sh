#!/usr/bin/env bash
# Which other benchmark in the process slows our single-thread rows?
set -uo pipefail
[ -d build/gpu-bundle ] || tar xzf build/gpu-bundle.tgz -C build
b=build/gpu-bundle
pick() { grep median | grep -E "BM_ReentrantChain|BM_ChainBackward" | sed -E 's/.*(BM_[A-Za-z]+)\/.*ns_per_node=([0-9.k]+).*/\1 \2/' | tr '\n' ' '; }
for round in 1 2 3; do
  for f in 'BM_ReentrantChain|BM_ChainBackward' 'BM_ReentrantChain|BM_ChainBackward|BM_NodeTimingInterval' \
           'BM_ReentrantChain|BM_ChainBackward|BM_ChainForwardBackwardThreads' 'BM_ReentrantChain|BM_ChainBackward|BM_HostScaling' \
           'BM_ReentrantChain|BM_ChainBackward|BM_FanIn'; do
    echo "$round [$f]: $($b/run glassbox-bench-engine --benchmark_min_time=0.2 --benchmark_repetitions=4 --benchmark_report_aggregates_only=true --benchmark_enable_random_interleaving=true --benchmark_filter="$f" 2>&1 | pick)"
  done
done | tee $OUT/neighbours.txt
