#pragma once
// The CUDA emulator's internal interface, shared by its runtime (runtime.cpp), kernel launcher
// (launch.cpp), cuBLAS/cuBLASLt (cublas.cpp) and NCCL (nccl.cpp) replacements.
//
// The emulator runs the GPU path of autotrain on the CPU so that it can be tested where no GPU
// exists (AUTOTRAIN_CUDA=emulate, docs/gpu.md). "Device" memory is host memory that the
// emulator tracks; kernels run block by block, each CUDA thread a fiber; streams are queues that
// run lazily: work runs only when the host synchronizes with its stream, or when a stream that
// must wait for it (an event) runs. A missing synchronization therefore shows up as stale data
// instead of passing by luck, and misuse (a host pointer given to a kernel, a warp shuffle after
// a lane exited) stops the process with a message that starts with "cuda-emu:". A stream being
// captured (cudaStreamBeginCapture) records its work into the graph instead of queueing it, and
// each cudaGraphLaunch queues that work again.
#include <cuda_runtime_api.h>
#include <library_types.h>

#include <cstddef>
#include <functional>
#include <mutex>
#include <string>

namespace cuda_emu {

// Every emulated API call holds this lock: one emulated GPU, one thing at a time.
std::recursive_mutex& api_lock();

// Stops the process: the emulator found misuse of the CUDA, cuBLAS or NCCL API.
[[noreturn]] void fail(const std::string& message);

// Queues op on stream (nullptr, cudaStreamLegacy and cudaStreamPerThread are the legacy
// stream). what names the op in messages.
void enqueue(cudaStream_t stream, std::function<void()> op, std::string what);
// Runs everything queued on stream so far (and what it waits for).
void flush(cudaStream_t stream);
// Runs everything queued on every stream.
void flush_all();

// Whether [p, p + bytes) lies inside one live cudaMalloc allocation.
bool is_device(const void* p, std::size_t bytes);
// Whether [p, p + bytes) lies inside one live cudaMallocHost allocation.
bool is_pinned(const void* p, std::size_t bytes);
// fail()s unless [p, p + bytes) is device memory; what names the argument.
void require_device(const void* p, std::size_t bytes, const std::string& what);

// Bytes of one element of a cuBLAS / NCCL-style data type (CUDA_R_32F and so on).
std::size_t element_size(cudaDataType_t type);

}  // namespace cuda_emu
