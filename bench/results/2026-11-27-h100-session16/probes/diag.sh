#!/usr/bin/env bash
# Session 16 probe: what the H100 host's CPU is, and the same glassbox
# benchmarks the development machine runs, to see why our side runs ~2.7x
# slower there; then gpu-typed in full and the new stamp test under memcheck.
set -uo pipefail
[ -d build/gpu-bundle ] || tar xzf build/gpu-bundle.tgz -C build
R=build/gpu-bundle/run
{
echo "== cpu"; lscpu | grep -E "Model name|^CPU\(s\)|MHz|Thread|Hypervisor|Virtualization|L1d|L2|L3|Flags" | sed 's/Flags:.*\(constant_tsc\|\).*/Flags: (see flags.txt)/'
grep -o -w -E "constant_tsc|nonstop_tsc|tsc_known_freq|rdtscp|tsc_deadline_timer|hypervisor" /proc/cpuinfo | sort | uniq -c
echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource) (available: $(cat /sys/devices/system/clocksource/clocksource0/available_clocksource))"
uname -r; cat /proc/cmdline | tr ' ' '\n' | grep -E "mitigations|spectre|pti|idle|nohz" ; grep -r . /sys/devices/system/cpu/vulnerabilities/ 2>/dev/null | sed 's|.*/||'
cat > /tmp/mb.c <<'C'
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdio.h>
int main(){long q=syscall(SYS_membarrier,MEMBARRIER_CMD_QUERY,0,0);printf("membarrier query=%ld private_expedited=%d\n",q,q>0&&(q&MEMBARRIER_CMD_PRIVATE_EXPEDITED)?1:0);
long r=syscall(SYS_membarrier,MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,0,0);printf("register=%ld\n",r);return 0;}
C
gcc -O2 /tmp/mb.c -o /tmp/mb && /tmp/mb
echo "perf: $(command -v perf || echo none)"
} > $OUT/cpu.txt 2>&1
cat $OUT/cpu.txt
echo "== sim benches (same binaries as the dev machine runs)"
{
for env in "" "GLASSBOX_NO_MEMBARRIER=1"; do
  echo "-- host allocator ${env:-default}"
  env $env $R glassbox-bench-host-allocator --benchmark_filter='BM_CachedPair/real_time/threads:(1|16)$' --benchmark_min_time=0.3 --benchmark_repetitions=5 --benchmark_report_aggregates_only=true 2>&1 | grep median
done
echo "-- engine"
$R glassbox-bench-engine --benchmark_filter='BM_ReentrantChain|BM_ChainBackward|BM_FanIn' --benchmark_min_time=0.5 --benchmark_repetitions=5 --benchmark_report_aggregates_only=true 2>&1 | grep median
echo "-- scrape"
$R glassbox-bench-scrape --benchmark_min_time=0.3 --benchmark_repetitions=5 --benchmark_report_aggregates_only=true 2>&1 | grep median
echo "-- metrics gauge"
$R glassbox-bench-metrics --benchmark_filter='BM_GaugeAdd|BM_CounterInc' --benchmark_min_time=0.2 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true 2>&1 | grep median | head -8
} > $OUT/sim-bench.txt 2>&1
cat $OUT/sim-bench.txt
echo "== gpu-typed"
export GLASSBOX_REQUIRE_GPU=1
$R glassbox-test-gpu-typed > /tmp/typed.log 2>&1; echo "exit $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) " /tmp/typed.log | head; grep -E "OneStream" /tmp/typed.log | head
cp /tmp/typed.log $OUT/gpu-typed.log
echo "== memcheck of the new test"
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
start=$SECONDS
timeout 240 "$cs" --tool memcheck --leak-check full --report-api-errors no --print-limit 1000 --target-processes all \
  build/gpu-bundle/run glassbox-test-gpu-typed --gtest_filter='*EveryReaderSeesItsOwnStampWhenFreshThreadsShareOneStream*' > $OUT/memcheck-onestream.log 2>&1
echo "memcheck exit $?, $((SECONDS-start)) s"; grep -E "ERROR SUMMARY|PASSED|FAILED|OK \]" $OUT/memcheck-onestream.log | head
