#!/bin/bash
# Session 37: base / compact / slab probe builds, whole processes alternating, engine flags.
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD
out=${OUT:-/tmp}/ab37
mkdir -p $out
{ nproc; lscpu | grep -E "Model name|Socket|NUMA|L1d|L2|L3|Thread|MHz"; numactl -H 2>/dev/null | head -4; cat /sys/kernel/mm/transparent_hugepage/enabled; grep -E "MemTotal|Huge" /proc/meminfo; uptime; } > $out/sys.txt 2>&1
cat $out/sys.txt
flags=(--benchmark_min_time=0.2 --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true)
end=$((SECONDS + ${1:-480}))
i=0
while [ $SECONDS -lt $end ]; do i=$((i+1)); for v in ${VARIANTS:-base compact slab}; do
  [ $SECONDS -lt $end ] || break
  ./probe-$v "${flags[@]}" --benchmark_format=json --benchmark_out=$out/$i-$v.json --benchmark_out_format=json >/dev/null 2>&1
  python3 - "$out/$i-$v.json" "$i $v" <<'PY'
import json,sys
d=json.load(open(sys.argv[1])); r={}
for b in d["benchmarks"]:
  if b.get("aggregate_name")!="median": continue
  n=b["run_name"]
  if "FanInBackward" in n: r["fan"]=b["ns_per_node"]
  elif "FanInProbe" in n: r.update(probe=b["ns_per_node"],near=b.get("near"),chase=b.get("chase_ns"),cpu=b.get("cpu"))
  elif "ChainBackward" in n: r["chain"]=b["ns_per_node"]
  elif "ReentrantChain" in n: r["re"]=b["ns_per_node"]
  elif "ChainForwardBackwardThreads/1000/threads:1" in n: r["fb1"]=b["items_per_second"]/1e6
  elif "ChainForwardBackwardThreads/1000/threads:8" in n: r["fb8"]=b["items_per_second"]/1e6
print(sys.argv[2], " ".join(f"{k}={v:.4g}" if isinstance(v,float) else f"{k}={v}" for k,v in r.items()), flush=True)
PY
done; done
cd $out/.. && tar czf ab37.tgz ab37 && rm -rf ab37
