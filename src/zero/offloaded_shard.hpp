#pragma once
// A stage-3 shard kept off the device (ZeRO-Infinity's offload_param): a rank's compute
// parameters, or its share of LoRA's frozen base, in pinned host memory (`cpu`) or in a scratch
// file on NVMe (`nvme`); gpu/offloaded_shard.hpp has both. The ParamGatherer copies a unit's part
// into its slot just before the all-gather (copy_into); the optimizer step and the fill write
// it (host_data in place, or store).
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace autotrain::zero {

template <typename F>
class OffloadedShard {
 public:
  virtual ~OffloadedShard() = default;
  // Queues the copy of elements [offset, offset + count) into `into` (the device's memory) on the
  // model's stream, after the work queued there so far.
  virtual void copy_into(F* into, std::size_t offset, std::size_t count) = 0;
  // The shard in host memory, where the step writes in place; null where it must store().
  virtual F* host_data() { return nullptr; }
  // Elements [offset, offset + count) become `values` (host memory); done when it returns.
  virtual void store(std::size_t offset, const F* values, std::size_t count) = 0;
  virtual std::size_t host_bytes() const = 0;  // pinned memory: the shard, or its buffers
  virtual std::size_t nvme_bytes() const { return 0; }
};

// Makes the shard of `elements` called `name` ("params", "frozen": the file's suffix on NVMe).
template <typename F>
using ShardMaker = std::function<std::unique_ptr<OffloadedShard<F>>(std::size_t elements,
                                                                    const std::string& name)>;

}  // namespace autotrain::zero
