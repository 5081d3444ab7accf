#pragma once
// QLoRA's frozen base held by a ZeRO engine in 4 or 8 bits (model/quantized_layout.hpp): each
// unit's payload (its block weights quantized, its other tensors in the compute type) is held as
// the stage holds parameters, whole under stages 0-2, the rank's shard under stage 3, all-gathered
// into slots of a GatherSchedule of its own (prefetched along the hook order, on the engine's
// communicator like every frozen gather: frozen_params.hpp says why) as 32-bit words. params(u)
// dequantizes the unit's payload into a buffer of the compute type, on the model's stream on a
// device; the buffer is the unit's until release(u), then serves the next unit. So a unit is
// dequantized at each use (forward, recompute, backward) and only the units in use exist in the
// compute type: the model's products read W as the full-precision weights would be, and no
// dequantized copy outlives its use.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/model/param_source.hpp"
#include "autotrain/model/quantized_layout.hpp"
#include "frozen_params.hpp"
#include "gather_schedule.hpp"
#include "memory.hpp"
#include "wait_clock.hpp"

namespace autotrain::zero {

template <typename Memory>
class BasicQuantizedFrozen final : public BasicFrozenWeights<typename Memory::Element> {
 public:
  using F = typename Memory::Element;
  // `layout` is the base model's, built for comm.size() ranks; it, `comm` and `clock` must outlive
  // this. Quantizes the payload this rank holds from `source`, a tensor at a time.
  BasicQuantizedFrozen(const model::ParamLayout& layout, model::QuantOptions options,
                       Communicator& comm, WaitClock& clock, int stage, int prefetch,
                       const model::ParamSource& source, Memory memory = {});

  const F* params(int unit) override;
  void release(int unit) override;
  F* grads(int unit) override;
  bool frozen(int /*unit*/) const override { return true; }

  void begin_training_micro_step() override;
  // The payloads held (or the shard), the gather slots and the dequantized units' buffers.
  std::size_t bytes() const override;
  const model::QuantizedLayout& quantized() const { return quantized_; }

 private:
  struct Open {
    typename Memory::Buffer values;
    int users = 0;
  };
  CommHandle start_gather(std::size_t slot, int unit);
  // The unit's payload, where this rank can read it now (under stage 3: acquired in a slot).
  const std::byte* payload(int unit);

  model::QuantizedLayout quantized_;
  Communicator& comm_;
  Memory memory_;
  int stage_;
  typename Memory::Buffer words_;   // every payload, or this rank's shard of each (stage 3)
  typename Memory::Buffer tables_;  // the NF4 levels and the dynamic map, where Memory reads
  std::vector<std::size_t> shard_offsets_;
  std::vector<typename Memory::Buffer> slots_;  // stage 3: declared before the schedule
  std::unique_ptr<GatherSchedule> schedule_;
  std::map<int, Open> open_;
  std::map<std::size_t, std::vector<typename Memory::Buffer>> spare_;  // given back, by size
  std::size_t unit_buffer_bytes_ = 0;
};

using QuantizedFrozen = BasicQuantizedFrozen<HostMemory>;

}  // namespace autotrain::zero
