#!/usr/bin/env bash
# Engine A/B on the GPU host: 7a762bd (old), 3c48f92 (h), h + prefetch (p), libtorch; N alternating rounds.
set -uo pipefail
bundle=build/gpu-bundle
[ -d "$bundle" ] || tar xzf build/gpu-bundle.tgz -C build
N=${1:-5}
torch_dir=$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))')
g++ -O2 -std=c++20 -D_GLIBCXX_USE_CXX11_ABI=1 -Ibench/torch -I"$torch_dir/include" \
    -I"$torch_dir/include/torch/csrc/api/include" -I/usr/local/cuda/include bench/torch/engine_torch.cpp -o /tmp/engine_torch \
    -L"$torch_dir/lib" -Wl,-rpath,"$torch_dir/lib" -ltorch -ltorch_cuda -ltorch_cpu -lc10 -lc10_cuda \
    -L/usr/local/cuda/lib64 -lcudart -I"$bundle/include" "$bundle/lib/libbenchmark.so.1debian" -Wl,-rpath,"$(cd "$bundle/lib" && pwd)" || exit 1
flags=(--benchmark_min_time=0.2 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true
  --benchmark_report_aggregates_only=true --benchmark_out_format=json "--benchmark_filter=${FILTER:-BM_FanIn|BM_Reentrant|BM_ChainBackward}")
d=$OUT/ab18; mkdir -p $d
export LD_LIBRARY_PATH=$(cd "$bundle/lib" && pwd)
for r in $(seq 1 "$N"); do
  for v in old h p; do build/devscripts/ab18/bench-engine-$v "${flags[@]}" --benchmark_out="$d/$v-$r.json" > /dev/null 2>&1 || echo "$v $r failed"; done
  /tmp/engine_torch "${flags[@]}" --benchmark_out="$d/pytorch-$r.json" > /dev/null 2>&1
done
python3 - "$d" "$N" <<'PY' | tee $d/summary.txt
import json,sys,statistics as st
d,n=sys.argv[1],int(sys.argv[2])
rows={}
for side in ("old","h","p","pytorch"):
  for r in range(1,n+1):
    for b in json.load(open(f"{d}/{side}-{r}.json"))["benchmarks"]:
      if b.get("aggregate_name")!="median": continue
      rows.setdefault(b["run_name"],{}).setdefault(side,[]).append(b.get("ns_per_node"))
for name,v in sorted(rows.items()):
  p=v["pytorch"]
  for side in ("old","h","p"):
    g=v[side]; ratios=[b/a for a,b in zip(g,p)]
    print(f"{name:34s} {side:4s} {st.median(g):8.1f} ns ({min(g):.0f}-{max(g):.0f})  torch {st.median(p):8.1f}  ratio {st.median(ratios):5.1f}x ({min(ratios):.1f}-{max(ratios):.1f})")
PY
tar czf $OUT/ab18.tgz -C $OUT ab18
