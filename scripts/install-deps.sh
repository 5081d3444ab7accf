#!/usr/bin/env bash
# Installs every Debian 12 package that building, testing and running autotrain needs.
# Idempotent: packages already present are left as they are. Needs root (or sudo).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  openmpi-bin libopenmpi-dev
  libhdf5-openmpi-dev hdf5-tools python3-h5py
  python3-torch python3-numpy  # the PyTorch reference of the model tests (tests/e2e/torch_gpt2.py)
  python3-protobuf python3-crcmod  # an independent reader of TensorBoard's event files
  libboost-program-options-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-openmp-dev libdnnl-dev
  ocl-icd-opencl-dev            # oneDNN's CMake package requires OpenCL (only a Recommends of libdnnl-dev)
  nlohmann-json3-dev libyaml-cpp-dev
  libpcre2-dev libutf8proc-dev
  libsnappy-dev libzstd-dev zlib1g-dev  # the codecs of Parquet files (src/data/parquet/)
  libgloo-dev
  liburing-dev                 # io_uring: the optimizer state offloaded to NVMe (src/zero/async_file.cpp)
  slurm-wlm munge libpmix-dev
  clang-format
  clang libclang-rt-dev libomp-dev
  debootstrap
  iproute2 util-linux          # the simulated cluster: ip, tc, nsenter, unshare
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node and npm run the Hugging Face reference tokenizers in the tests; any install that puts
# them on PATH will do (Debian's packages otherwise).
command -v node >/dev/null && command -v npm >/dev/null || missing+=(nodejs npm)

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
