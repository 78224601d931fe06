#!/usr/bin/env bash
# Is our side's slowdown when its benchmarks share a process the heap? The
# engine program as gpu-bench runs it, with glibc's default thread cache of
# freed chunks (7 per size) and with a large one, alternating; and alone.
set -uo pipefail
[ -d build/gpu-bundle ] || tar xzf build/gpu-bundle.tgz -C build
b=build/gpu-bundle
flags=(--benchmark_min_time=0.2 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true)
pick() { grep median | grep -E "ChainBackward|FanIn|Reentrant|ChainForwardBackwardThreads" | sed -E 's/\/(manual|real)_time//; s/_median//; s/.*(BM_[A-Za-z]+)\/[0-9]+(\/threads:[0-9]+)? .*(ns_per_node|items_per_second)=([0-9.kMG]+).*/\1\2 \4/'; }
for round in 1 2 3; do
  for t in "" "glibc.malloc.tcache_count=4096" "glibc.malloc.mmap_threshold=0" ; do
    [ "$t" = "glibc.malloc.mmap_threshold=0" ] && continue
    GLIBC_TUNABLES=$t $b/run glassbox-bench-engine "${flags[@]}" --benchmark_enable_random_interleaving=true 2>&1 | pick | tr '\n' ' ' | sed "s/^/$round together ${t:-default}: /"; echo
    GLIBC_TUNABLES=$t $b/run glassbox-bench-engine "${flags[@]}" --benchmark_filter=BM_ReentrantChain 2>&1 | pick | tr '\n' ' ' | sed "s/^/$round alone ${t:-default}: /"; echo
  done
done | tee $OUT/tcache.txt
