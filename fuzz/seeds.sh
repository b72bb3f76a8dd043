#!/bin/sh
# seeds.sh RINGLAB OUT — the fuzz targets' seed corpora, written by the programs themselves:
# OUT/trace (runs' traces and synthetic schedules), OUT/flight (the flight dumps of a hang and
# of a mismatch), OUT/answers (the labs' answers files), OUT/options (command lines of the
# handouts' kinds, one argument per line, and each --fault kind as --help states it).
set -e
ringlab=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
out=$2
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out/trace" "$out/flight" "$out/answers" "$out/options"
cd "$out"
"$ringlab" train --ranks 2 --steps 2 --trace trace/train.json >/dev/null
"$ringlab" view --synth ddp --out trace/synth-ddp.json --ranks 4 >/dev/null
for s in gpipe 1f1b; do
  "$ringlab" view --synth $s --out trace/synth-$s.json --ranks 4 --microbatches 4 >/dev/null
done
# a hang and a mismatch: the watchdog's and the mismatch check's flight dumps (exit 3 is the point)
"$ringlab" bench all_reduce --ranks 4 -b 1K -e 4K --fault hang:rank=2:seq=3 --timeout 0.5 \
  --trace trace/hang.json >/dev/null 2>&1 || true
"$ringlab" bench all_reduce --ranks 3 -b 1K -e 4K --fault mismatch:rank=1:seq=2 --timeout 2 \
  --trace trace/mismatch.json >/dev/null 2>&1 || true
mv trace/*.flight.json flight/
for f in "$here"/labs/*/answers.txt; do cp "$f" "answers/$(basename "$(dirname "$f")").txt"; done
printf -- '--ranks\n4\n--timeout\n0.5\n--seed\n7\n--hw\na100-pcie\n--trace\nrun.json\n--tui=pipeline\n' > options/common
# each fault kind as --help states it, the placeholders made numbers (R, S .. -> 1, 3 ..)
"$ringlab" bench --help 2>&1 | sed -n 's/^ *\([a-z-]*:[^ ]*=[^ ]*\) .*/\1/p' |
  sed 's/=R/=1/g; s/=S/=3/g; s/=X/=5/g; s/=L/=0/g; s/=E/=2/g; s/=F/=0.5/g; s/\[\(.*\)\]/\1/' | while read -r spec; do
  printf -- '--fault\n%s\n--steps\n1e3\n-b\n64M\n--at\n1.5ms\n' "$spec" > "options/fault-${spec%%:*}"
done
