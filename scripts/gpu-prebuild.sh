#!/usr/bin/env bash
# Builds what scripts/gpu-check.sh runs, on a machine without a GPU (nvcc compiles here), so the
# scarce device time goes to the checks instead of to nvcc: sm_90, Release, warnings as errors,
# no -march=native (the device machine's CPU may differ), into build-gpu; then deletes the object
# files and static libraries so the folder is small enough to travel with the working tree
# (the device tool's `carry`, 64 MiB in all). Then, on the device machine:
#   SKIP_BUILD=1 scripts/gpu-check.sh         (with build-gpu carried)
# gpu-check.sh reuses the build only if its binary runs there and the build was made for the same
# source folder; otherwise it builds as usual.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-gpu}
# The commit it is built from, recorded before building, so gpu-check.sh can tell a stale build.
head=$(git -C "$root" rev-parse HEAD 2> /dev/null || true)
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DAUTOTRAIN_CUDA=on \
  -DAUTOTRAIN_WERROR=ON -DAUTOTRAIN_NATIVE=OFF -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}"
cmake --build "$build" -j "${JOBS:-$(nproc)}" --target autotrain test_kernels test_model \
  test_train mpitest_comm mpitest_train
find "$build" \( -name '*.o' -o -name '*.a' \) -delete
if [ -n "$head" ] && git -C "$root" diff --quiet HEAD 2> /dev/null; then
  echo "$head" > "$build/prebuilt-from"
else
  rm -f "$build/prebuilt-from"  # uncommitted changes: no commit describes this build
fi
echo "gpu-prebuild: $build is $(du -sh "$build" | cut -f1); on the device machine run"
echo "  SKIP_BUILD=1 BUILD_DIR=$build scripts/gpu-check.sh   (carry $(basename "$build"))"
