#pragma once
// One micro-batch's token ids on their way to the device, for both device models: checked
// (inputs in [0, V); targets also kIgnoreTarget), staged in pinned memory so the copies are
// asynchronous (the previous upload's copies have run before the stage is reused), and the
// positions grouped by token (kernels::gpu::make_token_runs) for the deterministic embedding
// gradient.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>
#include <cstdint>
#include <vector>

#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/gpu/encoder.hpp"

namespace autotrain::model::gpu {

class TokenUpload {
 public:
  explicit TokenUpload(std::size_t bt);

  // Queues the copies of inputs and targets [bt] into `d_inputs` and `d_targets`, and of their
  // token runs into `d_runs` (runs_elements() ints), on `stream`. Returns how many targets carry
  // loss. An Error naming the position for an id outside the vocabulary of V tokens.
  std::size_t upload(const std::int32_t* inputs, const std::int32_t* targets, int V,
                     std::int32_t* d_inputs, std::int32_t* d_targets, std::int32_t* d_runs,
                     cudaStream_t stream);
  // The last upload's runs, read from `d_runs` on the device.
  kernels::gpu::TokenRuns runs(const std::int32_t* d_runs) const;
  std::size_t runs_elements() const { return 3 * bt_ + 1; }

 private:
  std::size_t bt_;
  autotrain::gpu::PinnedArray<std::int32_t> host_tokens_;  // [2, bt] inputs then targets
  autotrain::gpu::PinnedArray<std::int32_t> host_runs_;    // make_token_runs of the inputs
  std::vector<std::uint64_t> run_scratch_;
  int token_runs_ = 0;
  autotrain::gpu::Event copied_;  // the stage may be overwritten
};

}  // namespace autotrain::model::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
