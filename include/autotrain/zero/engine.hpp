#pragma once
// ZeRO engines (DESIGN.md contract 1; Rajbhandari et al., arXiv:1910.02054). An engine owns the
// parameter, gradient and optimizer memory of one rank and is the model's UnitAccess: it hands
// the model each unit's parameters (gathering them first under stage 3), gives it a gradient
// buffer per unit, and reduces a unit's gradients across ranks as soon as backward is done with
// it (asynchronously, in buckets of units, overlapping the rest of backward).
//
//   stage 0 (DDP)  full params, full grads (allreduce avg), full optimizer state on every rank
//   stage 1        full params, full grads (allreduce avg), optimizer state of the rank's shard;
//                  after the update the shards are all-gathered into the full params
//   stage 2        full params, gradients of the shard only (reduce-scatter avg per unit,
//                  accumulated across micro-steps), optimizer state of the shard
//   stage 3        parameters of the shard only; a unit is all-gathered before its forward and
//                  again before its backward, released after; the next unit's gather is
//                  prefetched; gradients and optimizer state as stage 2
//
// Frozen weights (Engine::hold_frozen, LoRA's base model) are held as the stage holds
// parameters: whole under stages 0-2, sharded and gathered per unit under stage 3.
//
// The shard of rank r is the r-th equal part of every unit (ParamLayout::shard).
//
// Call sequence of one optimizer step (the trainer's):
//   begin_step();
//   for m in micro-steps: begin_micro_step(m == last); model.forward(engine, ...);
//                         model.backward(engine, 1 / gradient_accumulation);
//   finish_backward();                 // every reduction of this step complete
//   norm = grad_norm();                // global L2 norm over all gradients (collective)
//   step(lr, clip_factor(norm, max_grad_norm));   // optimizer update (+ gathers), collective
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/model/param_source.hpp"
#include "autotrain/model/quantized_layout.hpp"
#include "autotrain/model/unit_access.hpp"
#include "autotrain/optim/optimizer.hpp"

namespace autotrain::zero {

// Where ZeRO-Offload (the optimizer state) and ZeRO-Infinity (the parameters) keep a rank's
// shard instead of with the model: nowhere else, host memory, or a file under nvme_path.
enum class Offload { none, cpu, nvme };
// "none", "cpu" or "nvme" (the parameter's values).
Offload parse_offload(std::string_view name);
const char* offload_name(Offload offload);

struct EngineOptions {
  int stage = 0;                              // 0..3
  std::size_t reduce_bucket_size = 1u << 24;  // gradient elements per reduction bucket
  int prefetch = 1;                           // stage 3: units gathered ahead
  OptimizerSettings optimizer;
  Offload offload_optimizer = Offload::none;  // stages 1-3
  Offload offload_param = Offload::none;      // stage 3, device engine, with offload_optimizer
  std::filesystem::path nvme_path;            // the scratch folder of nvme offload
};

// What every engine requires of its options and layout (a layout built for comm.size() ranks):
// a CollectiveError (an Error for the layout) naming the value otherwise. Engine::create and
// the device engine's create call it.
void validate_engine_options(const model::ParamLayout& layout, const Communicator& comm,
                             const EngineOptions& options);

// Bytes this rank holds for model state, as the ZeRO formulas count them.
struct MemoryReport {
  std::size_t param_bytes = 0;      // persistent parameters (full, or the shard under stage 3)
  std::size_t grad_bytes = 0;       // persistent gradients (full, or the shard under 2 and 3)
  std::size_t optimizer_bytes = 0;  // optimizer state
  std::size_t working_bytes = 0;    // gathered units / unit gradient buffers (stages 2 and 3)
  // Where the engine's own memory is (the device's, or the host's for the CPU engine):
  std::size_t total() const { return param_bytes + grad_bytes + optimizer_bytes + working_bytes; }
  // Offloaded elsewhere (not in the kinds above): pinned host memory, and NVMe files.
  std::size_t host_bytes = 0;
  std::size_t nvme_bytes = 0;
};

// "params 12.0 MiB, grads 3.0 MiB, optimizer 6.0 MiB, working 1.5 MiB, total 22.5 MiB" (the
// per-rank line the trainer logs at start-up and `bench train` prints), then "; offloaded: host
// 40.0 MiB, NVMe 1.0 GiB" where anything is.
std::string describe(const MemoryReport& memory);
// Just the "; offloaded: ..." part ("" where nothing is).
std::string describe_offloaded(const MemoryReport& memory);

// The kinds of state per parameter, in checkpoint order.
enum StateKind : int { kParams = 0, kExpAvg = 1, kExpAvgSq = 2 };
inline constexpr int kStateKinds = 3;

// A kind of state the rank keeps out of memory (offload nvme: a scratch file), moved in parts:
// `read` and `write` take elements [begin + at, begin + at + n) of the run.
struct StreamedState {
  std::function<void(std::size_t at, std::span<float> out)> read;
  std::function<void(std::size_t at, std::span<const float> in)> write;
  explicit operator bool() const { return static_cast<bool>(read); }
};

// A run [begin, end) of the flat buffer with where this rank keeps each kind of state for it
// (exp_avg / exp_avg_sq are AdamW's m and v; SGD keeps momentum in exp_avg and has no
// exp_avg_sq): a pointer into memory, or, where the pointer is nullptr, `streamed[kind]`; a kind
// with neither is one the rank does not hold for that run. Runs never cross a tensor boundary
// or cover unit padding.
struct StateRun {
  std::size_t begin = 0;
  std::size_t end = 0;
  float* params = nullptr;
  float* exp_avg = nullptr;
  float* exp_avg_sq = nullptr;
  std::array<StreamedState, kStateKinds> streamed;

