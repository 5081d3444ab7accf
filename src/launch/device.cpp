#include "autotrain/launch/device.hpp"

#include "autotrain/core/error.hpp"

#ifdef AUTOTRAIN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace autotrain {
namespace {

[[maybe_unused]] std::string format_cuda_version(int version) {  // used only with CUDA
  return cat(version / 1000, ".", (version % 1000) / 10);
}

}  // namespace

int choose_device(const DeviceRequest& request) {
  const std::string where =
      cat("rank with local rank ", request.local_rank, " on ", request.hostname);
  const std::string visible = request.cuda_visible_devices.empty()
                                  ? std::string("CUDA_VISIBLE_DEVICES unset")
                                  : cat("CUDA_VISIBLE_DEVICES=", request.cuda_visible_devices);
  if (request.visible_gpus <= 0) {
    AT_CHECK(!request.want_gpu, where,
             ": a GPU was requested (device cuda or comm_backend nccl) but no GPU is visible (",
             visible, "); use device cpu with comm_backend gloo or mpi, or run on GPU nodes");
    return -1;
  }
  if (request.per_rank_visibility) return 0;
  if (request.visible_gpus < request.local_world_size) {
    AT_CHECK(!request.want_gpu, where, ": ", request.local_world_size,
             " ranks on this node but only ", request.visible_gpus, " GPU(s) visible (", visible,
             "); start at most ", request.visible_gpus, " rank(s) per node (mpirun --npernode ",
             request.visible_gpus, ", srun --ntasks-per-node=", request.visible_gpus,
             ") or make more GPUs visible with CUDA_VISIBLE_DEVICES");
    return -1;  // sharing GPUs between ranks is never what the user wants: run on CPUs
  }
  return request.local_rank;
}

int visible_gpu_count() {
#ifdef AUTOTRAIN_HAVE_CUDA
  int count = 0;
  // No driver or no device is an ordinary CPU machine, not an error.
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later CUDA calls start clean
    return 0;
  }
  return count;
#else
  return 0;
#endif
}

std::size_t gpu_memory_bytes([[maybe_unused]] int device) {
#ifdef AUTOTRAIN_HAVE_CUDA
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, device) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later CUDA calls start clean
    return 0;
  }
  return properties.totalGlobalMem;
#else
  return 0;
#endif
}

std::string cuda_runtime_version() {
#ifdef AUTOTRAIN_HAVE_CUDA
  int version = 0;
  if (cudaRuntimeGetVersion(&version) != cudaSuccess) return "unknown";
  return format_cuda_version(version);
#else
  return "not built";
#endif
}

std::string cuda_driver_version() {
#ifdef AUTOTRAIN_HAVE_CUDA
  int version = 0;
  if (cudaDriverGetVersion(&version) != cudaSuccess || version == 0) return "no driver";
  return format_cuda_version(version);
#else
  return "not built";
#endif
}

}  // namespace autotrain
