#!/usr/bin/env bash
# Session 38's probe on the GPU host: which vCPUs slow each other (smt-probe),
# then forward + backward at 1 and 8 threads on both sides, unpinned, pinned to
# eight vCPUs of which none is another's worst partner (A), and pinned to four
# worst pairs (B), alternating rounds. Run from the repository root with the
# bundle unpacked and build/probe/smt-probe built; writes under $OUT.
set -uo pipefail
trap '' PIPE
bundle=build/gpu-bundle
build/probe/smt-probe 60 >"$OUT/smt-1.txt"
sets=$(python3 - "$OUT/smt-1.txt" <<'PY'
import re, sys
worst = {}
for line in open(sys.argv[1]):
    m = re.match(r'\s*(\d+):.*worst (\d+) ([\d.]+)', line)
    if m: worst[int(m[1])] = (int(m[2]), float(m[3]))
a, b, used = [], [], set()
for i in sorted(worst, key=lambda i: worst[i][1]):
    j = worst[i][0]
    if i in used or j in used or len(b) >= 8: continue
    if worst.get(j, (None,))[0] == i: b += [i, j]; used |= {i, j}
for i in sorted(worst):
    if len(a) < 8 and worst[i][0] not in a: a.append(i)
print(",".join(map(str, a)), ",".join(map(str, b[:8])) or "0-7")
PY
)
read -r set_a set_b <<<"$sets"
echo "A (no worst partners together): $set_a; B (worst pairs): $set_b" | tee "$OUT/sets.txt"
torch_dir=$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))')
g++ -O2 -std=c++20 -D_GLIBCXX_USE_CXX11_ABI=1 -Ibench/torch -I"$torch_dir/include" \
  -I"$torch_dir/include/torch/csrc/api/include" -I/usr/local/cuda/include -I"$bundle/include" bench/torch/engine_torch.cpp \
  -o build/engine_torch -L"$torch_dir/lib" -Wl,-rpath,"$torch_dir/lib" -ltorch -ltorch_cuda -ltorch_cpu -lc10 -lc10_cuda \
  -L/usr/local/cuda/lib64 -lcudart "$bundle/lib/libbenchmark.so.1debian" \
  -Wl,-rpath,"$(cd "$bundle/lib" && pwd)" || exit 1
flags=(--benchmark_filter='BM_ChainForwardBackwardThreads/1000/.*threads:(1|8)$' --benchmark_min_time=0.5
  --benchmark_repetitions=3 --benchmark_report_aggregates_only=true)
for round in 1 2 3; do
  for pin in none A B; do
    cpus=""
    [ $pin = A ] && cpus=$set_a
    [ $pin = B ] && cpus=$set_b
    for side in glassbox pytorch; do
      exe=("$bundle/run" glassbox-bench-engine)
      [ $side = pytorch ] && exe=(build/engine_torch)
      [ -n "$cpus" ] && exe=(taskset -c "$cpus" "${exe[@]}")
      "${exe[@]}" "${flags[@]}" 2>/dev/null | grep median | sed "s/^/$round $pin $side /"
    done
  done
done | tee "$OUT/engine.txt"
build/probe/smt-probe 60 >"$OUT/smt-2.txt"
cat "$OUT/smt-1.txt"
