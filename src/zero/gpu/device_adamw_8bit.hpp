#pragma once
// The 8-bit AdamW's state on the device (optimizer adamw_8bit, no offload): m and v as byte
// codes over the rank's owned space, with an fp32 absmax per moment per block of 2048 of each
// unit's owned range (blocks restart at every unit, as the CPU optimizer's, one per unit, do),
// updated by kernels::gpu::adamw_8bit_update a unit at a time. Checkpoints see the moments as
// fp32: download() dequantizes them into the host copies, upload() requantizes those
// (optim/blockwise_8bit.hpp, on the host).
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/gpu/adamw.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/optim/optimizer.hpp"

namespace autotrain::zero::gpu {

class DeviceAdamW8bit {
 public:
  // Per unit: its owned range and that range's weight-decay segments (flat offsets).
  DeviceAdamW8bit(std::vector<model::Range> owned,
                  const std::vector<std::vector<ParamSegment>>& segments, cudaStream_t stream);

  void zero();  // every moment 0 (absmax 0, whatever the codes)
  // Unit `unit`'s owned range: master [n] fp32, its compute copy (null where F is float), the
  // reduced gradient.
  template <typename F>
  void step(int unit, float* master, F* compute, const float* grads,
            const kernels::gpu::AdamWSettings& settings);
  // The fp32 moments over owned space on the host (the checkpoint's copies), through `staging`.
  void download(float* m, float* v, autotrain::gpu::StagedCopy& staging);
  void upload(const float* m, const float* v, autotrain::gpu::StagedCopy& staging);

  std::size_t bytes() const;

 private:
  std::vector<model::Range> owned_;
  std::vector<std::size_t> offsets_;  // per unit in owned space, then the total
  cudaStream_t stream_;
  autotrain::gpu::DeviceBuffer m_, v_;  // [owned total] codes
  autotrain::gpu::DeviceBuffer m_absmax_, v_absmax_;
  autotrain::gpu::DeviceBuffer runs_;       // kernels::gpu::AdamW8bitRun, every unit's
  autotrain::gpu::DeviceBuffer maps_;       // the signed map, then the unsigned one
  std::vector<std::size_t> block_offsets_;  // per unit its first block, then the total
  std::vector<std::size_t> run_offsets_;    // per unit its first run, then the total
  std::vector<std::uint8_t> host_codes_;    // checkpoints: m's codes, then v's
  std::vector<float> host_absmax_;
};

}  // namespace autotrain::zero::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
