#!/usr/bin/env bash
# calibrate.sh RINGLAB — the seconds this machine takes for a fixed piece of the work grading
# does (one-rank training and a 4-rank all-reduce sweep): `make autograder` records it, and
# run_autograder compares its own with it to scale the graders' time limits.
set -u
t0=$(date +%s.%N)
"$1" train --model transformer --steps 30 >/dev/null 2>&1
"$1" bench all_reduce --ranks 4 -b 1M -e 4M >/dev/null 2>&1
t1=$(date +%s.%N)
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }'
