#!/usr/bin/env bash
# Session 21 probe: host CPU, membarrier, cached pair with and without membarrier, pyconfig.
set -u
tar xzf build/gpu-bundle.tgz -C build
o=/tmp/probe; mkdir -p $o
{ lscpu; echo; uname -a; cat /proc/cmdline; which perf; } > $o/host.txt 2>&1
python3 - >> $o/host.txt 2>&1 <<'PY'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(324, 0, 0, 0)  # MEMBARRIER_CMD_QUERY
print("membarrier query:", r, "errno", ctypes.get_errno())
r2 = libc.syscall(324, 16, 0, 0)  # REGISTER_PRIVATE_EXPEDITED
print("register private expedited:", r2, "errno", ctypes.get_errno())
PY
cp /usr/include/x86_64-linux-gnu/python3.12/pyconfig.h $o/pyconfig.h 2>>$o/host.txt
for r in 1 2 3 4; do
  for m in 0 1; do
    GLASSBOX_NO_MEMBARRIER=$m build/gpu-bundle/run glassbox-bench-host-allocator --benchmark_filter='BM_CachedPair/real_time/threads:(1|8)$' --benchmark_min_time=0.5 2>&1 | grep BM_ | sed "s/^/nomb=$m r=$r /" >> $o/cached.txt
  done
done
for r in 1 2 3; do
  for m in 0 1; do
    GLASSBOX_NO_MEMBARRIER=$m build/gpu-bundle/run glassbox-compare-host-allocator host_alloc_cached_pair 2>&1 | sed "s/^/nomb=$m r=$r /" >> $o/compare.txt
  done
done
cat $o/host.txt | grep -i "model name\|MHz\|membarrier\|register\|perf\|Hypervisor"; cat $o/cached.txt $o/compare.txt
cp $o/* $OUT/
