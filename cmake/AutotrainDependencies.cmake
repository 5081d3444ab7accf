# Every external dependency is found here, once, and exposed as an imported or interface target.

find_package(MPI REQUIRED COMPONENTS C CXX)

set(HDF5_PREFER_PARALLEL TRUE)
find_package(HDF5 REQUIRED COMPONENTS C)
if(NOT HDF5_IS_PARALLEL)
  message(FATAL_ERROR "autotrain needs a parallel (MPI) HDF5 build; found a serial one at "
                      "${HDF5_INCLUDE_DIRS}. On Debian: apt-get install libhdf5-openmpi-dev")
endif()
add_library(autotrain_hdf5 INTERFACE)
target_include_directories(autotrain_hdf5 SYSTEM INTERFACE ${HDF5_INCLUDE_DIRS})
target_link_libraries(autotrain_hdf5 INTERFACE ${HDF5_C_LIBRARIES} MPI::MPI_C)
target_compile_definitions(autotrain_hdf5 INTERFACE ${HDF5_DEFINITIONS})

find_package(Boost 1.74 REQUIRED COMPONENTS program_options)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(Gloo REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(Threads REQUIRED)

# PCRE2 (the tokenizers' Split regexes: Unicode properties, look-ahead, JIT) and utf8proc
# (the NFC normalizer), through pkg-config.
find_package(PkgConfig REQUIRED)
pkg_check_modules(AUTOTRAIN_PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(AUTOTRAIN_UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
add_library(autotrain_text INTERFACE)
target_link_libraries(autotrain_text INTERFACE PkgConfig::AUTOTRAIN_PCRE2
                                               PkgConfig::AUTOTRAIN_UTF8PROC)

# Snappy, zstd and zlib: the codecs of Parquet pages (src/data/parquet/column_chunk.cpp).
pkg_check_modules(AUTOTRAIN_SNAPPY REQUIRED IMPORTED_TARGET snappy)
pkg_check_modules(AUTOTRAIN_ZSTD REQUIRED IMPORTED_TARGET libzstd)
pkg_check_modules(AUTOTRAIN_ZLIB REQUIRED IMPORTED_TARGET zlib)
target_link_libraries(autotrain_text INTERFACE PkgConfig::AUTOTRAIN_SNAPPY PkgConfig::AUTOTRAIN_ZSTD
                                               PkgConfig::AUTOTRAIN_ZLIB)

# liburing (io_uring): the asynchronous reads and writes of the optimizer state offloaded to NVMe
# (src/zero/async_file.cpp; docs/benchmarks.md, "NVMe offload I/O", says why not libaio).
pkg_check_modules(AUTOTRAIN_URING REQUIRED IMPORTED_TARGET liburing)
add_library(autotrain_uring INTERFACE)
target_link_libraries(autotrain_uring INTERFACE PkgConfig::AUTOTRAIN_URING)
# libaio, optional: only the benchmark tests/zero/bench_nvme.cpp uses it, to compare it with
# io_uring (Debian's libaio-dev has no pkg-config file).
find_library(AUTOTRAIN_LIBAIO_LIB aio)
find_path(AUTOTRAIN_LIBAIO_INCLUDE libaio.h)

# OpenBLAS: prefer the OpenMP build so BLAS and our kernels share one thread pool.
find_path(AUTOTRAIN_CBLAS_INCLUDE cblas.h
  PATHS /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp
        /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-pthread /usr/include/openblas
  NO_DEFAULT_PATH)
find_path(AUTOTRAIN_CBLAS_INCLUDE cblas.h)
find_library(AUTOTRAIN_OPENBLAS_LIB openblas
  PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp
        /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-pthread
  NO_DEFAULT_PATH)
find_library(AUTOTRAIN_OPENBLAS_LIB openblas)
if(NOT AUTOTRAIN_CBLAS_INCLUDE OR NOT AUTOTRAIN_OPENBLAS_LIB)
  message(FATAL_ERROR "OpenBLAS (cblas.h, libopenblas) not found. On Debian: "
                      "apt-get install libopenblas-openmp-dev")
endif()
add_library(autotrain_blas INTERFACE)
target_include_directories(autotrain_blas SYSTEM INTERFACE ${AUTOTRAIN_CBLAS_INCLUDE})
target_link_libraries(autotrain_blas INTERFACE ${AUTOTRAIN_OPENBLAS_LIB})

# oneDNN: the float matrix products on the CPU (its matmul primitive picks AVX2, AVX-512,
# AVX512-BF16 or AMX kernels at run time).
find_package(dnnl CONFIG QUIET)
if(NOT TARGET DNNL::dnnl)
  message(FATAL_ERROR "oneDNN (dnnl-config.cmake) not found. On Debian: apt-get install libdnnl-dev")
endif()

# The CUDA toolkit with nvcc, cuBLAS and NCCL, where found: AUTOTRAIN_CUDA_TOOLKIT_FOUND, the
# imported targets CUDA::cudart, CUDA::cublasLt and CUDA::cublas, AUTOTRAIN_NCCL_LIB and
# AUTOTRAIN_NCCL_INCLUDE, and the CUDA language enabled for the .cu files (a macro: CMake enables a
# language only at file scope).
macro(autotrain_find_cuda_toolkit)
  set(AUTOTRAIN_CUDA_TOOLKIT_FOUND OFF)
  if(NOT DEFINED CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  find_library(AUTOTRAIN_NCCL_LIB nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
  find_path(AUTOTRAIN_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
  # The CUDA kernels need nvcc as well as the toolkit's libraries.
  if(CUDAToolkit_FOUND AND NOT DEFINED CMAKE_CUDA_COMPILER AND CUDAToolkit_NVCC_EXECUTABLE)
    set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
  endif()
  if(CUDAToolkit_FOUND)
    include(CheckLanguage)
    check_language(CUDA)
  endif()
  if(CUDAToolkit_FOUND AND CMAKE_CUDA_COMPILER)
    # H200/H100 (sm_90) unless the user asks for others (-DCMAKE_CUDA_ARCHITECTURES=80;90).
    # bf16 atomics need sm_80 or newer.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90 CACHE STRING "GPU architectures the CUDA kernels target")
    endif()
    # One CUDA runtime in the process: the shared one that CUDA::cudart and NCCL use.
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    enable_language(CUDA)
    # CMake 3.25 knows no C++20 flag for nvcc; the .cu files need only C++17.
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(CMAKE_CUDA_EXTENSIONS OFF)
    set(AUTOTRAIN_CUDA_TOOLKIT_FOUND ON)
  endif()
endmacro()

# cuDNN 9 (cudnn_graph.h and libcudnn, under CUDNN_ROOT or the CUDA toolkit's folders), where
# found: AUTOTRAIN_CUDNN_FOUND, AUTOTRAIN_CUDNN_INCLUDE, AUTOTRAIN_CUDNN_LIB and
# AUTOTRAIN_CUDNN_VERSION. Its fused attention (src/kernels/gpu/cudnn_attention.cu) is compiled in
# for the real-CUDA builds only (AUTOTRAIN_HAVE_CUDNN on the target autotrain_cudnn): the CUDA
# emulator cannot run it. The binary links libcudnn.so.9 alone, a small library that loads
# cuDNN's engine libraries (libcudnn_graph, _engines_*, _heuristic, ...) from its own folder.
function(autotrain_find_cudnn)
  set(AUTOTRAIN_CUDNN_FOUND OFF PARENT_SCOPE)
  if(NOT DEFINED CUDNN_ROOT AND DEFINED ENV{CUDNN_ROOT})
    set(CUDNN_ROOT $ENV{CUDNN_ROOT})
  endif()
  find_path(AUTOTRAIN_CUDNN_INCLUDE cudnn_graph.h
    HINTS ${CUDNN_ROOT}/include ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
  find_library(AUTOTRAIN_CUDNN_LIB cudnn
    HINTS ${CUDNN_ROOT}/lib64 ${CUDNN_ROOT}/lib ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
  if(NOT AUTOTRAIN_CUDNN_INCLUDE OR NOT AUTOTRAIN_CUDNN_LIB OR
     NOT EXISTS ${AUTOTRAIN_CUDNN_INCLUDE}/cudnn_version.h)
    message(STATUS "cuDNN: not found (cudnn_graph.h and libcudnn; set CUDNN_ROOT): attention runs "
                   "our own kernels")
    return()
  endif()
  file(STRINGS ${AUTOTRAIN_CUDNN_INCLUDE}/cudnn_version.h version_lines
       REGEX "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) [0-9]+")
  set(version "")
  foreach(part MAJOR MINOR PATCHLEVEL)
    string(REGEX MATCH "CUDNN_${part} ([0-9]+)" match "${version_lines}")
    list(APPEND version ${CMAKE_MATCH_1})
  endforeach()
  list(JOIN version "." version)
  if(version VERSION_LESS 9.0)
    message(STATUS "cuDNN: ${version} at ${AUTOTRAIN_CUDNN_LIB} is older than 9: attention runs "
                   "our own kernels")
    return()
  endif()
  message(STATUS "cuDNN: ${version} (${AUTOTRAIN_CUDNN_LIB}): fused attention in the real-CUDA "
                 "build")
  set(AUTOTRAIN_CUDNN_FOUND ON PARENT_SCOPE)
  set(AUTOTRAIN_CUDNN_VERSION ${version} PARENT_SCOPE)
endfunction()

# CUDA and NCCL are optional: AUTOTRAIN_CUDA=auto builds them when found.
set(AUTOTRAIN_HAVE_CUDA OFF)
set(AUTOTRAIN_HAVE_NCCL OFF)
add_library(autotrain_cuda_runtime INTERFACE)
add_library(autotrain_nccl INTERFACE)
add_library(autotrain_cublas INTERFACE)
add_library(autotrain_cudnn INTERFACE)
if(AUTOTRAIN_CUDA MATCHES "^emulate")
  # The GPU path compiled with g++ against the CUDA emulator (tests/cuda_emu): tests only.
  include(AutotrainCudaEmulation)
elseif(NOT AUTOTRAIN_CUDA STREQUAL "off")
  autotrain_find_cuda_toolkit()
  if(AUTOTRAIN_CUDA_TOOLKIT_FOUND)
    set(AUTOTRAIN_HAVE_CUDA ON)
    target_link_libraries(autotrain_cuda_runtime INTERFACE CUDA::cudart)
    target_link_libraries(autotrain_cublas INTERFACE CUDA::cublasLt CUDA::cublas)
    target_compile_definitions(autotrain_cuda_runtime INTERFACE AUTOTRAIN_HAVE_CUDA=1)
    autotrain_find_cudnn()
    if(AUTOTRAIN_CUDNN_FOUND)
      target_include_directories(autotrain_cudnn SYSTEM INTERFACE ${AUTOTRAIN_CUDNN_INCLUDE})
      target_link_libraries(autotrain_cudnn INTERFACE ${AUTOTRAIN_CUDNN_LIB})
      target_compile_definitions(autotrain_cudnn INTERFACE AUTOTRAIN_HAVE_CUDNN=1)
    endif()
    if(AUTOTRAIN_NCCL_LIB AND AUTOTRAIN_NCCL_INCLUDE)
      set(AUTOTRAIN_HAVE_NCCL ON)
      target_include_directories(autotrain_nccl SYSTEM INTERFACE ${AUTOTRAIN_NCCL_INCLUDE})
      target_link_libraries(autotrain_nccl INTERFACE ${AUTOTRAIN_NCCL_LIB} autotrain_cuda_runtime)
      target_compile_definitions(autotrain_nccl INTERFACE AUTOTRAIN_HAVE_NCCL=1)
    endif()
  endif()
  if(AUTOTRAIN_CUDA STREQUAL "on" AND NOT (AUTOTRAIN_HAVE_CUDA AND AUTOTRAIN_HAVE_NCCL))
    message(FATAL_ERROR "AUTOTRAIN_CUDA=on but the CUDA toolkit, nvcc or NCCL was not found "
                        "(set CUDAToolkit_ROOT or CMAKE_CUDA_COMPILER, or use AUTOTRAIN_CUDA=auto|off)")
  endif()
endif()
