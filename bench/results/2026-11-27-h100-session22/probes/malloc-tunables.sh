set -u
B=build/gpu-bundle; [ -d $B ] || tar xzf build/gpu-bundle.tgz -C build
echo "thp: $(cat /sys/kernel/mm/transparent_hugepage/enabled) defrag: $(cat /sys/kernel/mm/transparent_hugepage/defrag)"
ldd --version | head -1
mkdir -p /tmp/thp
F=(--benchmark_min_time=0.2 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true --benchmark_out_format=json)
for r in 1 2 3 4 5 6; do for m in default hugetlb1 arena1; do
  case $m in default) unset GLIBC_TUNABLES;; hugetlb1) export GLIBC_TUNABLES=glibc.malloc.hugetlb=1;; arena1) export GLIBC_TUNABLES=glibc.malloc.arena_max=1;; esac
  $B/run glassbox-bench-engine "${F[@]}" --benchmark_filter='BM_ChainForwardBackwardThreads' --benchmark_out=/tmp/thp/scal-$m-$r.json > /tmp/thp/scal-$m-$r.txt 2>&1
  grep -h "AnonHugePages" /proc/meminfo >> /tmp/thp/meminfo-$m.txt
done; done
unset GLIBC_TUNABLES
python3 .gpu-tmp/sumexp.py /tmp/thp default,hugetlb1,arena1
tar czf $OUT/thp.tgz -C /tmp thp
