#!/usr/bin/env bash
# The record path at 1 thread: ours by configuration against bd7cf12's, alternating.
set -uo pipefail
[ -d build/gpu-bundle ] || tar xzf build/gpu-bundle.tgz -C build
b=build/gpu-bundle; base=$(basename $(ls $b/bin/baseline-* | head -1))
one() { "$b/run" "$@" host_alloc_record_event 2>/tmp/err.txt | grep '"threads":1,' | grep -o '"ns_per_call":[0-9.]*' | cut -d: -f2 | cut -d. -f1; }
for r in 1 2 3 4 5; do
  echo "round $r: default $(one glassbox-compare-host-allocator) [$(grep -o 'peak [0-9]*' /tmp/err.txt)]" \
       " thread_cache:0 $(GLASSBOX_HOST_ALLOC_CONF=thread_cache:0 one glassbox-compare-host-allocator) [$(grep -o 'peak [0-9]*' /tmp/err.txt)]" \
       " background $(GLASSBOX_HOST_ALLOC_CONF=background_thread:true one glassbox-compare-host-allocator) [$(grep -o 'peak [0-9]*' /tmp/err.txt)]" \
       " baseline $(one $base)"
done
