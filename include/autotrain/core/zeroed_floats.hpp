#pragma once
// A float array of zeros whose pages the kernel supplies on first touch (calloc): state that is
// allocated but never written (an export's gradients and optimizer moments, a gather buffer
// nothing gathers into) never becomes resident memory, where a std::vector's zero fill would.
#include <cstddef>
#include <span>

namespace autotrain {

class ZeroedFloats {
 public:
  ZeroedFloats() = default;
  explicit ZeroedFloats(std::size_t size);
  ZeroedFloats(const ZeroedFloats& other);
  ZeroedFloats(ZeroedFloats&& other) noexcept;
  ZeroedFloats& operator=(ZeroedFloats other) noexcept;
  ~ZeroedFloats();

  float* data() { return data_; }
  const float* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  float& operator[](std::size_t i) { return data_[i]; }
  float operator[](std::size_t i) const { return data_[i]; }
  float* begin() { return data_; }
  float* end() { return data_ + size_; }
  operator std::span<float>() { return {data_, size_}; }
  operator std::span<const float>() const { return {data_, size_}; }

 private:
  float* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace autotrain
