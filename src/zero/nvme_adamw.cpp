// AdamW's moments on NVMe for a CPU rank (nvme_adamw.hpp).
#include "nvme_adamw.hpp"

#include <algorithm>
#include <cmath>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::zero {
namespace {

constexpr std::size_t kBlock = std::size_t{1} << 22;  // elements of each array per block

// Every rank's `ok`, as floats (the communicator's collectives take host fp32 buffers).
bool all_ok(bool ok, Communicator& comm) {
  std::vector<float> every(static_cast<std::size_t>(comm.size()));
  const float mine = ok ? 1.0f : 0.0f;
  auto handle = comm.allgather_async(&mine, every.data(), 1, DType::fp32);
  handle.wait();
  return std::all_of(every.begin(), every.end(), [](float x) { return x == 1.0f; });
}

}  // namespace

NvmeAdamW::NvmeAdamW(std::vector<OwnedRun> runs, const std::string& nvme_path, Communicator& comm,
                     const OptimizerSettings& settings)
    : runs_(std::move(runs)), settings_(settings) {
  for (const auto& run : runs_) total_ = std::max(total_, run.state + run.range.size);
  std::string failure;
  std::filesystem::path folder;
  try {
    folder = nvme_rank_folder(nvme_path, comm.rank());
  } catch (const Error& error) {
    failure = error.what();
  }
  if (!all_ok(failure.empty(), comm)) {
    throw CollectiveError(cat("offload_optimizer_device nvme: ",
                              failure.empty() ? "another rank's nvme_path failed" : failure));
  }
  check_node_local(folder, comm);
  try {
    file_ = std::make_unique<NvmeState>(folder, cat("autotrain-rank", comm.rank(), ".state"),
                                        total_, 2, std::clamp<std::size_t>(total_, 1, kBlock));
  } catch (const Error& error) {
    failure = error.what();
  }
  if (!all_ok(failure.empty(), comm)) {
    file_.reset();  // removes this rank's file
    throw CollectiveError(
        cat("offload_optimizer_device nvme: rank ", comm.rank(), ": ",
            failure.empty() ? "another rank could not create its file" : failure));
  }
}

void NvmeAdamW::update(std::size_t begin, std::size_t count, float* m, float* v,
                       const ParamsAt& params, const GradsAt& grads, AdamWStepArgs args) {
  const std::size_t end = begin + count;
  for (const OwnedRun& run : runs_) {
    const std::size_t a = std::max(begin, run.state);
    const std::size_t b = std::min(end, run.state + run.range.size);
    if (a >= b) continue;
    const model::Range piece{run.range.offset + (a - run.state), b - a};
    float* p = params(run.unit, piece);
    const float* g = grads(run.unit, piece);
    for (const ParamSegment& segment : run.segments) {
      const std::size_t s = std::max(segment.begin, piece.offset);
      const std::size_t e = std::min(segment.end, piece.offset + piece.size);
      if (s >= e) continue;
      const std::size_t i = s - piece.offset;  // in the piece
      const std::size_t at = (a - begin) + i;  // in the block
      args.weight_decay = segment.decay ? settings_.weight_decay : 0.0f;
      adamw_update(p + i, g + i, m + at, v + at, e - s, args);
    }
  }
}

void NvmeAdamW::step(const ParamsAt& params, const GradsAt& grads, float lr, float grad_scale) {
  ++steps_;
  const AdamWStepArgs args = adamw_step_args(settings_, lr, grad_scale, steps_);
  file_->for_each_block([&](std::size_t begin, std::size_t count, std::span<float* const> data) {
    update(begin, count, data[0], data[1], params, grads, args);
  });
}

}  // namespace autotrain::zero
