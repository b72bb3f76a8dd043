#!/usr/bin/env bash
# gpu-check.sh — `make gpu-check`: on a machine with an NVIDIA GPU, build what the check needs
# (GPU code for this GPU's architecture only) and print one table:
#   1. every op of ops.h on the GPU against the CPU reference (build/gpu_check: max relative
#      error, tolerance, PASS/FAIL), measured trace times, the device transport's reduction;
#   2. GEMM TFLOP/s (bf16, f32; random inputs) against the profile's datasheet peak and the best
#      rate measured here;
#   3. `ringlab bench` (nccl-tests format; every #wrong must be 0): every collective on the
#      device-memory transport (4 ranks on GPU 0) and on NCCL with one rank; one process per
#      rank by RANK/WORLD_SIZE and by mpirun (a world of one process, or one per GPU with >= 2;
#      also with the check of the ranks' calls, RL_CHECK_COLLECTIVES=1);
#   4. lab 28 (reference solution) with --backend cuda on 1 and 4 ranks beside the sim run of
#      the same seed: final loss within a relative tolerance, and the measured overlap
#      (CUDA-event timeline); labs 29-31 on cuda as informational rows;
#   5. NVTX ranges of lab 28 on cuda (4 ranks, 2 steps) seen through NVTX's injection interface
#      (build/nvtx_probe.so): ranges per name for key ops and all_reduce against the trace,
#      pushes and pops balanced, nothing open at exit;
#   6. the unit suites that behave differently with a GPU (backend, gpu_ops, dist; needs Check);
#   7. compute-sanitizer memcheck on lab 28 (4 ranks): no memory errors.
# Every step has a time limit (STEP_LIMIT, default 240 s; the first run on one H200 took 52 s,
# build included) and a failed step prints a line and the check
# goes on. With $OUT set, the summary table goes to $OUT/gpu-check.txt and the full output to
# $OUT/gpu-check.log (also build.log, sanitizer.log and lab 28's traces). Record the output
# in docs/gpu-runs.md with the date and the machine.
set -u
cd "$(dirname "$0")/.."
STEP_LIMIT=${STEP_LIMIT:-240}
LOSS_TOL=${LOSS_TOL:-1e-2}
LOG=$(mktemp /tmp/ringlab-gpu-check.XXXXXX)
SUMMARY=$(mktemp /tmp/ringlab-gpu-summary.XXXXXX)
status=0
say() { printf '\n### %s\n' "$*"; }
# run LIMIT CMD...: a step with a time limit (killed 10 s after it), its status noted
run() {
  local lim=$1; shift
  timeout -k 10 "$lim" "$@"; local rc=$?
  [ $rc -eq 0 ] || { [ $rc -eq 124 ] && echo "(timed out after ${lim}s: $*)" || echo "(exit status $rc: $*)"; status=1; }
  return $rc
}
result() { printf '| %-44s | %-58s | %-4s |\n' "$1" "$2" "$3" >>"$SUMMARY"; [ "$3" = PASS ] || [ "$3" = "-" ] || status=1; }

main() {
export PATH="$PATH:/usr/local/cuda/bin"
if ! command -v make >/dev/null && ls .gpu-deps/make_*.deb >/dev/null 2>&1; then
  dpkg -x .gpu-deps/make_*.deb /tmp/ringlab-make && export PATH="/tmp/ringlab-make/usr/bin:$PATH"
  echo "make unpacked from .gpu-deps/"
fi
say "machine"
date -u '+%Y-%m-%d %H:%M UTC'
nvidia-smi --query-gpu=index,name,memory.total,driver_version,compute_cap --format=csv,noheader 2>/dev/null \
  || echo "nvidia-smi not found"
command -v nvcc >/dev/null && nvcc --version | tail -1 || { echo "nvcc not found: install the CUDA toolkit"; return 2; }
ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
ngpus=${ngpus:-0}
echo "GPUs: $ngpus"
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
case "$cc" in ''|*[!0-9]*) cc=90 ;; esac

