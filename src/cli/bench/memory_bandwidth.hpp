#pragma once
// The machine's memory bandwidth as STREAM's triad measures it, a[i] = b[i] + s * c[i] over float
// arrays far larger than the caches, with this process's OpenMP threads: the bound that a
// memory-bound kernel (`bench adamw`) is held against. STREAM counts 12 bytes an element (read b
// and c, write a), which each kind below moves in its own way:
//   plain      a = b + s * c: the stores read each line of a first (write-allocate), 16 bytes moved
//   streaming  the same with non-temporal stores, which skip that read
//   in place   a = a + s * c: a is read, then written back, as an optimizer updates its state
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace autotrain::cli {

// Median, fastest and slowest of repeated timings, in seconds.
struct RepeatTimes {
  double median_s = 0, min_s = 0, max_s = 0;
};
RepeatTimes summarise(std::vector<double> seconds);

// A float in [0, 1) that looks random in i: benchmark data without repeating pages (which a
// hypervisor may merge, and then copy back on a write).
float unit_noise(std::uint64_t i);

// Three arrays of `elements` floats, each starting on a 64-byte line, first touched by the
// threads that will use them (static blocks, as the triad's loop).
class TriadArrays {
 public:
  explicit TriadArrays(std::size_t elements);
  std::size_t elements() const { return a_.size(); }
  static constexpr double kBytesPerElement = 12;

  enum class Kind { plain, streaming, in_place };
  static constexpr Kind kKinds[] = {Kind::plain, Kind::streaming, Kind::in_place};
  // "triad, plain stores", ...; the streaming kind runs plain stores where the build has none.
  static const char* name(Kind kind);
  // One triad of this kind, in seconds.
  double time_once(Kind kind);

 private:
  std::unique_ptr<float[]> storage_;
  std::span<float> a_, b_, c_;
};

}  // namespace autotrain::cli
