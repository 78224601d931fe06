#!/usr/bin/env bash
# Session 17 probe: old (cb266d5-era) and new sim benchmarks alternating on the H100 host.
set -uo pipefail
[ -d build/gpu-bundle ] || tar xzf build/gpu-bundle.tgz -C build
export LD_LIBRARY_PATH=$PWD/build/gpu-bundle/lib
A=build/devscripts/ab
lscpu | grep -E "Model name|MHz" > $OUT/cpu.txt
{
for r in 1 2 3 4; do
  for v in old new; do
    echo "-- r$r ha-$v"; $A/ha-$v --benchmark_filter='BM_CachedPair/real_time/threads:1$' --benchmark_min_time=0.3 --benchmark_repetitions=5 --benchmark_report_aggregates_only=true 2>&1 | grep median
    echo "-- r$r scrape-$v"; $A/scrape-$v --benchmark_filter=Scrape --benchmark_min_time=0.3 --benchmark_repetitions=5 --benchmark_report_aggregates_only=true 2>&1 | grep median
  done
done
for r in 1 2 3; do
  for v in old new; do
    echo "-- r$r engine-$v"; $A/engine-$v --benchmark_filter='BM_ReentrantChain|BM_ChainBackward|BM_FanIn' --benchmark_min_time=0.5 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true 2>&1 | grep median
  done
done
} > $OUT/ab.txt 2>&1
{
for r in 1 2 3; do build/gpu-bundle/run glassbox-compare-host-allocator host_alloc_cached_pair 2>&1; done
} > $OUT/compare-cached.txt 2>&1
cat $OUT/ab.txt $OUT/compare-cached.txt | grep -v "^{" | head -5
