#include "autotrain/model/gpu/token_upload.hpp"

#include <algorithm>

#include "../check_tokens.hpp"
#include "autotrain/core/gpu/check.hpp"

namespace autotrain::model::gpu {

TokenUpload::TokenUpload(std::size_t bt) : bt_(bt), host_tokens_(2 * bt), host_runs_(3 * bt + 1) {}

std::size_t TokenUpload::upload(const std::int32_t* inputs, const std::int32_t* targets, int V,
                                std::int32_t* d_inputs, std::int32_t* d_targets,
                                std::int32_t* d_runs, cudaStream_t stream) {
  check_tokens(inputs, bt_, V, "inputs");
  const std::size_t carrying = check_targets(targets, bt_, V);
  // From the caller's pageable arrays CUDA would first wait for the stream.
  copied_.synchronize();
  std::copy_n(inputs, bt_, host_tokens_.data());
  std::copy_n(targets, bt_, host_tokens_.data() + bt_);
  AT_CUDA_CHECK(cudaMemcpyAsync(d_inputs, host_tokens_.data(), bt_ * sizeof(std::int32_t),
                                cudaMemcpyHostToDevice, stream));
  AT_CUDA_CHECK(cudaMemcpyAsync(d_targets, host_tokens_.data() + bt_, bt_ * sizeof(std::int32_t),
                                cudaMemcpyHostToDevice, stream));
  std::int32_t* runs = host_runs_.data();
  token_runs_ = kernels::gpu::make_token_runs(inputs, bt_, runs, runs + bt_, runs + 2 * bt_ + 1,
                                              run_scratch_);
  AT_CUDA_CHECK(cudaMemcpyAsync(d_runs, runs, host_runs_.size() * sizeof(std::int32_t),
                                cudaMemcpyHostToDevice, stream));
  copied_.record(stream);
  return carrying;
}

kernels::gpu::TokenRuns TokenUpload::runs(const std::int32_t* d_runs) const {
  return {d_runs, d_runs + bt_, d_runs + 2 * bt_ + 1, token_runs_};
}

}  // namespace autotrain::model::gpu
