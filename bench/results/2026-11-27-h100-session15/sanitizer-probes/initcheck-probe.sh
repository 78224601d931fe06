#!/usr/bin/env bash
# The demo under compute-sanitizer, several runs at once, per variant; counts
# failures and keeps the failing logs. VARIANTS: name:tool:runs:env...
set -uo pipefail
[ -d build/gpu-bundle ] || tar xzf build/gpu-bundle.tgz -C build
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
P=${P:-4}; STEPS=${STEPS:-6}; DEADLINE=$((SECONDS + ${BUDGET:-500}))
mkdir -p "$OUT/probe"
one() { # name tool i env...
  local name=$1 tool=$2 i=$3; shift 3
  local log="$OUT/probe/$name-$i.log"
  env "$@" CUDA_LAUNCH_BLOCKING=${BLOCKING:-1} timeout 120 "$cs" --tool "$tool" --leak-check no --print-limit 20 \
    build/gpu-bundle/run glassbox-demo --device cuda --threads ${THREADS:-4} --steps "$STEPS" --metrics-addr 127.0.0.1:0 > "$log" 2>&1
  local rc=$?
  if [ $rc -eq 0 ] && grep -q "ERROR SUMMARY: 0 errors" "$log"; then rm -f "$log"; echo ok; else echo "fail rc=$rc"; fi
}
export -f one; export cs OUT STEPS
for spec in "$@"; do
  IFS=: read -r name tool runs envs <<< "$spec"
  start=$SECONDS; n=0; fails=0
  while [ $n -lt "$runs" ] && [ $SECONDS -lt $DEADLINE ]; do
    pids=(); for k in $(seq 1 "$P"); do n=$((n+1)); one "$name" "$tool" "$n" ${envs//,/ } > "$OUT/probe/.r$k" & pids+=($!); done
    wait "${pids[@]}"
    for k in $(seq 1 "$P"); do grep -q fail "$OUT/probe/.r$k" && fails=$((fails+1)); done
  done
  echo "$name ($tool, env ${envs:-none}): $fails failed of $n runs, $((SECONDS-start)) s"
done | tee "$OUT/probe/summary.txt"
rm -f "$OUT/probe"/.r*
for f in "$OUT"/probe/*.log; do [ -f "$f" ] && { echo "== $f"; grep -v "^=========     \(Host Frame\|in \)" "$f" | tail -12; }; done 2>/dev/null | head -150
