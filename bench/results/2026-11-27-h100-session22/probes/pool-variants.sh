set -u
B=build/gpu-bundle; [ -d $B ] || tar xzf build/gpu-bundle.tgz -C build
export LD_LIBRARY_PATH=$B/lib
cp $B/bin/glassbox-bench-engine .gpu-tmp/eng-256k
mkdir -p /tmp/exp
F=(--benchmark_min_time=0.2 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true --benchmark_out_format=json)
for r in 1 2 3 4 5 6; do for m in old 256k 1m; do
  .gpu-tmp/eng-$m "${F[@]}" --benchmark_filter='BM_ChainForwardBackwardThreads|BM_HostScalingReference' --benchmark_out=/tmp/exp/scal-$m-$r.json > /tmp/exp/scal-$m-$r.txt 2>&1
done; done
for r in 1 2 3 4; do for m in old 256k 1m; do
  .gpu-tmp/eng-$m "${F[@]}" --benchmark_filter='BM_ChainBackward|BM_FanIn|BM_Reentrant' --benchmark_out=/tmp/exp/bwd-$m-$r.json > /tmp/exp/bwd-$m-$r.txt 2>&1
done; done
python3 .gpu-tmp/sumexp.py /tmp/exp old,256k,1m
tar czf $OUT/exp2.tgz -C /tmp exp