  std::size_t size() const { return end - begin; }
  float* data(int kind) const {
    return kind == kParams ? params : kind == kExpAvg ? exp_avg : exp_avg_sq;
  }
  bool holds(int kind) const {
    return data(kind) != nullptr || static_cast<bool>(streamed[static_cast<std::size_t>(kind)]);
  }
  // Elements [begin + at, begin + at + out.size()) of `kind`, wherever they are kept.
  void read(int kind, std::size_t at, std::span<float> out) const;
  void write(int kind, std::size_t at, std::span<const float> in) const;
};

// The model state one rank holds and updates, wherever it lives (host memory here, a GPU in the
// device engine of zero/gpu/): what the trainer, checkpoints and export use. Pointers in
// StateRun and gather_unit's output are host memory on every device (a GPU engine copies its
// state there through a fixed pinned staging buffer).
class ModelState {
 public:
  virtual ~ModelState() = default;

  virtual int stage() const = 0;
  // This rank among the engine's ranks (export writes on rank 0).
  virtual int rank() const = 0;
  // Fills the parameters this rank holds from `source` (stage 3: only its shard; the values
  // equal those of a single-rank run) and zeroes the optimizer state.
  virtual void init_parameters(const model::ParamSource& source) = 0;

  virtual void begin_step() = 0;
  virtual void begin_micro_step(bool last_micro_step) = 0;
  virtual void finish_backward() = 0;
  virtual double grad_norm() = 0;
  virtual void step(float lr, float grad_scale) = 0;

  virtual MemoryReport memory() const = 0;
  // Seconds spent waiting on communication since the last call (for the step-time breakdown).
  virtual double take_comm_wait_seconds() = 0;

  // Checkpoints: the rank's shard of every unit (what it writes; every element of the model is
  // in exactly one rank's runs), and everything it holds (what it must read back on resume:
  // the shard for params under stage 3, the whole model for params under stages 0-2, etc.).
  // A kind the engine keeps in full is listed in `held` with the full range. State the engine
  // keeps in another form (the 8-bit AdamW's moments) is listed as fp32 copies made by the call,
  // valid until the next step() or after_load(), which reads them back.
  virtual std::vector<StateRun> shard_runs() = 0;
  virtual std::vector<StateRun> held_runs() = 0;
  // After loading parameters into held_runs(): make derived copies consistent (nothing to do
  // for most stages; kept for engines that cache).
  virtual void after_load() {}
  virtual long long optimizer_steps() const = 0;
  virtual void set_optimizer_steps(long long steps) = 0;

  // Export: the whole unit's parameters (numel, padding excluded) into `out` on `root`
  // (collective; `out` is ignored on other ranks). Stage 3 streams a unit at a time with this.
  virtual void gather_unit(int unit, std::span<float> out, int root) = 0;

  // Debug counter: the most whole units this rank has held gathered at once (stage 3: at most
  // stage3_prefetch + 1; 0 for the stages that keep the full parameters anyway).
  virtual int peak_gathered_units() const { return 0; }
};

// The CPU engine: the model state in host memory, handed to the CPU model unit by unit.
class Engine : public ModelState, public model::UnitAccess {
 public:
  // `layout` must be built with world_size = comm.size(). Allocates every buffer now.
  static std::unique_ptr<Engine> create(const model::ParamLayout& layout, Communicator& comm,
                                        const EngineOptions& options);

  // Weights the model reads but never trains (LoRA's base model, train/lora.hpp), held as this
  // stage holds parameters: whole under stages 0-2; under stage 3 only the rank's shard, each
  // unit all-gathered on this engine's communicator into slots of its own before use
  // (prefetched along the hook order) and free again after release. `layout` is built for
  // comm.size() ranks with the engine layout's units and must outlive the engine; the weights
  // are filled from `source` now, by owned range. The hooks returned (params and release: no
  // gradients, no optimizer state, not in checkpoints) live as long as the engine. Once.
  // With `quantization` (QLoRA) the blocks' weights are held in 4 or 8 bits and each unit is
  // dequantized at each use (zero/quantized_frozen.hpp; model/quantized_layout.hpp).
  virtual model::UnitAccess& hold_frozen(const model::ParamLayout& layout,
                                         const model::ParamSource& source,
                                         std::optional<model::QuantOptions> quantization) = 0;
  model::UnitAccess& hold_frozen(const model::ParamLayout& layout,
                                 const model::ParamSource& source) {
    return hold_frozen(layout, source, std::nullopt);
  }
  // Bytes of those weights on this rank (under stage 3 the shard and the gather slots); 0
  // without.
  virtual std::size_t frozen_bytes() const = 0;
};

}  // namespace autotrain::zero
