// ZeRO stage 3 gathers on the device (device_gatherer.hpp). Host code.
#ifdef AUTOTRAIN_HAVE_CUDA
#include "device_gatherer.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "autotrain/zero/partition.hpp"
#include "device_gradients.hpp"

namespace autotrain::zero::gpu {

template <typename F>
DeviceParamGatherer<F>::DeviceParamGatherer(const model::ParamLayout& layout, Communicator& comm,
                                            WaitClock& clock, const F* shard, int prefetch,
                                            cudaStream_t stream)
    : layout_(layout),
      comm_(comm),
      shard_(shard),
      stream_(stream),
      shard_offsets_(shard_offsets(layout)),
      slots_(plan_gather_slots(layout, prefetch)),
      schedule_(
          layout.num_units(), prefetch, slots_.unit0_own_slot, clock,
          [this](std::size_t slot, int unit) { return start_gather(slot, unit); }, stream) {
  buffers_.reserve(schedule_.slots());
  for (std::size_t s = 0; s < schedule_.slots(); ++s) {
    buffers_.emplace_back(slots_.capacity(s) * sizeof(F));
  }
}

template <typename F>
CommHandle DeviceParamGatherer<F>::start_gather(std::size_t slot, int unit) {
  // The slot's previous unit may still be read by kernels queued on the model's stream (release
  // comes when they are queued, not run): the gather starts after them.
  comm_.wait_for_stream(stream_);
  return comm_.allgather_async(shard_ + shard_offsets_[static_cast<std::size_t>(unit)],
                               buffers_[slot].template as<F>(), layout_.shard(unit, 0).size,
                               compute_dtype<F>());
}

template <typename F>
std::size_t DeviceParamGatherer<F>::bytes() const {
  std::size_t bytes = 0;
  for (const auto& buffer : buffers_) bytes += buffer.bytes();
  return bytes;
}

template class DeviceParamGatherer<float>;
template class DeviceParamGatherer<__nv_bfloat16>;
template class DeviceParamGatherer<__half>;

}  // namespace autotrain::zero::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
