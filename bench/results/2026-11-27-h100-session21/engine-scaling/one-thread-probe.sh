#!/usr/bin/env bash
# Why does the engine's 1-thread forward+backward swing 1.6-3.4 M/s between runs while 2 and 8 threads hold?
set -u
o=/tmp/probe4; mkdir -p $o
[ -d build/gpu-bundle ] || tar xzf build/gpu-bundle.tgz -C build
f=(--benchmark_filter='BM_ChainForwardBackwardThreads/1000/real_time/threads:(1|2)$' --benchmark_min_time=0.2 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true)
tun="glibc.malloc.trim_threshold=1073741824:glibc.malloc.top_pad=67108864:glibc.malloc.mmap_threshold=1073741824"
for r in 1 2 3 4; do
  for cfg in plain tunables pinned both; do
    pre=(); envs=()
    case $cfg in tunables) envs=(GLIBC_TUNABLES=$tun) ;; pinned) pre=(taskset -c 3) ;; both) envs=(GLIBC_TUNABLES=$tun); pre=(taskset -c 3,4) ;; esac
    env "${envs[@]}" "${pre[@]}" build/gpu-bundle/run glassbox-bench-engine "${f[@]}" 2>&1 | grep "_median" | awk -v c=$cfg -v r=$r '{print c, r, $1, $NF}' >> $o/engine1.txt
  done
done
# minor faults per second of a 1-thread run, plain and with the tunables
for cfg in plain tunables; do
  envs=(); [ $cfg = tunables ] && envs=(GLIBC_TUNABLES=$tun)
  /usr/bin/time -f "$cfg minor_faults=%R major=%F elapsed=%e vol_cs=%w invol_cs=%c" env "${envs[@]}" build/gpu-bundle/run glassbox-bench-engine --benchmark_filter='BM_ChainForwardBackwardThreads/1000/real_time/threads:1$' --benchmark_min_time=2 2>&1 | tail -2 >> $o/faults.txt
done
sort $o/engine1.txt; cat $o/faults.txt
cp $o/* $OUT/
