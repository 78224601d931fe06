#!/usr/bin/env bash
# Does gpu-bench's engine method (every benchmark of the program in one
# process, repetitions randomly interleaved) slow the single-thread rows
# against each benchmark run alone in its own process? Both sides, 3 rounds.
set -uo pipefail
[ -d build/gpu-bundle ] || tar xzf build/gpu-bundle.tgz -C build
b=build/gpu-bundle
torch_dir=$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))')
g++ -O2 -std=c++20 -D_GLIBCXX_USE_CXX11_ABI=1 -Ibench/torch -I"$torch_dir/include" \
    -I"$torch_dir/include/torch/csrc/api/include" -I/usr/local/cuda/include bench/torch/engine_torch.cpp -o /tmp/engine_torch \
    -L"$torch_dir/lib" -Wl,-rpath,"$torch_dir/lib" -ltorch -ltorch_cuda -ltorch_cpu -lc10 -lc10_cuda \
    -L/usr/local/cuda/lib64 -lcudart -I"$b/include" "$b/lib/libbenchmark.so.1debian" -Wl,-rpath,"$(cd $b/lib && pwd)" || exit 1
echo "built at ${SECONDS}s"
flags=(--benchmark_min_time=0.2 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true)
pick() { grep median | grep -E "ChainBackward|FanIn|Reentrant" | sed -E 's/\/manual_time_median//; s/.*(BM_[A-Za-z]+)\/[0-9]+ .* ns_per_node=([0-9.k]+).*/\1 \2/'; }
for round in 1 2 3; do
  for side in glassbox pytorch; do
    exe=($b/run glassbox-bench-engine); [ $side = pytorch ] && exe=(/tmp/engine_torch)
    "${exe[@]}" "${flags[@]}" --benchmark_enable_random_interleaving=true 2>&1 | pick | sed "s/^/$round $side together: /"
    for f in ChainBackward FanInBackward ReentrantChain; do
      "${exe[@]}" "${flags[@]}" --benchmark_filter="BM_$f" 2>&1 | pick | sed "s/^/$round $side alone: /"
    done
  done
done | tee $OUT/interleave.txt
echo "done at ${SECONDS}s"
