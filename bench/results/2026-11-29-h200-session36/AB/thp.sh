#!/bin/bash
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD
for f in enabled defrag khugepaged/defrag; do echo "thp $f: $(cat /sys/kernel/mm/transparent_hugepage/$f 2>/dev/null)"; done
ldd --version | head -1
flags=(--benchmark_min_time=0.2 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true)
for i in $(seq 1 ${1:-5}); do for mode in plain huge; do
  t=""; [ $mode = huge ] && t="glibc.malloc.hugetlb=1"
  echo -n "$i $mode:"
  GLIBC_TUNABLES=$t ./eng-base "${flags[@]}" 2>/dev/null | grep -E "_median" | grep -E "FanIn|ChainBackward|Reentrant" | awk '{n=$1; sub("/manual_time_median","",n); printf " %s=%s", n, $NF}'
  echo
done; done
