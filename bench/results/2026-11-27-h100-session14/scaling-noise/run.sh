set -u
lscpu | grep -E "^CPU\(s\)|Thread|Core|Socket|Model name|NUMA node0" > $OUT/lscpu.txt; lscpu -p=CPU,CORE,SOCKET | grep -v '#' > $OUT/topology.txt
[ -d build/gpu-bundle ] || tar xzf build/gpu-bundle.tgz -C build
b=build/gpu-bundle; td=$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))')
g++ -O2 -std=c++20 -D_GLIBCXX_USE_CXX11_ABI=1 -Ibench/torch -I$td/include -I$td/include/torch/csrc/api/include -I/usr/local/cuda/include bench/torch/engine_torch.cpp -o /tmp/engine_torch -L$td/lib -Wl,-rpath,$td/lib -ltorch -ltorch_cuda -ltorch_cpu -lc10 -lc10_cuda -L/usr/local/cuda/lib64 -lcudart -I$b/include $b/lib/libbenchmark.so.1debian -Wl,-rpath,$(cd $b/lib && pwd) || exit 1
# one logical CPU per physical core
cores=$(awk -F, '!seen[$2","$3]++ {print $1}' $OUT/topology.txt | head -8 | paste -sd,)
echo "cores: $cores" >> $OUT/lscpu.txt
f=(--benchmark_filter=ChainForwardBackwardThreads --benchmark_min_time=0.2 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true)
for r in 1 2 3; do for side in glassbox pytorch; do for pin in free pinned; do
  exe=($b/run glassbox-bench-engine); [ $side = pytorch ] && exe=(/tmp/engine_torch)
  pre=(); [ $pin = pinned ] && pre=(taskset -c $cores)
  "${pre[@]}" "${exe[@]}" "${f[@]}" 2>&1 | grep median | sed "s/^/$r $side $pin /" >> $OUT/smt.txt
done; done; done
cat $OUT/lscpu.txt; cat $OUT/smt.txt
