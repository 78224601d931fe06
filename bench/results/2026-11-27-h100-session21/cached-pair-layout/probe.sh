#!/usr/bin/env bash
# Is the 1-thread cached pair's spread between processes the address layout (ASLR) or the core?
set -u
o=/tmp/probe3; mkdir -p $o
export LD_LIBRARY_PATH=$PWD/build/gpu-bundle/lib
[ -d build/gpu-bundle ] || tar xzf build/gpu-bundle.tgz -C build
b=.gpu-tmp/variants/v1-tls
f=(--benchmark_filter='BM_CachedPair/real_time/threads:1$' --benchmark_min_time=0.3 --benchmark_repetitions=3)
for r in 1 2 3 4 5 6 7 8; do
  taskset -c 5 $b "${f[@]}" 2>&1 | grep -E "^BM_.*threads:1 " | awk -v r=$r '{print "aslr", r, $2}' >> $o/layout.txt
  taskset -c 5 setarch x86_64 -R $b "${f[@]}" 2>&1 | grep -E "^BM_.*threads:1 " | awk -v r=$r '{print "fixed", r, $2}' >> $o/layout.txt
done
cat $o/layout.txt | awk '{a[$1" "$2]=a[$1" "$2]" "$3} END {for (k in a) print k, a[k]}' | sort
cp $o/* $OUT/
