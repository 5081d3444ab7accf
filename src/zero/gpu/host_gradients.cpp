// ZeRO-Offload's gradients copied to the host during backward (host_gradients.hpp). Host code.
#include "host_gradients.hpp"

#include "autotrain/core/error.hpp"
#include "autotrain/core/gpu/check.hpp"

namespace autotrain::zero::gpu {

HostGradients::HostGradients(std::vector<std::size_t> offsets, DeviceGrads device,
                             cudaStream_t stream)
    : offsets_(std::move(offsets)),
      device_(std::move(device)),
      stream_(stream),
      host_(offsets_.back()),
      arrived_(offsets_.size() - 1),
      sent_(offsets_.size() - 1, false) {}

HostGradients::~HostGradients() {
  cudaStreamSynchronize(down_.get());  // no copy writes the pinned array after it goes
}

void HostGradients::send(int unit, CommHandle* writing) {
  const auto u = static_cast<std::size_t>(unit);
  AT_CHECK(unit >= 0 && u < sent_.size(), "internal: gradients of unit ", unit, " sent");
  AT_CHECK(!sent_[u], "internal: the gradients of unit ", unit, " sent twice in one step");
  sent_[u] = true;
  const std::size_t count = offsets_[u + 1] - offsets_[u];
  if (count == 0) return;
  final_.record(stream_);
  AT_CUDA_CHECK(cudaStreamWaitEvent(down_.get(), final_.get(), 0));
  if (writing != nullptr) writing->order_before(down_.get());
  AT_CUDA_CHECK(cudaMemcpyAsync(host_.data() + offsets_[u], device_(unit), count * sizeof(float),
                                cudaMemcpyDeviceToHost, down_.get()));
  arrived_[u].record(down_.get());
}

const float* HostGradients::wait(int unit) {
  const auto u = static_cast<std::size_t>(unit);
  if (!sent_[u]) send(unit);
  arrived_[u].synchronize();
  return host_.data();
}

void HostGradients::end_step() {
  copied_.record(down_.get());
  AT_CUDA_CHECK(cudaStreamWaitEvent(stream_, copied_.get(), 0));
  sent_.assign(sent_.size(), false);
}

}  // namespace autotrain::zero::gpu
