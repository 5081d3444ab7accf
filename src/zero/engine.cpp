// One engine for the four ZeRO stages: what differs between them is only which buffers are kept
// whole and which in shard space, so each stage is a choice of parts, not a separate class.
//
//   stage  params                     gradients                 optimizer state
//   0      full                       ReplicatedGradients       whole units
//   1      full (+ allgather/step)    ReplicatedGradients       shard
//                                     (reduce-scattered)
//   2      full (+ allgather/step)    PartitionedGradients      shard
//   3      shard (ParamGatherer)      PartitionedGradients      shard
//
// Frozen weights (hold_frozen) follow the params column: whole, or a shard with a ParamGatherer
// of their own (FrozenParams).
//
// The optimizer is one Optimizer per unit over the unit's owned range R(u) (the whole padded
// unit under stage 0, shard(u, rank) otherwise), so parameters and gradients can be passed from
// whichever buffer holds them with the range's flat offset as the base.
#include "autotrain/zero/engine.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/zero/partition.hpp"
#include "engine_core.hpp"
#include "nvme_adamw.hpp"

namespace autotrain::zero {

std::string describe_offloaded(const MemoryReport& memory) {
  if (memory.host_bytes == 0 && memory.nvme_bytes == 0) return "";
  std::string text = "; offloaded:";
  if (memory.host_bytes > 0) text += " host " + human_bytes(static_cast<double>(memory.host_bytes));
  if (memory.nvme_bytes > 0) {
    text += cat(memory.host_bytes > 0 ? "," : "", " NVMe ",
                human_bytes(static_cast<double>(memory.nvme_bytes)));
  }
  return text;
}

std::string describe(const MemoryReport& memory) {
  return cat("params ", human_bytes(static_cast<double>(memory.param_bytes)), ", grads ",
             human_bytes(static_cast<double>(memory.grad_bytes)), ", optimizer ",
             human_bytes(static_cast<double>(memory.optimizer_bytes)), ", working ",
             human_bytes(static_cast<double>(memory.working_bytes)), ", total ",
             human_bytes(static_cast<double>(memory.total())), describe_offloaded(memory));
}

Offload parse_offload(std::string_view name) {
  if (name == "cpu") return Offload::cpu;
  if (name == "nvme") return Offload::nvme;
  AT_CHECK(name == "none", "offload device '", name, "' is not none, cpu or nvme");
  return Offload::none;
}

const char* offload_name(Offload offload) {
  switch (offload) {
    case Offload::cpu:
      return "cpu";
    case Offload::nvme:
      return "nvme";
    default:
      return "none";
  }
}

namespace {

// The sum of the squares of g[0, n) in double, in parallel: fixed blocks, each summed in order,
// then the block sums in order, so the result has the same bits for any number of threads.
double sum_of_squares(const float* g, std::size_t n) {
  constexpr std::size_t kBlock = std::size_t{1} << 16;
  const auto blocks = static_cast<std::ptrdiff_t>((n + kBlock - 1) / kBlock);
  double total = 0;
  if (blocks <= 1) {
    for (std::size_t i = 0; i < n; ++i) total += double{g[i]} * double{g[i]};
    return total;
  }
  std::vector<double> partial(static_cast<std::size_t>(blocks), 0.0);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t b = 0; b < blocks; ++b) {
    const std::size_t begin = static_cast<std::size_t>(b) * kBlock;
    const std::size_t end = std::min(n, begin + kBlock);
    double sum = 0;
    for (std::size_t i = begin; i < end; ++i) sum += double{g[i]} * double{g[i]};
    partial[static_cast<std::size_t>(b)] = sum;
  }
  for (const double sum : partial) total += sum;
  return total;
}

class ZeroEngine final : public EngineCore<Engine, HostMemory> {
 public:
  ZeroEngine(const model::ParamLayout& layout, Communicator& comm, const EngineOptions& options)
      : EngineCore(layout, comm, options, HostMemory{}),
        shard_offsets_(shard_offsets(layout)),
        params_(stage_ == 3 ? shard_offsets_.back() : layout.padded_size(), 0.0f) {
    if (stage_ <= 1) {
      gradients_ = std::make_unique<ReplicatedGradients<HostMemory>>(
          layout, comm, clock_, options.reduce_bucket_size, /*scatter=*/stage_ == 1);
    } else {
      gradients_ = std::make_unique<PartitionedGradients<HostMemory>>(layout, comm, clock_,
                                                                      options.reduce_bucket_size);
    }
    if (stage_ == 3) {
      gatherer_ = std::make_unique<ParamGatherer<HostMemory>>(layout, comm, clock_, params_.data(),
                                                              options.prefetch);
    }
    optimizers_.reserve(static_cast<std::size_t>(layout.num_units()));
    for (int u = 0; u < layout.num_units(); ++u) {
      optimizers_.emplace_back(options.optimizer, owned_segments(layout, owned(u)));
    }
    if (options.offload_optimizer == Offload::nvme) {
      // Stages 1-3 (check_offload): the owned ranges are the shard, laid out in shard space.
      std::vector<OwnedRun> runs;
      for (int u = 0; u < layout.num_units(); ++u) {
        runs.push_back({u, owned(u), shard_offsets_[static_cast<std::size_t>(u)],
                        optimizers_[static_cast<std::size_t>(u)].segments()});
      }
      nvme_ = std::make_unique<NvmeAdamW>(std::move(runs), options.nvme_path.string(), comm,
                                          options.optimizer);
    }
    gathers_.resize(static_cast<std::size_t>(layout.num_units()));
  }