# NCCL: the toolkit's, else the Python wheel's (nvidia-nccl-cu12 / nvidia-nccl-cu13).
nccl_home=""
if ! ls /usr/local/cuda/include/nccl.h /usr/include/nccl.h /usr/local/include/nccl.h 2>/dev/null | grep -q .; then
  for py in python3 python; do
    command -v $py >/dev/null || continue
    for site in $($py -c 'import site,sys; print(" ".join(site.getsitepackages()+[site.getusersitepackages()]))' 2>/dev/null); do
      [ -f "$site/nvidia/nccl/include/nccl.h" ] && { nccl_home="$site/nvidia/nccl"; break 2; }
    done
  done
  [ -n "$nccl_home" ] && echo "NCCL from the Python wheel: $nccl_home ($(ls "$nccl_home"/lib 2>/dev/null | tr '\n' ' '))" \
    || echo "NCCL not found: only the device-memory transport"
fi

# The GPU machine has no network: the JSON libraries (jansson writes traces, yajl reads them)
# come as Debian packages carried in .gpu-deps/ (made on the development machine; see
# docs/gpu-runs.md).
for lib in jansson:jansson.h yajl:yajl/yajl_parse.h; do
  name=${lib%%:*} header=${lib#*:}
  [ -f "/usr/include/$header" ] && continue
  if ls .gpu-deps/lib"$name"*.deb >/dev/null 2>&1; then
    for f in .gpu-deps/lib"$name"*.deb; do dpkg -x "$f" /; done
    ldconfig 2>/dev/null
    echo "$name unpacked from .gpu-deps/"
  else
    echo "$name (a JSON library) is missing and this machine has no network. On the development machine:"
    echo "mkdir -p .gpu-deps && (cd .gpu-deps && apt-get download libjansson4 libjansson-dev libyajl2 libyajl-dev),"
    echo "then bring .gpu-deps along with the working tree (docs/gpu-runs.md)."
    result "dependencies" "$name missing (bring .gpu-deps)" FAIL; return 2
  fi
done

# Check (the unit tests' framework), carried the same way, so the GPU-aware unit suites run here too
if [ ! -f /usr/include/check.h ] && ls .gpu-deps/check_*.deb >/dev/null 2>&1; then
  for f in .gpu-deps/check_*.deb .gpu-deps/libsubunit*.deb; do dpkg -x "$f" /; done
  ldconfig 2>/dev/null
  echo "Check unpacked from .gpu-deps/"
fi

say "build (GPU code for sm_$cc only)"
lab=$(ls -d labs/28_* 2>/dev/null | head -1); lab=${lab#labs/}
others=$(ls -d labs/29_* labs/30_* labs/31_* 2>/dev/null | sed 's|^labs/\(.*\)|build/solutions/\1/run|' | tr '\n' ' ')
targets="build/ringlab build/gpu_check ${lab:+build/solutions/$lab/run} $others"
jobs=$(nproc 2>/dev/null || echo 8)
if ! run 300 make -j"$jobs" ${nccl_home:+NCCL_HOME=$nccl_home} CUDA_ARCH="-gencode arch=compute_$cc,code=sm_$cc" \
     CUDA_ARCH_NAME="sm_$cc" banner $targets >/tmp/ringlab-gpu-build.log 2>&1; then
  tail -30 /tmp/ringlab-gpu-build.log
  echo "the build failed (log above)"; result "build" "make $targets" FAIL; return 1
fi
grep -E '✓|✗' /tmp/ringlab-gpu-build.log | head -10
result "build (sm_$cc)" "make $targets" PASS

if [ -f /usr/include/check.h ]; then
  make -j"$jobs" ${nccl_home:+NCCL_HOME=$nccl_home} CUDA_ARCH="-gencode arch=compute_$cc,code=sm_$cc" \
    CUDA_ARCH_NAME="sm_$cc" build/tests/run_tests >>/tmp/ringlab-gpu-build.log 2>&1 || echo "(the unit tests did not build: see build.log)"
fi

say "ops on the GPU vs the CPU reference; trace times; GEMM"
run "$STEP_LIMIT" build/gpu_check | tee /tmp/ringlab-gpu-ops.log; rc=${PIPESTATUS[0]}
if [ "$rc" -eq 2 ]; then
  echo "gpu-check: no usable GPU on this machine; it needs an NVIDIA GPU and driver (see README, GPUs)"; return 2
fi
nrows=$(grep -cE '^\| .* \| (PASS|FAIL) \|$' /tmp/ringlab-gpu-ops.log)
nfail=$(grep -cE '^\| .* \| FAIL \|$' /tmp/ringlab-gpu-ops.log)
result "ops vs CPU (build/gpu_check)" "$nrows checks, $nfail failed (table above)" "$([ "$rc" -eq 0 ] && echo PASS || echo FAIL)"
grep -E '^\| (bf16|f32) [0-9]+\^3' /tmp/ringlab-gpu-ops.log | while IFS='|' read -r _ what tf pct best _; do
  result "GEMM $(echo $what)" "$(echo $tf) TFLOP/s ($(echo $pct) datasheet; $(echo $best) best measured)" "-"
done

bench_row() { # $1 label, $2 log, $3 rc
  local wrong oob bw
  wrong=$(awk '!/^#/ && NF >= 13 { w += $9 + $13 } END { print w + 0 }' "$2")
  oob=$(sed -n 's/^# Out of bounds values : \([0-9]*\).*/\1/p' "$2" | tail -1)
  bw=$(sed -n 's/^# Avg bus bandwidth *: *\([0-9.]*\).*/\1/p' "$2" | tail -1)
  result "$1" "#wrong $wrong, out of bounds ${oob:-?}, avg busbw ${bw:-?} GB/s" \
    "$([ "$3" -eq 0 ] && [ "$wrong" = 0 ] && [ "${oob:-x}" = 0 ] && echo PASS || echo FAIL)"
}
# bench LABEL RANKS ENV... -- ARGS...: one bench run, its row in the summary
bench() {
  local label=$1 ranks=$2; shift 2
  local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  if [ -n "${bench_hung:-}" ]; then result "$label" "skipped: $bench_hung timed out" FAIL; return; fi
  echo "-- $label"
  local launch=()
  if [ "${*: -1}" = "--mpirun" ]; then launch=(mpirun -np "$ranks"); set -- "${@:1:$(($# - 1))}"; fi
  env "${envs[@]}" timeout -k 10 "$STEP_LIMIT" "${launch[@]}" build/ringlab bench "$@" --backend cuda --ranks "$ranks" \
    >/tmp/ringlab-gpu-bench.log 2>&1; local rc=$?
  cat /tmp/ringlab-gpu-bench.log
  [ $rc -eq 124 ] || [ $rc -eq 137 ] && bench_hung="$label"
  bench_row "$label" /tmp/ringlab-gpu-bench.log "$rc"
}
say "bench: device-memory transport (4 ranks on GPU 0; NCCL not used), every collective"
bench "all_reduce, devmem, 4 ranks, to 256M" 4 CUDA_VISIBLE_DEVICES=0 RL_NO_NCCL=1 -- all_reduce -b 1M -e 256M -f 4 -n 10 -w 3
for coll in reduce_scatter all_gather broadcast reduce all_to_all all_to_allv sendrecv; do
  bench "$coll, devmem, 4 ranks" 4 CUDA_VISIBLE_DEVICES=0 RL_NO_NCCL=1 -- $coll -b 1K -e 16M -f 16 -n 5 -w 2
done
bench "all_reduce bf16, devmem, 4 ranks" 4 CUDA_VISIBLE_DEVICES=0 RL_NO_NCCL=1 -- all_reduce -d bfloat16 -b 1K -e 16M -f 16 -n 5 -w 2
say "bench: NCCL, one rank per GPU"
for coll in all_reduce reduce_scatter all_gather broadcast all_to_all sendrecv; do
  bench "$coll, NCCL, 1 rank" 1 -- $coll -b 1K -e 64M -f 64 -n 5 -w 2
done
if [ "$ngpus" -ge 2 ]; then
  bench "all_reduce, NCCL, $ngpus ranks" "$ngpus" -- all_reduce -b 8 -e 256M -f 4 -n 10 -w 3
else
  result "bench all_reduce, NCCL, >= 2 ranks" "skipped: one GPU (NCCL needs one GPU per rank)" "-"
fi

say "one process per rank (docs/launch.md): a world of one process, by RANK/WORLD_SIZE and by mpirun"
bench "all_reduce, 1 process by RANK/WORLD_SIZE (TCP id)" 1 RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_PORT=29611 -- \
  all_reduce -b 1K -e 16M -f 16 -n 5 -w 2
bench "all_reduce, 1 process, calls checked" 1 RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_PORT=29613 \
  RL_CHECK_COLLECTIVES=1 -- all_reduce -b 1K -e 1M -f 32 -n 5 -w 2
if command -v mpirun >/dev/null && grep -q '✓ MPI' /tmp/ringlab-gpu-build.log; then
  bench "all_reduce, 1 process by mpirun (MPI_Bcast id)" 1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 -- \
    all_reduce -b 1K -e 16M -f 16 -n 5 -w 2 --mpirun
else
  result "all_reduce, 1 process by mpirun" "skipped: no mpirun, or a build without MPI" "-"
fi
if [ "$ngpus" -ge 2 ]; then
  echo "-- all_reduce, $ngpus processes by RANK/WORLD_SIZE"
  for r in $(seq 1 $((ngpus - 1))); do
    RANK=$r WORLD_SIZE=$ngpus LOCAL_RANK=$r MASTER_PORT=29612 timeout -k 10 "$STEP_LIMIT" build/ringlab bench \
      all_reduce --backend cuda -b 8 -e 256M -f 4 -n 10 -w 3 >/tmp/ringlab-dist-$r.log 2>&1 &
  done
  RANK=0 WORLD_SIZE=$ngpus LOCAL_RANK=0 MASTER_PORT=29612 timeout -k 10 "$STEP_LIMIT" build/ringlab bench \
    all_reduce --backend cuda -b 8 -e 256M -f 4 -n 10 -w 3 >/tmp/ringlab-gpu-bench.log 2>&1; rc=$?
  wait
  cat /tmp/ringlab-gpu-bench.log /tmp/ringlab-dist-*.log
  bench_row "all_reduce, $ngpus processes (NCCL)" /tmp/ringlab-gpu-bench.log "$rc"
fi

say "lab 28 (reference solution), --backend cuda vs sim, same seed"
if [ -z "$lab" ]; then
  echo "(lab 28 does not exist in this tree yet: skipped)"
  result "lab 28" "skipped: not in this tree" "-"
else
  for ranks in 1 4; do
    for be in sim cuda; do
      echo "-- $ranks rank(s), --backend $be"
      tr=""; [ "$be" = cuda ] && [ -n "${OUT:-}" ] && tr="--trace $OUT/lab28-cuda-$ranks.json"
      run "$STEP_LIMIT" build/solutions/$lab/run --ranks $ranks --backend $be --seed 1 $tr >/tmp/ringlab-lab28-$be.log 2>&1
      eval "rc_$be=\$?"
      grep -E '^(Loss|Machine)|step time|ringlab:|overlap:|no collective' /tmp/ringlab-lab28-$be.log
      eval "loss_$be=\$(sed -n 's/^Loss .*, \([0-9.eE+-]*\) after step.*/\1/p' /tmp/ringlab-lab28-$be.log | tail -1)"
      eval "ovl_$be=\$(sed -n 's/.*-> overlap: \([0-9]*%\).*/\1/p;s/.*\(no collective ran\).*/none (no collective)/p' /tmp/ringlab-lab28-$be.log | tail -1)"
    done
    verdict=$(awk -v a="${loss_cuda:-x}" -v b="${loss_sim:-y}" -v t="$LOSS_TOL" 'BEGIN {
      if (a == "x" || b == "y" || b + 0 == 0) { print "FAIL -"; exit }
      d = (a - b) / b; if (d < 0) d = -d; printf "%s %.2e\n", (d <= t ? "PASS" : "FAIL"), d }')
    result "lab 28, $ranks rank(s): final loss cuda vs sim" \
      "cuda ${loss_cuda:-none} sim ${loss_sim:-none} rel ${verdict#* } (tol $LOSS_TOL)" \
      "$([ "${rc_cuda:-1}" -eq 0 ] && [ "${rc_sim:-1}" -eq 0 ] && echo "${verdict%% *}" || echo FAIL)"
    result "lab 28, $ranks rank(s): comm hidden" "measured ${ovl_cuda:-none} (CUDA events); modelled ${ovl_sim:-none} (sim)" "-"
  done
fi

say "NVTX ranges: lab 28, 4 ranks, 2 steps, --backend cuda, through NVTX's injection interface (build/nvtx_probe.so)"
nvtx_h=$(ls "$(dirname "$(dirname "$(command -v nvcc)")")/include/nvtx3/nvToolsExt.h" \
  /usr/local/cuda/include/nvtx3/nvToolsExt.h /usr/include/nvtx3/nvToolsExt.h 2>/dev/null | head -1)
nvtx_rep=/tmp/ringlab-nvtx-report.txt nvtx_trace=/tmp/ringlab-nvtx-trace.json
if [ -z "$lab" ]; then
  result "NVTX ranges, lab 28" "skipped: lab 28 not in this tree" "-"
elif [ -z "$nvtx_h" ]; then
  result "NVTX ranges, lab 28" "skipped: no nvtx3 header" "-"
elif ! make build/nvtx_probe.so >>/tmp/ringlab-gpu-build.log 2>&1; then
  result "NVTX ranges, lab 28" "build/nvtx_probe.so did not build (see build.log)" FAIL
else
  rm -f "$nvtx_rep" "$nvtx_trace"
  run "$STEP_LIMIT" env NVTX_INJECTION64_PATH="$PWD/build/nvtx_probe.so" RINGLAB_NVTX_REPORT="$nvtx_rep" \
    build/solutions/$lab/run --ranks 4 --steps 2 --backend cuda --seed 1 --trace "$nvtx_trace" \
    >/tmp/ringlab-lab28-nvtx.log 2>&1; rc=$?
  cat "$nvtx_rep" 2>/dev/null || { tail -5 /tmp/ringlab-lab28-nvtx.log; echo "(no NVTX report: the probe was not loaded)"; }
  [ -n "${OUT:-}" ] && mkdir -p "$OUT" && cp "$nvtx_rep" "$OUT/nvtx-report.txt" 2>/dev/null
  # nv KEY: the number on the report's "KEY N" line (KEY "pushes:" or a range name), or -1
  nv() { [ -f "$nvtx_rep" ] || { echo -1; return; }
    awk -v k="$1" '$1 == k && NF == 2 && $2 ~ /^[0-9]+$/ { print $2; f = 1; exit } END { if (!f) print -1 }' "$nvtx_rep"; }
  # Each op and collective of the traced 4-rank run has one range, and lab 28's untraced 1-rank
  # scaling run after it (2 steps, same per-rank work) a quarter as many: ranges = trace x 5/4.
  nvtx_row="ranges/trace events:" nvtx_ok=1
  for name in matmul adamw all_reduce; do
    t=$(grep -o "\"name\":\"$name\"" "$nvtx_trace" 2>/dev/null | wc -l); n=$(nv "$name")
    nvtx_row+=" $name $n/$t"
    [ "$t" -gt 0 ] && [ $((t % 4)) -eq 0 ] && [ "$n" -eq $((t + t / 4)) ] || nvtx_ok=0
  done
  p=$(nv pushes:) q=$(nv pops:) u=$(nv pops_without_push:) o=$(nv open_at_exit:)
  nvtx_row+="; push $p pop $q, $u unmatched, $o open"
  [ "$p" -gt 0 ] && [ "$p" -eq "$q" ] && [ "$u" -eq 0 ] && [ "$o" -eq 0 ] || nvtx_ok=0
  result "NVTX ranges, lab 28 (4 ranks + 1-rank run)" "$nvtx_row" \
    "$([ "$rc" -eq 0 ] && [ "$nvtx_ok" -eq 1 ] && echo PASS || echo FAIL)"
fi

say "labs 29-31 (reference solutions) on --backend cuda, 4 ranks (informational: beyond lab 28)"
for bin in $others; do
  name=${bin#build/solutions/}; name=${name%/run}
  for be in sim cuda; do
    timeout -k 10 "$STEP_LIMIT" $bin --ranks 4 --backend $be --seed 1 >/tmp/ringlab-lab-$be.log 2>&1
    eval "rc_$be=\$?"
    eval "loss_$be=\$(sed -n 's/^Loss .*, \([0-9.eE+-]*\) after step.*/\1/p' /tmp/ringlab-lab-$be.log | tail -1)"
  done
  echo "-- $name: sim exit $rc_sim, cuda exit $rc_cuda"; grep -E '^ringlab:|rror' /tmp/ringlab-lab-cuda.log | head -5
  why=$(grep -E '^ringlab: ' /tmp/ringlab-lab-cuda.log | grep -v -- '--backend cuda: ' | head -1 | cut -c1-50)
  result "lab ${name%%_*} (info), 4 ranks, cuda" "exit $rc_cuda (sim $rc_sim)${loss_cuda:+; loss cuda $loss_cuda sim $loss_sim}${why:+; $why}" "-"
done

say "unit suites that behave differently on a GPU machine (backend, gpu_ops, dist)"
if [ -x build/tests/run_tests ]; then
  for suite in backend gpu_ops dist; do
    RINGLAB_BUILD=build CK_RUN_SUITE=$suite timeout -k 10 "$STEP_LIMIT" build/tests/run_tests >/tmp/ringlab-unit.log 2>&1
    rc=$?
    grep -vE '^Running suite' /tmp/ringlab-unit.log | tail -5
    line=$(grep -E '^[0-9]+%: Checks:' /tmp/ringlab-unit.log | tail -1)
    result "unit suite $suite on the GPU machine" "${line:-no summary (exit $rc)}" "$([ $rc -eq 0 ] && echo PASS || echo FAIL)"
  done
else
  result "unit suites on the GPU machine" "skipped: no Check here (bring its .debs in .gpu-deps)" "-"
fi

say "compute-sanitizer memcheck: lab 28, 4 ranks, 2 steps, --backend cuda"
if command -v compute-sanitizer >/dev/null && [ -n "$lab" ]; then
  run 180 compute-sanitizer --tool memcheck --leak-check full \
    build/solutions/$lab/run --ranks 4 --backend cuda --steps 2 >/tmp/ringlab-sanitizer.log 2>&1; rc=$?
  tail -5 /tmp/ringlab-sanitizer.log
  # memory errors fail the check; API errors are listed (NCCL probes kernels it has no image for)
  memerr=$(grep -cE '^========= (Invalid|Misaligned|Out-of-range|Hardware|Uninitialized|Race|Leaked)' /tmp/ringlab-sanitizer.log)
  apierr=$(grep -c 'Program hit' /tmp/ringlab-sanitizer.log)
  apiwhere=$(awk '/Program hit/ { f = 1; next } f && /Host Frame/ && !/libcuda/ { sub(/.* in /, ""); print; f = 0 }' \
    /tmp/ringlab-sanitizer.log | sort | uniq -c | awk '{ printf "%s%s x%s", (NR > 1 ? ", " : ""), $2, $1 }')
  result "compute-sanitizer memcheck, lab 28 (4 ranks)" "$memerr memory errors; $apierr API errors${apiwhere:+ (from $apiwhere)}" \
    "$([ "$memerr" -eq 0 ] && grep -q 'ERROR SUMMARY' /tmp/ringlab-sanitizer.log && echo PASS || echo FAIL)"
else
  result "compute-sanitizer memcheck" "skipped: compute-sanitizer not found" "-"
fi
return $status
}

main 2>&1 | tee "$LOG"
mrc=${PIPESTATUS[0]}
[ "$mrc" -eq 0 ] || status=$mrc
grep -q '| FAIL |' "$SUMMARY" && status=1
{
  echo
  echo "## make gpu-check summary ($(date -u '+%Y-%m-%d %H:%M UTC'), $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1))"
  echo
  printf '| %-44s | %-58s | %-4s |\n' "check" "result" ""
  echo "|----------------------------------------------|------------------------------------------------------------|------|"
  cat "$SUMMARY"
  echo
  [ $status -eq 0 ] && echo "gpu-check: every check passed" || echo "gpu-check: some checks failed or did not run (see above)"
} | tee -a "$LOG"
if [ -n "${OUT:-}" ] && mkdir -p "$OUT" 2>/dev/null; then
  sed -n '/^## make gpu-check summary/,$p' "$LOG" >"$OUT/gpu-check.txt"
  cp "$LOG" "$OUT/gpu-check.log"
  cp /tmp/ringlab-gpu-build.log "$OUT/build.log" 2>/dev/null
  cp /tmp/ringlab-sanitizer.log "$OUT/sanitizer.log" 2>/dev/null
fi
rm -f "$SUMMARY" "$LOG"
exit $status
