#pragma once
// What the writer and the reader transfer: a piece (writer) or a range (reader) cut into parts.
// One in memory is one part; a streamed one (ckpt::Stream: state kept out of memory) moves in
// parts of at most `stream.part` elements through a buffer, so a save or load never holds it
// whole.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "autotrain/ckpt/checkpoint.hpp"
#include "autotrain/core/error.hpp"

namespace autotrain::ckpt {

// Elements [at, at + count) of *whole (a Piece or a ReadRange).
template <typename Whole>
struct Part {
  const Whole* whole = nullptr;
  uint64_t at = 0;
  uint64_t count = 0;
};

// How many parts `whole` moves in (none when it is empty).
template <typename Whole>
uint64_t part_count(const Whole& whole) {
  if (whole.size() == 0) return 0;
  if (!whole.streamed()) return 1;
  AT_CHECK(whole.stream.part > 0, "checkpoint: a range of ", whole.size(),
           " elements is streamed in parts of 0 elements");
  return (whole.size() + whole.stream.part - 1) / whole.stream.part;
}

// Appends the parts of `whole` to `parts`.
template <typename Whole>
void append_parts(const Whole& whole, std::vector<Part<Whole>>& parts) {
  if (!whole.streamed()) {
    parts.push_back({&whole, 0, whole.size()});
    return;
  }
  AT_CHECK(whole.stream.part > 0, "checkpoint: a range of ", whole.size(),
           " elements is streamed in parts of 0 elements");
  for (uint64_t at = 0; at < whole.size(); at += whole.stream.part) {
    parts.push_back({&whole, at, std::min(whole.stream.part, whole.size() - at)});
  }
}

}  // namespace autotrain::ckpt
