#!/usr/bin/env bash
# Session 29, probe H: why the comparison's caller's-stream pair (1 thread)
# reads ~450-520 ns when the breakdown's reads ~280 ns plus timers.
set -u
o=$OUT
b=build/gpu-bundle
[ -d "$b" ] || tar xzf build/gpu-bundle.tgz -C build
export GLASSBOX_REQUIRE_GPU=1
which perf > "$o/tools.txt" 2>&1
for i in 1 2 3 4; do
  echo "iter $i" >> "$o/alone.jsonl"
  $b/run glassbox-compare-host-allocator host_alloc_record_event >> "$o/alone.jsonl" 2>>"$o/err.txt"
  echo "iter $i" >> "$o/after-cached.jsonl"
  $b/run glassbox-compare-host-allocator host_alloc_cached_pair host_alloc_record_event >> "$o/after-cached.jsonl" 2>>"$o/err.txt"
  echo "iter $i" >> "$o/breakdown.txt"
  $b/run glassbox-bench-record-path-breakdown 0.3 1 >> "$o/breakdown.txt" 2>&1
done
if command -v perf >/dev/null; then
  perf record -F 2000 -g -o /tmp/p.data $b/run glassbox-compare-host-allocator host_alloc_record_event > /dev/null 2>&1
  perf report -i /tmp/p.data --no-children --sort dso,symbol 2>/dev/null | grep -v '^#' | grep '%' | head -60 > "$o/perf.txt"
fi
