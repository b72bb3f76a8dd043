#!/usr/bin/env bash
# setup.sh — Gradescope runs this once, as root, when it builds the autograder's image (Ubuntu
# 22.04; Debian 12 works the same): it installs the packages and builds everything but the
# learner's objects, so that grading a submission recompiles only the learner's files.
#   AUTOGRADER_ROOT   where Gradescope's folders are (default /autograder)
#   RL_AUTOGRADER_NO_APT=1   skip the package installation (already installed)
set -euo pipefail
root=${AUTOGRADER_ROOT:-/autograder}
tree=$root/source/ringlab
. "$root/source/autograder.conf"
if [ "${RL_AUTOGRADER_NO_APT:-0}" != 1 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq make util-linux coreutils
  make -C "$tree" --no-print-directory deps
fi
targets="build/results build/objcheck build/ringlab"
for lab in $LABS; do targets="$targets build/labs/$lab/grade"; done
make -C "$tree" --no-print-directory -j"$(nproc)" CUDA=0 MPI=0 NVTX=0 $targets
