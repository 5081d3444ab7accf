#pragma once
// Device handles for the CUDA kernels: the visible device count, a stream and a buffer of device
// memory, each owned by one RAII object. Only declared in builds with CUDA (AUTOTRAIN_HAVE_CUDA).
// The element types the kernels take are float, __nv_bfloat16 and __half: 16-bit storage,
// fp32 arithmetic inside every kernel.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstddef>

#include "autotrain/core/gpu/check.hpp"

namespace autotrain::gpu {

// Devices this process can use; 0 when there is no GPU or no driver (never throws), so callers
// can fall back to the CPU or skip.
int device_count();

// A non-blocking stream (does not synchronise with the legacy default stream).
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const { return stream_; }
  // Waits for the queued work and throws Error if any of it failed.
  void synchronize() const;

 private:
  cudaStream_t stream_ = nullptr;
};

// `bytes` of device memory (cudaMalloc: 256-byte aligned), uninitialised.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  std::size_t bytes() const { return bytes_; }
  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }

  // Blocking copies of `bytes` (at most bytes()) from/to host memory.
  void copy_from_host(const void* host, std::size_t bytes);
  void copy_to_host(void* host, std::size_t bytes) const;
  // Sets every byte to zero, queued on `stream`.
  void zero(cudaStream_t stream);

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Typed pieces of one device allocation, each on a 256-byte boundary (as cudaMalloc's own, so
// cuBLASLt may pick its vectorised algorithms for any of them). Make the same take() calls twice:
// on SubBuffers(nullptr) to size the allocation (bytes()), then on the allocation to point into
// it.
class SubBuffers {
 public:
  explicit SubBuffers(void* base) : base_(static_cast<char*>(base)) {}
  template <typename T>
  void take(T*& pointer, std::size_t count) {
    pointer = base_ == nullptr ? nullptr : static_cast<T*>(static_cast<void*>(base_ + bytes_));
    bytes_ += (count * sizeof(T) + kAlignment - 1) / kAlignment * kAlignment;
  }
  std::size_t bytes() const { return bytes_; }

 private:
  static constexpr std::size_t kAlignment = 256;
  char* base_;
  std::size_t bytes_ = 0;
};

// `count` page-locked host elements (cudaMallocHost): copies to and from the device run at full
// speed and truly asynchronously (from pageable memory CUDA synchronises the stream first).
template <typename T>
class PinnedArray {
 public:
  explicit PinnedArray(std::size_t count) : count_(count) {
    if (count_ > 0) {
      void* data = nullptr;
      AT_CUDA_CHECK(cudaMallocHost(&data, count_ * sizeof(T)));
      data_ = static_cast<T*>(data);
    }
  }
  ~PinnedArray() {
    if (data_ != nullptr) cudaFreeHost(data_);
  }
  PinnedArray(const PinnedArray&) = delete;
  PinnedArray& operator=(const PinnedArray&) = delete;
  T* data() const { return data_; }
  std::size_t size() const { return count_; }

 private:
  std::size_t count_;
  T* data_ = nullptr;
};

// A CUDA event without timing: marks a point of a stream that the host or another stream waits
// for.
class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }
  void record(cudaStream_t stream);
  // Blocks the host until the stream has passed the last record (at once if never recorded).
  void synchronize() const;

 private:
  cudaEvent_t event_ = nullptr;
};

// Copies between device memory and pageable host memory of any size through a fixed pinned
// buffer: two halves of `chunk_bytes`, so the host copies one chunk while the next one is in
// flight. The pinned memory stays the same size however large the state (a whole model's master
// weights and moments at stage 0 would otherwise pin gigabytes per rank). Both calls return once
// `host` may be reused: to_host with the data there, to_device with the last chunk queued on
// `stream` (later work on `stream` sees every byte).
class StagedCopy {
 public:
  static constexpr std::size_t kDefaultChunkBytes = std::size_t{16} << 20;
  explicit StagedCopy(std::size_t chunk_bytes = kDefaultChunkBytes);
  void to_host(void* host, const void* device, std::size_t bytes, cudaStream_t stream);
  void to_device(void* device, const void* host, std::size_t bytes, cudaStream_t stream);
  std::size_t pinned_bytes() const { return buffer_.size(); }

 private:
  unsigned char* half(std::size_t chunk) const { return buffer_.data() + (chunk % 2) * chunk_; }
  std::size_t chunk_;
  PinnedArray<unsigned char> buffer_;  // [2 · chunk_]
  Event done_[2];                      // the last copy into or out of each half
};

}  // namespace autotrain::gpu

#endif  // AUTOTRAIN_HAVE_CUDA
