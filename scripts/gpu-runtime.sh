#!/usr/bin/env bash
# Carries autotrain's runtime to a GPU machine whose image has CUDA but not this project's other
# dependencies. The device machine this project borrows runs a CUDA and Python image: nothing can
# be installed there from a package registry, and Open MPI, parallel HDF5, Boost, yaml-cpp, Gloo
# and OpenBLAS may all be missing, so a build made here would not even start there.
#
#   scripts/gpu-runtime.sh pack BUILD_DIR      here, by gpu-prebuild.sh: fills BUILD_DIR/runtime
#   scripts/gpu-runtime.sh install BUILD_DIR   there, as root, by gpu-check.sh when the build's
#                                              binaries do not start or mpirun is missing
#
# pack copies every shared library that the build's binaries and Open MPI's launcher and plugins
# load (except the C library's own and CUDA's, which the GPU machine has) into runtime/lib, and
# Open MPI's launcher, plugins, help and configuration files, at their absolute paths, into
# runtime/root. install adds only what is missing there: the libraries the dynamic loader cannot
# find go to /usr/local/lib/autotrain-runtime; CUDA's libraries (cuBLAS, NCCL, cuDNN) are looked up on
# the machine (the toolkit's folders, then anywhere, e.g. PyTorch's nvidia packages); Open MPI's
# tree is copied to / only where /usr/bin/mpirun does not exist, never over an existing file.
set -euo pipefail
mode=${1:-}
build=${2:-}
if [ -z "$mode" ] || [ -z "$build" ] || [ ! -x "$build/autotrain" ]; then
  echo "usage: scripts/gpu-runtime.sh pack|install BUILD_DIR (a build with BUILD_DIR/autotrain)" >&2
  exit 2
fi
runtime=$build/runtime
binaries=("$build/autotrain")
for test in test_kernels test_model test_train mpitest_comm mpitest_train bench_attention; do
  [ -x "$build/tests/$test" ] && binaries+=("$build/tests/$test")
done

# The libraries that every Linux machine has and that must match its C library: never carried.
system_library() {
  case $(basename "$1") in
    libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | libresolv.so.* | \
      libutil.so.* | ld-linux*.so.* | libcuda.so.* | libnvidia-*.so.*) return 0 ;;
  esac
  return 1
}

# CUDA's libraries: the GPU machine has its own toolkit (and PyTorch's nvidia packages). cuDNN
# among them: the binary links libcudnn.so.9 only, which loads cuDNN's engine libraries
# (libcudnn_graph, _engines_precompiled, _engines_runtime_compiled, _heuristic, ...; about 500 MB,
# far over what the device tool carries) from its own folder at run time, so its folder on the
# machine is the one to find.
cuda_library() {
  case $(basename "$1") in
    libcudart.so.* | libcublas.so.* | libcublasLt.so.* | libnccl.so.* | libcudnn*.so.*) return 0 ;;
  esac
  return 1
}

pack() {
  local mpirun_path pkglibdir pmixdir file name
  mpirun_path=$(readlink -f "$(command -v mpirun)")
  pkglibdir=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
  pmixdir=/usr/lib/$(gcc -print-multiarch)/pmix2
  rm -rf "$runtime"
  mkdir -p "$runtime/lib" "$runtime/root"
  # Open MPI at its own absolute paths: the launcher (mpirun and mpiexec name it), the daemon,
  # the folder of the plugins it opens at run time, PMIx's plugins, help texts and default
  # parameters.
  local tree=("$mpirun_path" "$(dirname "$mpirun_path")/orted" "$(dirname "$pkglibdir")"
    "$pmixdir" /usr/share/openmpi /etc/openmpi)
  for file in "${tree[@]}"; do
    [ -e "$file" ] || continue
    mkdir -p "$runtime/root$(dirname "$file")"
    cp -a "$file" "$runtime/root$(dirname "$file")/"
  done
  find "$runtime/root" \( -name '*.a' -o -name '*.la' \) -delete
  rm -rf "$runtime/root$pmixdir/include"
  ln -s "$(basename "$mpirun_path")" "$runtime/root/usr/bin/mpirun"
  ln -s "$(basename "$mpirun_path")" "$runtime/root/usr/bin/mpiexec"
  # Every library those load, by the name the loader looks for, dereferenced.
  local loaders=("${binaries[@]}")
  while IFS= read -r -d '' file; do loaders+=("$file"); done < <(
    find "$runtime/root" -type f \( -name '*.so' -o -name '*.so.*' -o -perm -u+x \) -print0)
  for file in "${loaders[@]}"; do
    { ldd "$file" 2> /dev/null || true; } | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
  done | sort -u | while read -r name file; do
    system_library "$name" || cuda_library "$name" || cp -L "$file" "$runtime/lib/$name"
  done
  echo "gpu-runtime: packed $(find "$runtime/lib" -type f | wc -l) libraries and Open MPI's" \
    "runtime ($(du -sh "$runtime" | cut -f1)) into $runtime"
}