  // The gatherer (EngineCore's) reads params_: it goes first, with any gather in flight.
  ~ZeroEngine() override { gatherer_.reset(); }

  void init_parameters(const model::ParamSource& source) override {
    if (gatherer_) gatherer_->invalidate();
    if (stage_ < 3) {
      source.fill(layout_, params_, 0);
      return;
    }
    // Only the shard: the same values a single rank has for them.
    for (int u = 0; u < layout_.num_units(); ++u) {
      const model::Range shard = layout_.shard(u, rank_);
      source.fill(layout_, shard_params(u), shard.offset);
    }
  }

  // --- model::UnitAccess (the rest is EngineCore's) -------------------------------------------
  const float* params(int unit) override {
    if (gatherer_) return gatherer_->acquire(unit);
    return params_.data() + checked_unit(layout_, unit).offset;
  }

  // --- the step -------------------------------------------------------------------------------
  double grad_norm() override {
    // Each rank sums the squares of its shard (padding is zero), in double.
    double sum = 0;
    for (int u = 0; u < layout_.num_units(); ++u) {
      const model::Range shard = layout_.shard(u, rank_);
      sum += sum_of_squares(gradients_->reduced(u, shard), shard.size);
    }
    return combine_norm(sum, [this](const float* mine) {
      norm_parts_.assign(2 * static_cast<std::size_t>(comm_.size()), 0.0f);
      auto handle = comm_.allgather_async(mine, norm_parts_.data(), 2, DType::fp32);
      clock_.wait(handle);
      return std::span<const float>(norm_parts_);
    });
  }

  void step(float lr, float grad_scale) override {
    // Stage 3: gathers in flight read the shard the optimizer is about to change.
    if (gatherer_) gatherer_->invalidate();
    if (nvme_) {
      nvme_->step([this](int unit, model::Range range) { return param_at(unit, range.offset); },
                  [this](int unit, model::Range range) -> const float* {
                    return gradients_->reduced(unit, range);
                  },
                  lr, grad_scale);
    }
    for (int u = 0; nvme_ == nullptr && u < layout_.num_units(); ++u) {
      const model::Range range = owned(u);
      std::span<float> p = stage_ == 3
                               ? shard_params(u)
                               : std::span<float>(params_.data() + range.offset, range.size);
      std::span<const float> g(gradients_->reduced(u, range), range.size);
      optimizers_[static_cast<std::size_t>(u)].step(p, g, range.offset, lr, grad_scale);
    }
    if (stage_ == 1 || stage_ == 2) {
      // Every rank updated its part; the all-gather (in place) makes the full copy whole again.
      for (int u = 0; u < layout_.num_units(); ++u) {
        const auto& unit = layout_.units()[static_cast<std::size_t>(u)];
        const model::Range shard = layout_.shard(u, rank_);
        gathers_[static_cast<std::size_t>(u)] = comm_.allgather_async(
            params_.data() + shard.offset, params_.data() + unit.offset, shard.size, DType::fp32);
      }
      for (auto& handle : gathers_) clock_.wait(handle);
    }
  }

  MemoryReport memory() const override {
    MemoryReport report;
    report.param_bytes = params_.size() * sizeof(float);
    report.grad_bytes = gradients_->persistent_bytes();
    for (const auto& optimizer : optimizers_) {
      if (!nvme_) report.optimizer_bytes += optimizer.state_bytes();
    }
    report.working_bytes = gradients_->working_bytes() + (gatherer_ ? gatherer_->bytes() : 0);
    if (nvme_) {
      report.working_bytes += nvme_->host_bytes();
      report.nvme_bytes = nvme_->file_bytes();
    }
    return report;
  }

  // --- checkpoints ----------------------------------------------------------------------------
  std::vector<StateRun> shard_runs() override { return runs(true); }
  std::vector<StateRun> held_runs() override { return runs(false); }
  void after_load() override {
    if (gatherer_) gatherer_->invalidate();
    for (auto& optimizer : optimizers_) optimizer.load_staged_moments();
  }
  long long optimizer_steps() const override {
    return nvme_ ? nvme_->steps() : optimizers_.front().steps_taken();
  }
  void set_optimizer_steps(long long steps) override {
    if (nvme_) nvme_->set_steps(steps);
    for (auto& optimizer : optimizers_) optimizer.set_steps_taken(steps);
  }

