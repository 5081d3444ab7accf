#include "autotrain/core/zeroed_floats.hpp"

#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace autotrain {

ZeroedFloats::ZeroedFloats(std::size_t size) : size_(size) {
  if (size == 0) return;
  data_ = static_cast<float*>(std::calloc(size, sizeof(float)));
  if (data_ == nullptr) throw std::bad_alloc();
}

ZeroedFloats::ZeroedFloats(const ZeroedFloats& other) : ZeroedFloats(other.size_) {
  if (size_ > 0) std::memcpy(data_, other.data_, size_ * sizeof(float));
}

ZeroedFloats::ZeroedFloats(ZeroedFloats&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

ZeroedFloats& ZeroedFloats::operator=(ZeroedFloats other) noexcept {
  std::swap(data_, other.data_);
  std::swap(size_, other.size_);
  return *this;
}

ZeroedFloats::~ZeroedFloats() {
  std::free(data_);
}

}  // namespace autotrain
