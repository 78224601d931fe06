#!/usr/bin/env bash
# Session 17 probe 2: cached pair, before (cb266d5), frameless+TLS descriptors, and with the slot's top kept apart.
set -uo pipefail
[ -d build/gpu-bundle ] || tar xzf build/gpu-bundle.tgz -C build
export LD_LIBRARY_PATH=$PWD/build/gpu-bundle/lib
A=build/devscripts/ab
{
for r in 1 2 3 4 5; do
  for v in old final top2; do
    echo "-- r$r ha-$v"; $A/ha-$v --benchmark_filter='BM_CachedPair/real_time/threads:1$' --benchmark_min_time=0.3 --benchmark_repetitions=5 --benchmark_report_aggregates_only=true 2>&1 | grep median
  done
done
} > $OUT/ab2.txt 2>&1
{ for r in 1 2 3; do build/gpu-bundle/run glassbox-compare-host-allocator host_alloc_cached_pair 2>&1; done; } > $OUT/compare-cached2.txt 2>&1
grep median $OUT/ab2.txt | head -3
