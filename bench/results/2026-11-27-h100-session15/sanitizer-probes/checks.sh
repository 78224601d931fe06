#!/usr/bin/env bash
# The device assert's death test on the build and on a mutant without the
# check; the demo without any tool: losses of repeated runs.
set -uo pipefail
[ -d build/gpu-bundle ] || tar xzf build/gpu-bundle.tgz -C build
cp build/devscripts/mutant-gpu-autograd build/gpu-bundle/bin/glassbox-mutant-autograd
export GLASSBOX_REQUIRE_GPU=1
f='*DeathTest*'
echo "== death test, this build"; build/gpu-bundle/run glassbox-test-gpu-autograd --gtest_filter="$f" 2>&1 | tail -4
echo "== death test, mutant (no device check)"; timeout 120 build/gpu-bundle/run glassbox-mutant-autograd --gtest_filter="$f" 2>&1 | grep -E "Expected|Actual|Error msg|FAILED|PASSED|no error|illegal" | head -12
echo "== plain demo runs"
for threads in 4 8; do for i in $(seq 1 ${RUNS:-8}); do
  build/gpu-bundle/run glassbox-demo --device cuda --threads $threads --steps ${STEPS:-40} --metrics-addr 127.0.0.1:0 > /tmp/d.log 2>&1
  echo "threads=$threads run=$i exit=$? $(grep -o 'loss: .*' /tmp/d.log)"
done; done | tee $OUT/plain.txt | sort -k1,1 -k3 | awk '{print}' 
echo "== distinct loss lines per thread count"; awk '{t=$1; $2=""; $3=""; print t, $0}' $OUT/plain.txt | sort | uniq -c
