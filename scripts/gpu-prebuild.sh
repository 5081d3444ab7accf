#!/usr/bin/env bash
# Builds what scripts/gpu-check.sh runs, on a machine without a GPU (nvcc compiles here), so the
# scarce device time goes to the checks instead of to nvcc: sm_90, Release, warnings as errors,
# no -march=native (the device machine's CPU may differ), into build-gpu; then deletes the object
# files and static libraries, records the sources' checksums, adds the shared libraries and the
# Open MPI runtime that a machine with only CUDA lacks (scripts/gpu-runtime.sh pack), and packs
# the folder into gpu-bundle.tar.gz (about 42 MB), small enough for the device tool's `carry`
# (64 MiB in all). cuDNN is not packed (its engine libraries are about 500 MB): the binary links
# libcudnn.so.9 and gpu-runtime.sh install finds it on the device machine (PyTorch's
# nvidia-cudnn-cu13 package there). Then, on the device machine, with gpu-bundle.tar.gz carried:
#   SKIP_BUILD=1 scripts/gpu-check.sh
# gpu-check.sh unpacks it, installs the missing libraries (as root), and reuses the build if its
# binary runs there; a build from other sources is used but reported stale.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-gpu}
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DAUTOTRAIN_CUDA=on \
  -DAUTOTRAIN_WERROR=ON -DAUTOTRAIN_NATIVE=OFF -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}"
# shellcheck source=scripts/gpu-targets.sh
source "$root/scripts/gpu-targets.sh"
cmake --build "$build" -j "${JOBS:-$(nproc)}" --target "${gpu_targets[@]}"
find "$build" \( -name '*.o' -o -name '*.a' \) -delete
# The checksums of what is compiled into the build (not the scripts and end-to-end tests that
# run from the tree): the device machine gets no .git, and gpu-check.sh compares these.
(cd "$root" && git ls-files -z -- CMakeLists.txt cmake include src tests/CMakeLists.txt \
  'tests/*.cpp' 'tests/*.hpp' 'tests/*.cu' | xargs -0 sha256sum) \
  > "$build/prebuilt-sources.sha256"
# The libraries and Open MPI runtime that a machine with only CUDA lacks (scripts/gpu-runtime.sh).
"$root/scripts/gpu-runtime.sh" pack "$build"
# One compressed file for the device tool's carry (64 MiB in all with the working tree; the
# folder is about 125 MB). gzip: the device machine's image may have no xz.
bundle=$root/gpu-bundle.tar.gz
tar -cf - -C "$(dirname "$build")" "$(basename "$build")" | gzip -9 > "$bundle"
if [ "$(stat -c %s "$bundle")" -gt $((56 << 20)) ]; then
  echo "gpu-prebuild: warning: $bundle is over 56 MiB; with the working tree it may not fit the" \
    "device tool's 64 MiB"
fi
echo "gpu-prebuild: $build is $(du -sh "$build" | cut -f1), $bundle $(du -sh "$bundle" | cut -f1);"
echo "on the device machine (carry gpu-bundle.tar.gz) run"
echo "  SKIP_BUILD=1 scripts/gpu-check.sh"
