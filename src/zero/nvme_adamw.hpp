#pragma once
// ZeRO-Infinity's optimizer offload for a CPU rank (offload_optimizer_device: nvme): AdamW's m and
// v of the rank's owned ranges live in a scratch file on node-local NVMe (nvme_state.hpp) instead
// of memory, and the step streams them block by block (the read of block i+1 and the write of
// block i-1 overlap the update of block i), updating the parameters, which stay in memory (a CPU
// rank's parameters are its fp32 master weights). Checkpoints read and write the moments through
// a host copy made for the save or load and released at the next step.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/core/zeroed_floats.hpp"
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

  // Checkpoints: m and v of owned space in memory (read from the file), pointers into them, and
  // after a load the values written back (and the copy released).
  void materialize();
  float* exp_avg(std::size_t state) { return m_.data() + state; }
  float* exp_avg_sq(std::size_t state) { return v_.data() + state; }
  void store();

  std::size_t file_bytes() const { return file_->file_bytes(); }
  std::size_t host_bytes() const { return file_->host_bytes() + (m_.size() + v_.size()) * 4; }
  std::string describe() const { return file_->describe(); }

 private:
  // The AdamW update of owned-space elements [begin, begin + count) with m, v there.
  void update(std::size_t begin, std::size_t count, float* m, float* v, const ParamsAt& params,
              const GradsAt& grads, AdamWStepArgs args);

  std::vector<OwnedRun> runs_;
  OptimizerSettings settings_;
  std::size_t total_ = 0;
  std::unique_ptr<NvmeState> file_;
  ZeroedFloats m_;  // the checkpoint's host copy (empty between checkpoints)
  ZeroedFloats v_;
  long long steps_ = 0;
};

}  // namespace autotrain::zero
