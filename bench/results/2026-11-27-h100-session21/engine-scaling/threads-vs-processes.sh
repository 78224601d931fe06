#!/usr/bin/env bash
# Is the engine's 8-thread rate capped inside our process or by the host? 8 threads in one process
# against 8 one-thread processes at once, and one thread alone; three rounds.
set -u
o=/tmp/probe5; mkdir -p $o
[ -d build/gpu-bundle ] || tar xzf build/gpu-bundle.tgz -C build
one() { build/gpu-bundle/run glassbox-bench-engine --benchmark_filter="BM_ChainForwardBackwardThreads/1000/real_time/threads:$1\$" --benchmark_min_time=1 2>&1 | grep '^BM_' | sed -n 's/.*items_per_second=\([0-9.]*\)M.*/\1/p'; }
for r in 1 2 3; do
  echo "round $r alone $(one 1)" >> $o/procs.txt
  echo "round $r threads8 $(one 8)" >> $o/procs.txt
  for i in 1 2 3 4 5 6 7 8; do one 1 > $o/p$i.txt & done; wait
  echo "round $r procs8 $(cat $o/p?.txt | tr '\n' ' ')" >> $o/procs.txt
  rm $o/p?.txt
done
cat $o/procs.txt
cp $o/procs.txt $OUT/
