#!/usr/bin/env bash
# Session 29, run I: more alternating rounds of the engine's scaling and the record path.
set -u
o=$OUT
start=$(date +%s)
mark() { echo "$1: $(( $(date +%s) - start )) s" >>"$o/times.txt"; }
OUT=$o/scaling timeout 300 scripts/gpu-bench scaling 8 >"$o/scaling.log" 2>&1; mark scaling
OUT=$o/record timeout 200 scripts/gpu-bench record 8 >"$o/record.log" 2>&1; mark record
cd "$o" && cp scaling/summary.txt scaling-summary.txt && cp record/summary.txt record-summary.txt
tar czf all.tgz scaling record scaling.log record.log && rm -rf scaling record scaling.log record.log