  void gather_unit(int unit, std::span<float> out, int root) override {
    const model::ParamUnit& info = check_gather(unit, out, root);
    if (!gatherer_) {
      if (rank_ == root) std::copy_n(params_.data() + info.offset, info.numel, out.begin());
      return;
    }
    // Stage 3 goes through a gather slot: one unit at a time, never the whole model.
    gatherer_->invalidate();
    const float* whole = gatherer_->acquire(unit);
    if (rank_ == root) std::copy_n(whole, info.numel, out.begin());
    gatherer_->release(unit);
  }

 private:
  // Stage 3: the rank's part of `unit` in the shard-space parameter buffer.
  std::span<float> shard_params(int unit) {
    return {params_.data() + shard_offsets_[static_cast<std::size_t>(unit)],
            layout_.shard(unit, rank_).size};
  }

  // Parameters of flat element `index` of `unit` where this rank keeps them, or nullptr.
  float* param_at(int unit, std::size_t index) {
    if (stage_ < 3) return params_.data() + index;
    const model::Range shard = layout_.shard(unit, rank_);
    if (index < shard.offset || index >= shard.offset + shard.size) return nullptr;
    return shard_params(unit).data() + (index - shard.offset);
  }

  // Fills the optimizer-state pointers of `run` (which lies inside one segment, or none).
  void attach_state(int unit, StateRun& run) {
    if (nvme_) {  // owned = the shard, in shard space; the moments stay in the file
      const model::Range shard = layout_.shard(unit, rank_);
      if (run.begin < shard.offset || run.begin >= shard.offset + shard.size) return;
      const std::size_t at =
          shard_offsets_[static_cast<std::size_t>(unit)] + (run.begin - shard.offset);
      for (int moment = 0; moment < 2; ++moment) {
        run.streamed[static_cast<std::size_t>(kExpAvg + moment)] = {
            [this, moment, at](std::size_t from, std::span<float> out) {
              nvme_->read(moment, at + from, out);
            },
            [this, moment, at](std::size_t from, std::span<const float> in) {
              nvme_->write(moment, at + from, in);
            }};
      }
      return;
    }
    Optimizer& optimizer = optimizers_[static_cast<std::size_t>(unit)];
    std::size_t state = 0;
    for (const auto& segment : optimizer.segments()) {
      if (run.begin >= segment.begin && run.begin < segment.end) {
        const std::size_t at = state + (run.begin - segment.begin);
        run.exp_avg = optimizer.first_moment().data() + at;
        if (!optimizer.second_moment().empty())
          run.exp_avg_sq = optimizer.second_moment().data() + at;
        return;
      }
      state += segment.end - segment.begin;
    }
  }

  // Every tensor cut at the rank-part boundaries of its unit, so each piece lies in one rank's
  // shard and one optimizer segment. only_shard: just the pieces of this rank's shard.
  std::vector<StateRun> runs(bool only_shard) {
    // The 8-bit AdamW's moments as fp32 copies, until the next step or after_load().
    if (!nvme_) {
      for (auto& optimizer : optimizers_) optimizer.stage_moments();
    }
    std::vector<StateRun> result;
    for (const TensorPiece& piece : tensor_pieces(layout_, only_shard ? rank_ : -1)) {
      StateRun run;
      run.begin = piece.begin;
      run.end = piece.end;
      run.params = param_at(piece.unit, run.begin);
      attach_state(piece.unit, run);
      if (run.holds(kParams) || run.holds(kExpAvg)) result.push_back(run);
    }
    return result;
  }

  std::vector<std::size_t> shard_offsets_;
  std::vector<float> params_;          // whole flat buffer, or the shard in shard space (stage 3)
  std::vector<Optimizer> optimizers_;  // one per unit, over owned(unit)
  std::unique_ptr<NvmeAdamW> nvme_;    // offload_optimizer nvme: the moments on NVMe
  std::vector<CommHandle> gathers_;    // stage 1/2 parameter all-gathers of one step
  std::vector<float> norm_parts_;
};

}  // namespace

void validate_engine_options(const model::ParamLayout& layout, const Communicator& comm,
                             const EngineOptions& options) {
  if (options.stage < 0 || options.stage > 3) {
    throw CollectiveError(cat("zero_stage must be 0, 1, 2 or 3, got ", options.stage));
  }
  if (layout.world_size() != comm.size()) {
    throw Error(cat("ZeRO: the parameter layout was built for world size ", layout.world_size(),
                    " but the communicator has ", comm.size(), " ranks"));
  }
  if (options.reduce_bucket_size < 1) {
    throw CollectiveError(
        cat("reduce_bucket_size must be at least 1 element, got ", options.reduce_bucket_size));
  }
  if (options.prefetch < 0) {
    throw CollectiveError(cat("stage3_prefetch must be >= 0, got ", options.prefetch));
  }
}

std::unique_ptr<Engine> Engine::create(const model::ParamLayout& layout, Communicator& comm,
                                       const EngineOptions& options) {
  validate_engine_options(layout, comm, options);
  return std::make_unique<ZeroEngine>(layout, comm, options);
}

}  // namespace autotrain::zero
