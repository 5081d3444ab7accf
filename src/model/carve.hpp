#pragma once
// The CPU models' activations in one allocation: each part a slice of it, in order.
#include <cstddef>
#include <utility>
#include <vector>

namespace autotrain::model {

// storage becomes the parts' total size of zeros; each part's pointer its slice, in order.
template <typename F>
void carve(std::vector<F>& storage, const std::vector<std::pair<F**, std::size_t>>& parts) {
  std::size_t total = 0;
  for (const auto& part : parts) total += part.second;
  storage.assign(total, F(0));
  F* next = storage.data();
  for (const auto& part : parts) {
    *part.first = next;
    next += part.second;
  }
}

}  // namespace autotrain::model
