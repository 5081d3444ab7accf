#pragma once
// The machine's memory bandwidth as STREAM's triad measures it, a[i] = b[i] + s * c[i] over float
// arrays far larger than the caches, with this process's OpenMP threads: the bound that a
// memory-bound kernel (`bench adamw`) is held against. STREAM counts 12 bytes an element (read b
// and c, write a); plain stores also read each line of a before writing it (write-allocate), which
// streaming stores skip, so the streaming triad is the one that moves what it counts.
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

  // One triad in seconds, with plain stores or with streaming (non-temporal) ones.
  double time_once(bool streaming);
  // Whether this build has streaming stores (x86); without them `streaming` runs plain stores.
  static bool have_streaming_stores();

 private:
  std::unique_ptr<float[]> storage_;
  std::span<float> a_, b_, c_;
};

}  // namespace autotrain::cli
