#pragma once
// Device binding: which GPU a rank uses, chosen by LOCAL_RANK among the GPUs it can see.
#include <cstddef>
#include <string>

namespace autotrain {

// What a rank knows when it picks its device.
struct DeviceRequest {
  int local_rank = 0;
  int local_world_size = 1;
  int visible_gpus = 0;  // what the CUDA runtime reports (already filtered by CUDA_VISIBLE_DEVICES)
  // True when the launcher gave every rank on this node its own CUDA_VISIBLE_DEVICES (srun
  // --gpus-per-task, --gpu-bind): each rank then uses the first GPU it sees.
  bool per_rank_visibility = false;
  bool want_gpu = false;   // device cuda or a GPU communicator: too few GPUs is an error
  std::string hostname{};  // for messages
  std::string cuda_visible_devices{};  // for messages; "" when unset
};

// The CUDA device index for this rank, or -1 for the CPU. Ranks share the visible GPUs in local
// rank order; with fewer GPUs than local ranks the node runs on CPUs, unless `want_gpu`, which
// throws Error saying how many ranks and GPUs there are and how to fix it.
int choose_device(const DeviceRequest& request);

// GPUs the CUDA runtime sees; 0 when the build has no CUDA or there is no driver or device.
int visible_gpu_count();

// The memory of CUDA device `device` (cudaDeviceProp::totalGlobalMem), for the memory plan of
// auto_find_batch_size; 0 when the build has no CUDA or the device cannot be queried.
std::size_t gpu_memory_bytes(int device);

// CUDA runtime and driver versions as "13.0"; "not built" without CUDA, "no driver" when the
// driver is missing.
std::string cuda_runtime_version();
std::string cuda_driver_version();

}  // namespace autotrain
