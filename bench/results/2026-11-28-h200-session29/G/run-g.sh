#!/usr/bin/env bash
# Session 29, run G: sanitizers, training step, record-path breakdown, and
# 5 more alternating rounds of the host allocator's comparison.
set -u
o=$OUT
start=$(date +%s)
mark() { echo "$1: $(( $(date +%s) - start )) s" >>"$o/times.txt"; }
scripts/gpu-sanitize "$o/sanitize" >"$o/sanitize.log" 2>&1; mark sanitize
OUT=$o/training timeout 200 scripts/gpu-bench training-step 5 >"$o/training.log" 2>&1; mark training
OUT=$o/breakdown timeout 60 scripts/gpu-bench breakdown 3 >/dev/null 2>&1; mark breakdown
OUT=$o/host timeout 200 scripts/gpu-bench host 5 >"$o/host.log" 2>&1; mark host
cd "$o" || exit 1
cp sanitize/summary.txt sanitize-summary.txt; cp training/summary.txt training-summary.txt; cp host/summary.txt host-summary.txt
tar czf all.tgz sanitize training breakdown host sanitize.log training.log host.log && rm -rf sanitize training breakdown host sanitize.log training.log host.log
ls -la
