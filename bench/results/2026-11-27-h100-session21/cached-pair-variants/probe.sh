#!/usr/bin/env bash
# Cached-pair variants on the Xeon, interleaved: sim bench (1 thread) and the real compare harness.
set -u
tar xzf build/gpu-bundle.tgz -C build
o=/tmp/probe2; mkdir -p $o
export LD_LIBRARY_PATH=$PWD/build/gpu-bundle/lib
cp .gpu-tmp/variants/compare-v1 build/gpu-bundle/bin/compare-v1
for r in 1 2 3 4 5 6; do
  for v in v0-before v1-tls p-nostats p-nolock p-nohandout p-nochecks; do
    .gpu-tmp/variants/$v --benchmark_filter='BM_CachedPair/real_time/threads:1$' --benchmark_min_time=0.5 2>&1 | grep BM_ | awk -v v=$v -v r=$r '{print r, v, $2}' >> $o/sim.txt
  done
done
for r in 1 2 3 4 5; do
  for v in glassbox-compare-host-allocator compare-v1; do
    build/gpu-bundle/run $v host_alloc_cached_pair 2>&1 | grep '"threads":1,' | sed "s/^/$r $v /" >> $o/compare.txt
  done
done
cat $o/sim.txt $o/compare.txt
python3 - $o/sim.txt <<'PY'
import sys, statistics, collections
d=collections.defaultdict(list)
for l in open(sys.argv[1]):
    r,v,x=l.split(); d[v].append(float(x))
for v,xs in d.items(): print(v, "median", statistics.median(xs), "min", min(xs), "max", max(xs))
PY
cp $o/* $OUT/
