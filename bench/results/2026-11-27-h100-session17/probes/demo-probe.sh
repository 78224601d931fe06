#!/usr/bin/env bash
# Session 17: how often does the demo's suite fail under initcheck (eager loading) on 34c14a2?
set -uo pipefail
[ -d build/gpu-bundle ] || tar xzf build/gpu-bundle.tgz -C build
b=build/gpu-bundle
export GLASSBOX_REQUIRE_GPU=1
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
mkdir -p /tmp/dp
one() {  # tool run-id
  CUDA_MODULE_LOADING=EAGER timeout 170 "$cs" --tool "$1" --report-api-errors no --print-limit 100 --target-processes all \
    $b/run glassbox-test-gpu-demo --gtest_filter=GpuDemo.TrainsOnTheGpuAndTheLossFalls > /tmp/dp/$1-$2.log 2>&1
  echo "$1 run $2: exit $? $(grep -c 'IllegalAddress' /tmp/dp/$1-$2.log) illegal-address lines; $(grep 'ERROR SUMMARY' /tmp/dp/$1-$2.log | tail -1)"
}
for wave in 1 2; do
  for i in 1 2 3; do one initcheck "$wave.$i" & done
  wait
done > $OUT/demo-initcheck.txt
for i in 1 2 3 4; do
  timeout 120 $b/run glassbox-demo --device cuda --threads 4 --steps 40 > /tmp/dp/plain-$i.log 2>&1
  echo "plain run $i: exit $? $(grep -c IllegalAddress /tmp/dp/plain-$i.log) illegal-address lines"
done >> $OUT/demo-initcheck.txt
tar czf $OUT/demo-probe-logs.tgz -C /tmp dp
cat $OUT/demo-initcheck.txt
