#pragma once
// The device engine's offloaded stage-3 shards (zero/offloaded_shard.hpp):
//   - PinnedShard: the shard in pinned host memory; a unit's part goes to the device in one
//     asynchronous copy, and the CPU optimizer step writes the shard in place.
//   - NvmeShard: the shard in a scratch file under nvme_path (an NvmeState of one array, so its
//     bytes follow each other). A unit's part is read, whole pages at a time, into one of two
//     pinned staging buffers and copied to the device from there; a staging buffer is read into
//     again only after its last copy ran (an event). The read is synchronous on the host: the
//     model's thread queues kernels ahead of the device, so it reads the next unit while the
//     device computes the ones queued before. store() writes through a page-aligned buffer, the
//     partial first and last pages read first.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

#include "../nvme_state.hpp"
#include "../offloaded_shard.hpp"
#include "autotrain/core/gpu/device.hpp"

namespace autotrain::zero::gpu {

template <typename F>
class PinnedShard final : public OffloadedShard<F> {
 public:
  PinnedShard(std::size_t elements, cudaStream_t stream) : values_(elements), stream_(stream) {}
  void copy_into(F* into, std::size_t offset, std::size_t count) override;
  F* host_data() override { return values_.data(); }
  void store(std::size_t offset, const F* values, std::size_t count) override;
  std::size_t host_bytes() const override { return values_.size() * sizeof(F); }

 private:
  autotrain::gpu::PinnedArray<F> values_;
  cudaStream_t stream_;
};

// Pinned (or plain) host bytes whose data() is 4096-byte aligned, as O_DIRECT asks.
class PageBuffer {
 public:
  PageBuffer(std::size_t bytes, bool pinned);
  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  std::unique_ptr<autotrain::gpu::PinnedArray<std::byte>> pinned_;
  std::unique_ptr<std::byte[]> plain_;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

template <typename F>
class NvmeShard final : public OffloadedShard<F> {
 public:
  // The file `file_name` in `folder` (checked by run set-up: node-local, with room).
  NvmeShard(std::size_t elements, const std::filesystem::path& folder, std::string file_name,
            cudaStream_t stream);
  ~NvmeShard() override;
  void copy_into(F* into, std::size_t offset, std::size_t count) override;
  void store(std::size_t offset, const F* values, std::size_t count) override;
  std::size_t host_bytes() const override;
  std::size_t nvme_bytes() const override { return file_.file_bytes(); }
  std::string describe() const { return file_.describe(); }

 private:
  struct Pages {  // the whole pages that hold elements [offset, offset + count)
    std::uint64_t first;
    std::size_t bytes;
    std::size_t skip;  // bytes before the first element
  };
  Pages pages(std::size_t offset, std::size_t count) const;
  // A buffer of at least `bytes` (after the copies that read it ran).
  PageBuffer& staging(int k, std::size_t bytes);

  std::size_t elements_;
  NvmeState file_;
  cudaStream_t stream_;
  std::unique_ptr<PageBuffer> staging_[2];
  autotrain::gpu::Event copied_[2];  // the last copy from staging_[k] ran
  int next_ = 0;
  std::unique_ptr<PageBuffer> bounce_;  // store()'s
};

// The maker of an engine's offloaded shards: pinned (`nvme_folder` empty) or NVMe files named
// autotrain-rank<rank>.<name> in `nvme_folder`.
template <typename F>
ShardMaker<F> shard_maker(cudaStream_t stream, const std::filesystem::path& nvme_folder, int rank);

}  // namespace autotrain::zero::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
