#pragma once
// One collective of `bench comm`, timed (and checked) at one size in each placement the
// Communicator interface has for it, as nccl-tests does:
//
//   op              out-of-place                        in-place
//   allreduce       -  (the interface has none)         allreduce(data): data is in and out
//   reduce_scatter  reduce_scatter(input, output)       -  (the interface forbids overlap)
//   allgather       allgather(input, output)            allgather(output + rank*part, output)
//   broadcast       -  (the interface has none)         broadcast(data): data is in and out
//
// `count` is what nccl-tests prints: the elements of the whole buffer, or of one rank's part
// for reduce_scatter and allgather (the `part` of the call); `bytes` is always the whole buffer
// (the unscattered input of reduce_scatter, the gathered output of allgather).
//
// busbw = algbw x 2(n-1)/n for allreduce, (n-1)/n for reduce_scatter and allgather, 1 for
// broadcast: the per-link traffic of the optimal ring algorithm, comparable across rank counts.
#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "autotrain/comm/communicator.hpp"

#ifdef AUTOTRAIN_HAVE_CUDA
#include "autotrain/core/gpu/device.hpp"
#endif

namespace autotrain::cli {

enum class Collective { allreduce, reduce_scatter, allgather, broadcast };
inline constexpr Collective kAllCollectives[] = {Collective::allreduce, Collective::reduce_scatter,
                                                 Collective::allgather, Collective::broadcast};
enum class Placement { out_of_place, in_place };
inline constexpr Placement kPlacements[] = {Placement::out_of_place, Placement::in_place};

std::string_view collective_name(Collective op);
bool reduces(Collective op);  // allreduce and reduce_scatter take a redop
bool has_placement(Collective op, Placement placement);
// The table's note on the placement the interface lacks for `op`, or "" where it has both.
std::string_view missing_placement_note(Collective op);
double bus_factor(Collective op, int world_size);

struct CollectiveSettings {
  DType dtype = DType::fp32;
  ReduceOp redop = ReduceOp::sum;
  int root = 0;  // broadcast
  int iters = 20;
  int warmup_iters = 5;
  int rounds = 1;
  bool check = false;
};

// One placement at one size; the slowest rank's time, so every rank holds the same figures.
struct PlacementResult {
  double time_us = 0;
  double algbw = 0;      // GB/s
  double busbw = 0;      // GB/s
  long long wrong = -1;  // over all ranks; -1: not checked
};

struct SizeResult {
  std::size_t bytes = 0;
  std::size_t count = 0;
  std::optional<PlacementResult> out_of_place;  // empty where the interface has no such form
  std::optional<PlacementResult> in_place;
};

// Host memory, or device memory (for nccl) filled and read through a host copy.
class BenchBuffer {
 public:
  BenchBuffer(std::size_t bytes, bool on_device);
  void* data();  // what the collective gets
  std::byte* host() { return host_.data(); }
  // The first `bytes` of the host copy to data() and back (nothing to do in host memory).
  void upload(std::size_t bytes);
  void download(std::size_t bytes);
  void zero(std::size_t bytes);

 private:
  std::vector<std::byte> host_;
#ifdef AUTOTRAIN_HAVE_CUDA
  std::optional<autotrain::gpu::DeviceBuffer> device_;
#endif
};

class CollectiveBench {
 public:
  // Buffers of `max_bytes` each, allocated once here; run() allocates nothing.
  CollectiveBench(Communicator& comm, Collective op, const CollectiveSettings& settings,
                  std::size_t max_bytes, bool on_device);
  // `bytes` is rounded down to whole elements (and, for reduce_scatter and allgather, to equal
  // parts); a result with count 0 was not run.
  SizeResult run(std::size_t bytes);

 private:
  // Elements [offset, offset + count) of a buffer holding elements [first, first + count) of
  // the logical buffer of `total_count` elements.
  struct Span {
    BenchBuffer* buffer;
    std::size_t offset;
    std::size_t first;
    std::size_t count;
  };
  std::size_t part(std::size_t total_count) const;
  Span input_span(Placement placement, std::size_t total_count);
  Span result_span(std::size_t total_count);
  void issue(Placement placement, std::size_t total_count);
  PlacementResult time(Placement placement, std::size_t total_count, std::size_t bytes);
  long long count_wrong(Placement placement, std::size_t total_count);
  void fill_inputs(Placement placement, std::size_t total_count);
  double input_value(std::size_t logical_index) const;
  double expected_value(std::size_t logical_index, std::size_t total_count) const;

  Communicator& comm_;
  Collective op_;
  CollectiveSettings settings_;
  BenchBuffer input_;   // out-of-place input
  BenchBuffer output_;  // output, and in place input and output
};

}  // namespace autotrain::cli
