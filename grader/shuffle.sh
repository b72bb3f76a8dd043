#!/bin/sh
# shuffle.sh OUT.ld OBJECT... — a linker script that adds to the default one (an input file, not
# -T): every function section of the objects and archives given (built with -ffunction-sections),
# in a random order made afresh at each link, in an output section of its own before .text. A
# grade binary is linked with it (the Makefile), so the distance between any two of its
# functions — the runtime's, the grader's, a return address and a reference — differs from link
# to link, and a distance read off one build reaches nothing in the next.
set -e
out=$1
shift
{
  echo 'SECTIONS'
  echo '{'
  echo '  .text.rl_shuffled :'
  echo '  {'
  for o in "$@"; do objdump -h "$o" 2>/dev/null; done | awk '$2 ~ /^\.text\./ { print $2 }' | sort -u | shuf |
    sed 's/.*/    *(&)/'
  echo '  }'
  echo '}'
  echo 'INSERT BEFORE .text;'
} > "$out"
