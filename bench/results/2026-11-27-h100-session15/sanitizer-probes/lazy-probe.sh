#!/usr/bin/env bash
# The demo under initcheck, lazy (default) against eager module loading,
# alternating in waves of P runs each side at once; a run fails when the tool
# reports an error or the demo exits non-zero. Logs of failures: first lines.
set -uo pipefail
[ -d build/gpu-bundle ] || tar xzf build/gpu-bundle.tgz -C build
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
THREADS=${THREADS:-4}; P=${P:-2}; STEPS=${STEPS:-6}; DEADLINE=$((SECONDS + ${BUDGET:-480})); TOOL=${TOOL:-initcheck}
d="$OUT/lazy"; mkdir -p "$d"
one() { # side i
  local side=$1 i=$2 mode=LAZY; [ "$side" = eager ] && mode=EAGER
  local log="$d/$side-$i.log"
  CUDA_MODULE_LOADING=$mode CUDA_LAUNCH_BLOCKING=${BLOCKING:-1} timeout 150 "$cs" --tool "$TOOL" --leak-check no --print-limit 5 \
    build/gpu-bundle/run glassbox-demo --device cuda --threads "$THREADS" --steps "$STEPS" --metrics-addr 127.0.0.1:0 > "$log" 2>&1
  local rc=$?
  if [ $rc -eq 0 ] && grep -q "ERROR SUMMARY: 0 errors" "$log"; then rm -f "$log"; return 0; fi
  # the step the first failure came in: steps printed before it, plus one
  local first=$(grep -n -m1 -E "Uninitialized|Invalid|illegal|failed|Assertion" "$log" | cut -d: -f1)
  local step=$(head -n "${first:-1}" "$log" | grep -c '^step ')
  echo "$side $i rc=$rc step=$((step+1)) $(grep -o 'ERROR SUMMARY: [0-9]* errors' "$log" | head -1) $(grep -m1 -o 'at [^ ]*' "$log" | cut -c1-90) $(grep -m1 -o 'glassbox-demo: .* failed.*' "$log")" >> "$d/failures.txt"
}
n=0
while [ $SECONDS -lt $DEADLINE ]; do
  n=$((n+1)); pids=()
  for k in $(seq 1 "$P"); do one lazy "$n-$k" & pids+=($!); one eager "$n-$k" & pids+=($!); done
  wait "${pids[@]}"
done
touch "$d/failures.txt"
for side in lazy eager; do echo "$side: $(grep -c "^$side " "$d/failures.txt") failed of $((n*P)) runs ($TOOL, $THREADS threads, $STEPS steps, CUDA_LAUNCH_BLOCKING=${BLOCKING:-1})"; done | tee "$d/summary.txt"
cat "$d/failures.txt"
for f in "$d"/*.log; do [ -f "$f" ] && { head -c 4000 "$f" > "$f.head"; rm "$f"; }; done
tar czf "$OUT/lazy-probe.tgz" -C "$OUT" lazy && rm -rf "$d"/*.head
