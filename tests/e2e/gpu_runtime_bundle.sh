#!/usr/bin/env bash
# The device check's runtime bundle (scripts/gpu-runtime.sh; docs/gpu.md, "The device check"):
# what `pack` gathers for this build lets the binary start, launch under mpirun and train with an
# HDF5 checkpoint inside a bare Debian root (debootstrap's minbase: no Open MPI, HDF5, Boost,
# yaml-cpp, Gloo or OpenBLAS), once `install` has added what was missing there, and only that.
# CUDA's libraries are mounted at a folder of their own there, as a CUDA image has them, for
# `install` to find. Skipped (77) unless run as root with debootstrap and mount namespaces, or
# when the Debian mirror cannot be reached.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
if [ "$(id -u)" != 0 ] || ! command -v debootstrap > /dev/null ||
  ! unshare --mount --propagation private true 2> /dev/null; then
  echo "gpu_runtime_bundle: skipped: needs root, debootstrap and mount namespaces (unshare)"
  exit 77
fi
src=$AUTOTRAIN_SOURCE_DIR
work=$(mktemp -d)
root=$work/root
# The chroot's mounts live in a private mount namespace (below) and end with it, so nothing is
# mounted here any more when the folder is removed.
trap 'rm -rf --one-file-system "$work"' EXIT

if ! timeout 600 debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian \
  > "$work/debootstrap.log" 2>&1; then
  tail -n 5 "$work/debootstrap.log"
  echo "gpu_runtime_bundle: skipped: debootstrap could not build a Debian root (mirror unreachable?)"
  exit 77
fi

# The bundle, packed from a copy of this build's binary (pack writes next to it).
mkdir -p "$work/build"
cp "$AUTOTRAIN_BIN" "$work/build/autotrain"
"$src/scripts/gpu-runtime.sh" pack "$work/build"
app=$root/opt/autotrain
mkdir -p "$app"
cp -a "$work/build" "$src/scripts/gpu-runtime.sh" "$src/tests/e2e/configs/tiny.yaml" "$app/"
cp -a "$src/data" "$app/data"
cuda_lib=$(ldd "$AUTOTRAIN_BIN" | awk '$1 ~ /^libcudart/ { print $3 }' | xargs -r dirname)

# What runs inside the root (a file, so that nothing reading stdin there eats the script).
cat > "$app/check.sh" << 'EOF'
set -euo pipefail
app=/opt/autotrain
if "$app/build/autotrain" --version > /dev/null 2>&1; then
  echo "FAIL: the binary starts before install: this root is not bare"
  exit 1
fi
"$app/gpu-runtime.sh" install "$app/build"
"$app/build/autotrain" --version
ls /usr/local/lib/autotrain-runtime/libmpi.so.40 /usr/local/lib/autotrain-runtime/libhdf5_openmpi.so.*
# What the root had stays its own: its C++ library is not replaced by the carried one.
if [ -e /usr/local/lib/autotrain-runtime/libstdc++.so.6 ]; then
  echo "FAIL: install added libstdc++.so.6, which the root has"
  exit 1
fi
cd /tmp
AUTOTRAIN_DATA_DIR=$app/data mpirun --allow-run-as-root --oversubscribe -np 2 \
  "$app/build/autotrain" train --config "$app/tiny.yaml" --max-steps 2 --project-name bundle \
  > train.log 2>&1 < /dev/null || { tail -n 30 train.log; echo "FAIL: training in the bare root"; exit 1; }
test -f bundle/checkpoints/checkpoint-2.h5 || { echo "FAIL: no HDF5 checkpoint"; exit 1; }
grep "^summary: final train loss" train.log
echo "inside the bare root: ok"
EOF

# The root's mounts live in a private mount namespace and end with it.
# shellcheck disable=SC2016  # the inner bash expands them, from its arguments
unshare --mount --propagation private /bin/bash -euo pipefail -c '
  root=$1 cuda_lib=$2
  mount -t proc proc "$root/proc"
  mkdir -p "$root/dev/shm" "$root/opt/cuda-libraries"
  mount -t tmpfs tmpfs "$root/dev/shm"
  if [ -n "$cuda_lib" ]; then mount --bind -o ro "$cuda_lib" "$root/opt/cuda-libraries"; fi
  chroot "$root" /bin/bash /opt/autotrain/check.sh
' check "$root" "$cuda_lib" < /dev/null | tee "$work/check.log"
grep -q "^inside the bare root: ok$" "$work/check.log"
echo "gpu_runtime_bundle: ok"
