// The device engine's offloaded stage-3 shards (offloaded_shard.hpp). Host code.
#include "offloaded_shard.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>

#include "autotrain/core/error.hpp"
#include "autotrain/core/gpu/check.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::zero::gpu {
namespace {

constexpr std::size_t kPage = NvmeState::kAlignment;

std::size_t round_up(std::size_t n, std::size_t to) {
  return (n + to - 1) / to * to;
}

}  // namespace

template <typename F>
void PinnedShard<F>::copy_into(F* into, std::size_t offset, std::size_t count) {
  AT_CUDA_CHECK(cudaMemcpyAsync(into, values_.data() + offset, count * sizeof(F),
                                cudaMemcpyHostToDevice, stream_));
}

template <typename F>
void PinnedShard<F>::store(std::size_t offset, const F* values, std::size_t count) {
  std::memcpy(values_.data() + offset, values, count * sizeof(F));
}

PageBuffer::PageBuffer(std::size_t bytes, bool pinned) : size_(bytes) {
  const std::size_t allocated = bytes + kPage;  // room to align the start
  std::byte* base = nullptr;
  if (pinned) {
    pinned_ = std::make_unique<autotrain::gpu::PinnedArray<std::byte>>(allocated);
    base = pinned_->data();
  } else {
    plain_ = std::make_unique_for_overwrite<std::byte[]>(allocated);
    base = plain_.get();
  }
  const auto address = reinterpret_cast<std::uintptr_t>(base);
  data_ = base + (round_up(address, kPage) - address);
}

// The file's floats hold the shard's bytes; blocks of whole pages keep them in order.
template <typename F>
NvmeShard<F>::NvmeShard(std::size_t elements, const std::filesystem::path& folder,
                        std::string file_name, cudaStream_t stream)
    : elements_(elements),
      file_(folder, std::move(file_name), (elements * sizeof(F) + 3) / 4, 1,
            std::clamp<std::size_t>(round_up((elements * sizeof(F) + 3) / 4, kPage / 4), kPage / 4,
                                    std::size_t{1} << 20),
            NvmeIo{.contents = "the parameter shard"}),
      stream_(stream) {
  AT_CHECK(file_.contiguous(), "internal: the parameter file's blocks are not whole pages");
}

template <typename F>
NvmeShard<F>::~NvmeShard() {
  for (const auto& event : copied_) event.synchronize();  // no copy reads a freed buffer
}

template <typename F>
auto NvmeShard<F>::pages(std::size_t offset, std::size_t count) const -> Pages {
  AT_CHECK(offset <= elements_ && count <= elements_ - offset, "internal: shard elements [", offset,
           ", ", offset + count, ") outside the ", elements_, " on NVMe");
  const std::size_t begin = offset * sizeof(F), end = (offset + count) * sizeof(F);
  const std::size_t first = begin / kPage * kPage;
  return {first, round_up(end, kPage) - first, begin - first};
}

template <typename F>
PageBuffer& NvmeShard<F>::staging(int k, std::size_t bytes) {
  copied_[k].synchronize();
  auto& buffer = staging_[k];
  if (!buffer || buffer->size() < bytes) buffer = std::make_unique<PageBuffer>(bytes, true);
  return *buffer;
}

template <typename F>
void NvmeShard<F>::copy_into(F* into, std::size_t offset, std::size_t count) {
  if (count == 0) return;
  const Pages at = pages(offset, count);
  const int k = next_;
  next_ = 1 - next_;
  PageBuffer& buffer = staging(k, at.bytes);
  file_.read_pages(at.first, {buffer.data(), at.bytes});
  AT_CUDA_CHECK(cudaMemcpyAsync(into, buffer.data() + at.skip, count * sizeof(F),
                                cudaMemcpyHostToDevice, stream_));
  copied_[k].record(stream_);
}

template <typename F>
void NvmeShard<F>::store(std::size_t offset, const F* values, std::size_t count) {
  if (count == 0) return;
  const Pages at = pages(offset, count);
  if (!bounce_ || bounce_->size() < at.bytes)
    bounce_ = std::make_unique<PageBuffer>(at.bytes, false);
  std::byte* bytes = bounce_->data();
  // The bytes of the first and last pages outside the elements stay: those pages are read first.
  const std::size_t end = at.skip + count * sizeof(F), last = end / kPage * kPage;
  if (at.skip > 0) file_.read_pages(at.first, {bytes, kPage});
  if (end % kPage != 0 && !(last == 0 && at.skip > 0)) {
    file_.read_pages(at.first + last, {bytes + last, kPage});
  }
  std::memcpy(bytes + at.skip, values, count * sizeof(F));
  file_.write_pages(at.first, {bytes, at.bytes});
}

template <typename F>
std::size_t NvmeShard<F>::host_bytes() const {
  std::size_t bytes = file_.host_bytes();
  for (const auto& buffer : staging_) bytes += buffer ? buffer->size() : 0;
  return bytes + (bounce_ ? bounce_->size() : 0);
}

template <typename F>
ShardMaker<F> shard_maker(cudaStream_t stream, const std::filesystem::path& nvme_folder, int rank) {
  return [=](std::size_t elements, const std::string& name) -> std::unique_ptr<OffloadedShard<F>> {
    if (nvme_folder.empty()) return std::make_unique<PinnedShard<F>>(elements, stream);
    return std::make_unique<NvmeShard<F>>(elements, nvme_folder,
                                          cat("autotrain-rank", rank, ".", name), stream);
  };
}

template class PinnedShard<float>;
template class PinnedShard<__nv_bfloat16>;
template class PinnedShard<__half>;
template class NvmeShard<float>;
template class NvmeShard<__nv_bfloat16>;
template class NvmeShard<__half>;
template ShardMaker<float> shard_maker(cudaStream_t, const std::filesystem::path&, int);
template ShardMaker<__nv_bfloat16> shard_maker(cudaStream_t, const std::filesystem::path&, int);
template ShardMaker<__half> shard_maker(cudaStream_t, const std::filesystem::path&, int);

}  // namespace autotrain::zero::gpu
