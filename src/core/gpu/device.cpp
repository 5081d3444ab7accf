// Device count, Stream and DeviceBuffer: RAII over cudaStream_t and cudaMalloc'd memory; the
// pinned staging of StagedCopy.
#include "autotrain/core/gpu/device.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "autotrain/core/error.hpp"
#include "autotrain/core/gpu/check.hpp"

namespace autotrain::gpu {

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: clear the error so later calls do not see it
    return 0;
  }
  return count;
}

Stream::Stream() {
  AT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

Stream::~Stream() {
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

Stream::Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

void Stream::synchronize() const {
  AT_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  const cudaError_t status = cudaMalloc(&data_, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    throw Error(cat("out of device memory: cannot allocate ", bytes, " bytes (", free_bytes, " of ",
                    total_bytes, " bytes free); use a smaller micro-batch or block size"));
  }
  AT_CUDA_CHECK(status);
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) cudaFree(data_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) cudaFree(data_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::copy_from_host(const void* host, std::size_t bytes) {
  AT_CHECK(bytes <= bytes_, "copy of ", bytes, " bytes into a device buffer of ", bytes_);
  AT_CUDA_CHECK(cudaMemcpy(data_, host, bytes, cudaMemcpyHostToDevice));
  // From pageable memory cudaMemcpy may return before the last DMA into the device lands, and
  // the kernels' non-blocking streams do not wait for the legacy stream that carries it.
  AT_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
}

void DeviceBuffer::copy_to_host(void* host, std::size_t bytes) const {
  AT_CHECK(bytes <= bytes_, "copy of ", bytes, " bytes out of a device buffer of ", bytes_);
  AT_CUDA_CHECK(cudaMemcpy(host, data_, bytes, cudaMemcpyDeviceToHost));
}

Event::Event() {
  AT_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
}

Event::~Event() {
  if (event_ != nullptr) cudaEventDestroy(event_);
}

void Event::record(cudaStream_t stream) {
  AT_CUDA_CHECK(cudaEventRecord(event_, stream));
}

void Event::synchronize() const {
  AT_CUDA_CHECK(cudaEventSynchronize(event_));
}

void DeviceBuffer::zero(cudaStream_t stream) {
  if (bytes_ > 0) AT_CUDA_CHECK(cudaMemsetAsync(data_, 0, bytes_, stream));
}

StagedCopy::StagedCopy(std::size_t chunk_bytes) : chunk_(chunk_bytes), buffer_(2 * chunk_bytes) {
  AT_CHECK(chunk_bytes > 0, "StagedCopy: the chunk must hold at least one byte");
}

void StagedCopy::to_host(void* host, const void* device, std::size_t bytes, cudaStream_t stream) {
  // Chunk k goes to half k % 2; chunk k + 1 is queued before the host copies chunk k out, into
  // the half whose chunk k - 1 the host has already copied.
  const std::size_t chunks = (bytes + chunk_ - 1) / chunk_;
  const auto size = [&](std::size_t k) { return std::min(chunk_, bytes - k * chunk_); };
  const auto queue = [&](std::size_t k) {
    AT_CUDA_CHECK(cudaMemcpyAsync(half(k), static_cast<const unsigned char*>(device) + k * chunk_,
                                  size(k), cudaMemcpyDeviceToHost, stream));
    done_[k % 2].record(stream);
  };
  if (chunks > 0) queue(0);
  for (std::size_t k = 0; k < chunks; ++k) {
    if (k + 1 < chunks) queue(k + 1);
    done_[k % 2].synchronize();
    std::memcpy(static_cast<unsigned char*>(host) + k * chunk_, half(k), size(k));
  }
}

void StagedCopy::to_device(void* device, const void* host, std::size_t bytes, cudaStream_t stream) {
  for (std::size_t k = 0; k * chunk_ < bytes; ++k) {
    const std::size_t size = std::min(chunk_, bytes - k * chunk_);
    done_[k % 2].synchronize();  // the copy that last used this half has finished
    std::memcpy(half(k), static_cast<const unsigned char*>(host) + k * chunk_, size);
    AT_CUDA_CHECK(cudaMemcpyAsync(static_cast<unsigned char*>(device) + k * chunk_, half(k), size,
                                  cudaMemcpyHostToDevice, stream));
    done_[k % 2].record(stream);
  }
}

}  // namespace autotrain::gpu
