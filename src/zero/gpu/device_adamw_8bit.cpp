// The 8-bit AdamW's state on the device (device_adamw_8bit.hpp). Host code: the kernel is
// kernels::gpu::adamw_8bit_update.
#include "device_adamw_8bit.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "autotrain/core/dynamic_map.hpp"
#include "autotrain/optim/blockwise_8bit.hpp"

namespace autotrain::zero::gpu {

using autotrain::gpu::DeviceBuffer;

// Per unit: its blocks' place in the absmax buffers, its runs (the segments, as offsets from the
// owned range) in one device array; the two maps on the device.
DeviceAdamW8bit::DeviceAdamW8bit(std::vector<model::Range> owned,
                                 const std::vector<std::vector<ParamSegment>>& segments,
                                 cudaStream_t stream)
    : owned_(std::move(owned)), offsets_{0}, stream_(stream), block_offsets_{0} {
  std::vector<kernels::gpu::AdamW8bitRun> runs;
  for (std::size_t u = 0; u < owned_.size(); ++u) {
    const model::Range range = owned_[u];
    offsets_.push_back(offsets_.back() + range.size);
    block_offsets_.push_back(block_offsets_.back() + quant_blocks(range.size));
    run_offsets_.push_back(runs.size());
    for (const auto& segment : segments[u]) {
      runs.push_back(
          {segment.begin - range.offset, segment.end - range.offset, segment.decay ? 1 : 0});
    }
  }
  run_offsets_.push_back(runs.size());
  m_ = DeviceBuffer(std::max<std::size_t>(offsets_.back(), 1));
  v_ = DeviceBuffer(std::max<std::size_t>(offsets_.back(), 1));
  m_absmax_ = DeviceBuffer(std::max<std::size_t>(block_offsets_.back(), 1) * sizeof(float));
  v_absmax_ = DeviceBuffer(std::max<std::size_t>(block_offsets_.back(), 1) * sizeof(float));
  zero();
  runs_ = DeviceBuffer(std::max<std::size_t>(runs.size(), 1) * sizeof(runs.front()));
  if (!runs.empty()) runs_.copy_from_host(runs.data(), runs.size() * sizeof(runs.front()));
  std::vector<float> maps(signed_dynamic_map().begin(), signed_dynamic_map().end());
  maps.insert(maps.end(), unsigned_dynamic_map().begin(), unsigned_dynamic_map().end());
  maps_ = DeviceBuffer(maps.size() * sizeof(float));
  maps_.copy_from_host(maps.data(), maps.size() * sizeof(float));
}

void DeviceAdamW8bit::zero() {
  m_.zero(stream_);
  v_.zero(stream_);
  m_absmax_.zero(stream_);
  v_absmax_.zero(stream_);
}

template <typename F>
void DeviceAdamW8bit::step(int unit, float* master, F* compute, const float* grads,
                           const kernels::gpu::AdamWSettings& settings) {
  const auto u = static_cast<std::size_t>(unit);
  kernels::gpu::adamw_8bit_update(master, compute, grads, m_.as<std::uint8_t>() + offsets_[u],
                                  v_.as<std::uint8_t>() + offsets_[u],
                                  m_absmax_.as<float>() + block_offsets_[u],
                                  v_absmax_.as<float>() + block_offsets_[u], owned_[u].size,
                                  runs_.as<kernels::gpu::AdamW8bitRun>() + run_offsets_[u],
                                  static_cast<int>(run_offsets_[u + 1] - run_offsets_[u]),
                                  maps_.as<float>(), settings, stream_);
}

// The codes and absmaxes -> the host, dequantized into the checkpoint copies of m and v.
void DeviceAdamW8bit::download(float* m, float* v, autotrain::gpu::StagedCopy& staging) {
  const std::size_t total = offsets_.back(), blocks = block_offsets_.back();
  host_codes_.resize(2 * total);
  host_absmax_.resize(2 * blocks);
  staging.to_host(host_codes_.data(), m_.data(), total, stream_);
  staging.to_host(host_codes_.data() + total, v_.data(), total, stream_);
  staging.to_host(host_absmax_.data(), m_absmax_.data(), blocks * sizeof(float), stream_);
  staging.to_host(host_absmax_.data() + blocks, v_absmax_.data(), blocks * sizeof(float), stream_);
  for (std::size_t u = 0; u < owned_.size(); ++u) {
    const std::size_t at = offsets_[u], block = block_offsets_[u], count = owned_[u].size;
    dequantize_blockwise(host_codes_.data() + at, host_absmax_.data() + block, count,
                         signed_dynamic_map(), m + at);
    dequantize_blockwise(host_codes_.data() + total + at, host_absmax_.data() + blocks + block,
                         count, unsigned_dynamic_map(), v + at);
  }
}

// The host copies of m and v, requantized a unit's blocks at a time -> the device.
void DeviceAdamW8bit::upload(const float* m, const float* v, autotrain::gpu::StagedCopy& staging) {
  const std::size_t total = offsets_.back(), blocks = block_offsets_.back();
  host_codes_.resize(2 * total);
  host_absmax_.resize(2 * blocks);
  for (std::size_t u = 0; u < owned_.size(); ++u) {
    const std::size_t at = offsets_[u], block = block_offsets_[u], count = owned_[u].size;
    requantize_blockwise(m + at, count, signed_dynamic_map(), host_codes_.data() + at,
                         host_absmax_.data() + block);
    requantize_blockwise(v + at, count, unsigned_dynamic_map(), host_codes_.data() + total + at,
                         host_absmax_.data() + blocks + block);
  }
  staging.to_device(m_.data(), host_codes_.data(), total, stream_);
  staging.to_device(v_.data(), host_codes_.data() + total, total, stream_);
  staging.to_device(m_absmax_.data(), host_absmax_.data(), blocks * sizeof(float), stream_);
  staging.to_device(v_absmax_.data(), host_absmax_.data() + blocks, blocks * sizeof(float),
                    stream_);
}

std::size_t DeviceAdamW8bit::bytes() const {
  return m_.bytes() + v_.bytes() + m_absmax_.bytes() + v_absmax_.bytes();
}

template void DeviceAdamW8bit::step(int, float*, float*, const float*,
                                    const kernels::gpu::AdamWSettings&);
template void DeviceAdamW8bit::step(int, float*, __nv_bfloat16*, const float*,
                                    const kernels::gpu::AdamWSettings&);
template void DeviceAdamW8bit::step(int, float*, __half*, const float*,
                                    const kernels::gpu::AdamWSettings&);

}  // namespace autotrain::zero::gpu
