#!/bin/sh
# pad.sh OUT.o [CC] — a random padding object, linked last into a grade binary (the Makefile): up
# to 1 MiB of code, 256 KiB of read-only data and 256 KiB of data after the runtime's, so that the
# distance from the lab file's code to a runtime function or variable differs from link to link
# (a lab file that adds a distance read off one build to its own address reaches nothing).
set -e
out=$1
cc=${2:-cc}
r() { od -An -N2 -tu2 /dev/urandom | tr -d ' '; }
printf '.section .text.rl_pad,"ax",@progbits\n.skip %d, 0xcc\n.section .rodata.rl_pad,"a",@progbits\n.skip %d\n.data\n.skip %d\n.section .note.GNU-stack,"",@progbits\n' \
  $(( $(r) * 16 + 16 )) $(( $(r) * 4 + 16 )) $(( $(r) * 4 + 16 )) > "$out.s"
$cc -c "$out.s" -o "$out"
rm -f "$out.s"
