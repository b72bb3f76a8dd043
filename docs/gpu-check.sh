#!/usr/bin/env bash
# gpu-check.sh — `make gpu-check`: on a machine with an NVIDIA GPU, build ringlab with the
# GPU backend and print a short table: every GPU kernel vs the CPU reference, GEMM TFLOP/s,
# `bench` on the device-memory transport (and on NCCL with >= 2 GPUs) in nccl-tests format,
# and lab 28 (reference solution) with --backend cuda on 1 and 4 ranks beside the sim run of
# the same seed. Paste the output into docs/gpu-runs.md with the date and the machine.
# Each step has a time limit; a failed step prints a line and the check goes on.
set -u
cd "$(dirname "$0")/.."
STEP_LIMIT=${STEP_LIMIT:-300}
status=0
say() { printf '\n### %s\n' "$*"; }
run() { timeout "$STEP_LIMIT" "$@"; local rc=$?; [ $rc -eq 0 ] || { echo "(exit status $rc: $*)"; status=1; }; return $rc; }

say "machine"
date -u '+%Y-%m-%d %H:%M UTC'
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader 2>/dev/null \
  || echo "nvidia-smi not found"
command -v nvcc >/dev/null && nvcc --version | tail -1 || { echo "nvcc not found: install the CUDA toolkit"; exit 2; }

# NCCL: the toolkit's, else the Python wheel's (nvidia-nccl-cu12 / nvidia-nccl-cu13).
nccl_home=""
if ! ls /usr/local/cuda/include/nccl.h /usr/include/nccl.h /usr/local/include/nccl.h >/dev/null 2>&1; then
  for py in python3 python; do
    command -v $py >/dev/null || continue
    for site in $($py -c 'import site,sys; print(" ".join(site.getsitepackages()+[site.getusersitepackages()]))' 2>/dev/null); do
      [ -f "$site/nvidia/nccl/include/nccl.h" ] && { nccl_home="$site/nvidia/nccl"; break 2; }
    done
  done
  [ -n "$nccl_home" ] && echo "NCCL from the Python wheel: $nccl_home" || echo "NCCL not found: only the device-memory transport"
fi

say "build"
jobs=$(nproc 2>/dev/null || echo 4)
if ! run make -j"$jobs" ${nccl_home:+NCCL_HOME=$nccl_home} all build/gpu_check >/tmp/ringlab-gpu-build.log 2>&1; then
  tail -30 /tmp/ringlab-gpu-build.log; exit 1
fi
grep -E '✓|✗' /tmp/ringlab-gpu-build.log | head -10
ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || echo 0)
echo "GPUs: $ngpus"

say "ops on the GPU vs the CPU reference; GEMM"
timeout "$STEP_LIMIT" build/gpu_check; rc=$?
if [ $rc -eq 2 ]; then
  echo "gpu-check: no usable GPU on this machine; it needs an NVIDIA GPU and driver (see README, GPUs)"; exit 2
fi
[ $rc -eq 0 ] || status=1

say "bench: device-memory transport (4 ranks on GPU 0; NCCL not used)"
CUDA_VISIBLE_DEVICES=0 RL_NO_NCCL=1 run build/ringlab bench all_reduce --backend cuda --ranks 4 -b 8 -e 4M -f 8 -n 5 -w 2
if [ "$ngpus" -ge 2 ]; then
  say "bench: NCCL, one GPU per rank ($ngpus ranks)"
  run build/ringlab bench all_reduce --backend cuda --ranks "$ngpus" -b 8 -e 4M -f 8 -n 5 -w 2
  run build/ringlab bench all_gather --backend cuda --ranks "$ngpus" -b 8 -e 4M -f 8 -n 5 -w 2
else
  echo "(one GPU: the NCCL bench needs >= 2 GPUs; skipped)"
fi

say "lab 28 (reference solution), --backend cuda vs sim, same seed"
lab=$(ls -d labs/28_* 2>/dev/null | head -1)
if [ -z "$lab" ]; then
  echo "(lab 28 does not exist in this tree yet: skipped)"
else
  for ranks in 1 4; do
    for be in sim cuda; do
      echo "-- $ranks rank(s), --backend $be"
      run make -s run LAB=28 SOLUTION=1 RANKS=$ranks ARGS="--backend $be --seed 1" >/tmp/ringlab-lab28.log 2>&1
      tail -6 /tmp/ringlab-lab28.log
    done
  done
fi

say "result"
[ $status -eq 0 ] && echo "gpu-check: every step ran" || echo "gpu-check: some steps failed (see above)"
exit $status
