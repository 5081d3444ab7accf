#pragma once
// ZeRO-Infinity's optimizer offload for a CPU rank (offload_optimizer_device: nvme): AdamW's m and
// v of the rank's owned ranges live in a scratch file on node-local NVMe (nvme_state.hpp) instead
// of memory, and the step streams them block by block (the read of block i+1 and the write of
// block i-1 overlap the update of block i), updating the parameters, which stay in memory (a CPU
// rank's parameters are its fp32 master weights). Checkpoints read and write the moments in the
// file directly, a part at a time: a save or load never holds them whole in memory.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/optim/adamw_kernel.hpp"
#include "autotrain/optim/optimizer.hpp"
#include "nvme_state.hpp"

namespace autotrain::zero {

// One unit's owned range: flat `range`, at `state` in owned space, its weight-decay segments.
struct OwnedRun {
  int unit = 0;
  model::Range range;
  std::size_t state = 0;
  std::vector<ParamSegment> segments;
};

class NvmeAdamW {
 public:
  // Where a unit's parameters and reduced gradients of flat `range` are.
  using ParamsAt = std::function<float*(int unit, model::Range range)>;
  using GradsAt = std::function<const float*(int unit, model::Range range)>;

  // Collective over `comm` (host buffers: mpi or gloo): the folder (nvme_path, "%r" = the rank)
  // is checked on every rank to be node-local, then each rank creates its file; a rank that
  // cannot (no space, no folder) makes every rank throw the same CollectiveError.
  NvmeAdamW(std::vector<OwnedRun> runs, const std::string& nvme_path, Communicator& comm,
            const OptimizerSettings& settings);

  void step(const ParamsAt& params, const GradsAt& grads, float lr, float grad_scale);
  long long steps() const { return steps_; }
  void set_steps(long long steps) { steps_ = steps; }

  // Checkpoints: elements [state, state + n) of owned space of m (moment 0) or v (moment 1),
  // straight from or to the file (through the pipeline's buffers).
  void read(int moment, std::size_t state, std::span<float> out) {
    file_->read(moment, state, out);
  }
  void write(int moment, std::size_t state, std::span<const float> in) {
    file_->write(moment, state, in);
  }

  std::size_t file_bytes() const { return file_->file_bytes(); }
  std::size_t host_bytes() const { return file_->host_bytes(); }
  std::string describe() const { return file_->describe(); }

 private:
  // The AdamW update of owned-space elements [begin, begin + count) with m, v there.
  void update(std::size_t begin, std::size_t count, float* m, float* v, const ParamsAt& params,
              const GradsAt& grads, AdamWStepArgs args);

  std::vector<OwnedRun> runs_;
  OptimizerSettings settings_;
  std::size_t total_ = 0;
  std::unique_ptr<NvmeState> file_;
  long long steps_ = 0;
};

}  // namespace autotrain::zero