# The libraries the dynamic loader cannot find for `files`, one name per line.
missing_libraries() {
  local file
  for file in "$@"; do
    { ldd "$file" 2> /dev/null || true; } | awk '$2 == "=>" && $3 == "not" { print $1 }'
  done | sort -u
}

# "name folder" for each library `names` that this machine has somewhere: CUDA's toolkit folders
# first, then one search of the whole file system for the rest (PyTorch's nvidia packages, ...).
find_on_machine() {
  local name dir rest=() pattern=()
  for name in "$@"; do
    for dir in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
      if [ -e "$dir/$name" ]; then
        echo "$name $dir"
        continue 2
      fi
    done
    rest+=("$name")
  done
  [ ${#rest[@]} -eq 0 ] && return 0
  for name in "${rest[@]}"; do pattern+=(-o -name "$name"); done
  find / \( -path /proc -o -path /sys -o -path /dev \) -prune -o \( "${pattern[@]:1}" \) -print \
    2> /dev/null | awk '{ n = $0; sub(/.*\//, "", n); d = $0; sub(/\/[^\/]*$/, "", d) }
                         !seen[n]++ { print n, d }'
}

# Copies the tree under `from` into `to`, file by file, leaving every existing file, link and
# folder as it is (cp -n's exit status differs between coreutils versions).
add_missing_files() {
  local from=$1 to=$2 entry
  while IFS= read -r -d '' entry; do
    if [ -d "$from/$entry" ] && [ ! -L "$from/$entry" ]; then
      mkdir -p "$to/$entry"
    elif [ ! -e "$to/$entry" ] && [ ! -L "$to/$entry" ]; then
      cp -a "$from/$entry" "$to/$entry"
    fi
  done < <(cd "$from" && find . -mindepth 1 -print0)
}

install_runtime() {
  [ "$(id -u)" = 0 ] || {
    echo "gpu-runtime install: needs root (it writes /usr/local/lib and /etc/ld.so.conf.d)" >&2
    exit 1
  }
  [ -d "$runtime/lib" ] || {
    echo "gpu-runtime install: $runtime/lib is missing: pack it first (scripts/gpu-prebuild.sh)" >&2
    exit 1
  }
  local dest=/usr/local/lib/autotrain-runtime conf=/etc/ld.so.conf.d/autotrain-runtime.conf
  local dirs=() name dir
  mkdir -p "$dest"
  if [ ! -e /usr/bin/mpirun ]; then
    echo "gpu-runtime: no /usr/bin/mpirun here: adding Open MPI's runtime (no existing file replaced)"
    add_missing_files "$runtime/root" /
    # mpirun wants ssh or rsh even for a job on this machine alone; the isolated launcher does
    # without.
    if ! command -v ssh > /dev/null && ! command -v rsh > /dev/null; then
      printf '\nplm = isolated\n' >> /etc/openmpi/openmpi-mca-params.conf
    fi
  fi
  # The build's binaries, and Open MPI's launcher and plugins where they are the carried ones.
  local loaders=("${binaries[@]}") file missing
  while IFS= read -r -d '' file; do
    file=/${file#"$runtime/root/"}
    [ -e "$file" ] && loaders+=("$file")
  done < <(find "$runtime/root" -type f \( -name '*.so' -o -name '*.so.*' -o -perm -u+x \) -print0)
  # A carried library can need another that is missing too (the loader names a missing library's
  # own needs only once it is found): rounds until nothing is missing or nothing changes.
  local before=
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    missing=$(missing_libraries "${loaders[@]}" "$dest"/*.so*)
    if [ -z "$missing" ] || [ "$missing" = "$before" ]; then break; fi
    before=$missing
    local elsewhere=()
    for name in $missing; do
      if [ -e "$runtime/lib/$name" ]; then
        cp "$runtime/lib/$name" "$dest/$name"
        echo "gpu-runtime: added $name"
      else
        elsewhere+=("$name")
      fi
    done
    if [ ${#elsewhere[@]} -gt 0 ]; then
      while read -r name dir; do
        dirs+=("$dir")
        echo "gpu-runtime: $name found in $dir"
      done < <(find_on_machine "${elsewhere[@]}")
    fi
    printf '%s\n' "$dest" "${dirs[@]}" | awk '!seen[$0]++' > "$conf"
    ldconfig
  done
  missing=$(missing_libraries "${loaders[@]}")
  if [ -n "$missing" ]; then
    echo "gpu-runtime: still missing here: $(echo "$missing" | tr '\n' ' ')" >&2
    exit 1
  fi
  echo "gpu-runtime: every library of the build is found ($conf)"
}

case $mode in
  pack) pack ;;
  install) install_runtime ;;
  *)
    echo "gpu-runtime.sh: unknown mode '$mode': expected pack or install" >&2
    exit 2
    ;;
esac
