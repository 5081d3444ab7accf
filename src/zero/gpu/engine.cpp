// The ZeRO engine on a CUDA device, stages 0-3 (zero/gpu/engine.hpp). Host code: the kernels
// it queues live in kernels/gpu/ (adamw, vector). As in engine.cpp, a stage is a choice of parts:
//
//   stage  compute params              gradients                    master, m, v
//   0      full                        ReplicatedGradients          whole units
//   1      full (+ allgather/step)     ReplicatedGradients          shard
//                                      (reduce-scattered)
//   2      full (+ allgather/step)     PartitionedGradients         shard
//   3      shard (ParamGatherer)       PartitionedGradients         shard
// A bf16/fp16 model's gradients go through the same reducers, widened, reduced and accumulated
// in fp32 (zero/gradients.hpp).
//
// ZeRO-Offload (offload_optimizer cpu, stages 1-3): master, m and v of the owned ranges live in
// pinned host memory and HostAdamW (host_adamw.hpp) runs the step on the CPU, over the gradients
// HostGradients (host_gradients.hpp) copied to the host unit by unit during backward;
// ZeRO-Infinity's offload_param (stage 3) keeps the compute shard in pinned host memory (cpu) or in
// a file under nvme_path (nvme) too (offloaded_shard.hpp), and the gatherer copies a unit's part to
// the device just before its all-gather.
//
// The 8-bit AdamW (optimizer adamw_8bit, no offload): its byte-coded moments are a
// DeviceAdamW8bit's (device_adamw_8bit.hpp), which checkpoints see as fp32 host copies.
#include "autotrain/zero/gpu/engine.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <type_traits>
#include <vector>

#include "../engine_core.hpp"
#include "../nvme_state.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/gpu/check.hpp"
#include "autotrain/core/gpu/device.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/kernels/gpu/adamw.hpp"
#include "autotrain/kernels/gpu/vector.hpp"
#include "autotrain/zero/partition.hpp"
#include "device_adamw_8bit.hpp"
#include "host_adamw.hpp"
#include "host_gradients.hpp"
#include "memory.hpp"
#include "offloaded_shard.hpp"

namespace autotrain::zero::gpu {
namespace {

using PinnedFloats = autotrain::gpu::PinnedArray<float>;

// Host floats: pageable and left unwritten (the checkpoint copies of device state: the pages are
// committed by the first save or load, not at start-up), or pinned (the offloaded state itself).
class HostFloats {
 public:
  HostFloats(std::size_t count, bool pinned) {
    if (pinned) {
      pinned_ = std::make_unique<PinnedFloats>(count);
    } else {
      pageable_ = std::make_unique_for_overwrite<float[]>(count);
    }
  }
  float* get() const { return pinned_ ? pinned_->data() : pageable_.get(); }
  std::size_t pinned_bytes() const { return pinned_ ? pinned_->size() * sizeof(float) : 0; }

 private:
  std::unique_ptr<float[]> pageable_;
  std::unique_ptr<PinnedFloats> pinned_;
};

template <typename F>
class DeviceZeroEngine final : public EngineCore<DeviceEngine<F>, DeviceMemory<F>> {
  static constexpr bool kMasterIsCompute = std::is_same_v<F, float>;
  using Core = EngineCore<DeviceEngine<F>, DeviceMemory<F>>;
  using Core::clock_;
  using Core::comm_;
  using Core::frozen_;
  using Core::gatherer_;
  using Core::gradients_;
  using Core::layout_;
  using Core::offload_shard_;
  using Core::owned;
  using Core::params_offloaded_;
  using Core::rank_;
  using Core::stage_;

 public:
  DeviceZeroEngine(const model::ParamLayout& layout, Communicator& comm,
                   const EngineOptions& options, cudaStream_t stream)
      : Core(layout, comm, options, DeviceMemory<F>{stream}),
        settings_(options.optimizer),
        eight_bit_(options.optimizer.kind == OptimizerKind::adamw_8bit),
        stream_(stream),
        offload_(options.offload_optimizer != Offload::none),
        nvme_(options.offload_optimizer == Offload::nvme),
        owned_offsets_(owned_offsets()),
        owned_total_(owned_offsets_.back()),
        params_(params_offloaded_
                    ? 0
                    : (stage_ == 3 ? owned_total_ : layout.padded_size()) * sizeof(F)),
        master_(kMasterIsCompute || offload_ ? 0 : owned_total_ * sizeof(float)),
        m_(offload_ || eight_bit_ ? 0 : owned_total_ * sizeof(float)),
        v_(offload_ || eight_bit_ ? 0 : owned_total_ * sizeof(float)),
        norm_total_(sizeof(double)),
        norm_scratch_(kernels::gpu::kSumOfSquaresScratch * sizeof(float)),
        norm_parts_(2 * static_cast<std::size_t>(comm.size()) * sizeof(float)),
        // Chunks no larger than the largest copy (a small model pins only what it needs).
        staging_(std::min(autotrain::gpu::StagedCopy::kDefaultChunkBytes,
                          std::max<std::size_t>(owned_total_ * sizeof(float), 1))),
        // offload nvme: the state stays in the file (checkpoints stream it), none on the host.
        host_master_(nvme_ ? 0 : owned_total_, offload_ && !nvme_),
        host_m_(nvme_ ? 0 : owned_total_, offload_ && !nvme_),
        host_v_(nvme_ ? 0 : owned_total_, offload_ && !nvme_),
        host_norm_parts_(2 * static_cast<std::size_t>(comm.size())) {
    if (stage_ <= 1) {
      gradients_ = std::make_unique<ReplicatedGradients<DeviceMemory<F>>>(
          layout, comm, clock_, options.reduce_bucket_size, /*scatter=*/stage_ == 1,
          DeviceMemory<F>{stream_});
    } else {
      gradients_ = std::make_unique<PartitionedGradients<DeviceMemory<F>>>(
          layout, comm, clock_, options.reduce_bucket_size, DeviceMemory<F>{stream_});
    }
    AT_CHECK(!params_offloaded_ || (offload_ && stage_ == 3),
             "internal: offload_param needs stage 3 and offload_optimizer");
    if (params_offloaded_) {
      offload_shard_ = shard_maker<F>(stream_,
                                      options.offload_param == Offload::nvme
                                          ? nvme_rank_folder(options.nvme_path.string(), rank_)
                                          : std::filesystem::path(),
                                      rank_);
      param_shard_ = offload_shard_(owned_total_, "params");
    }
    if (stage_ == 3) {
      gatherer_ = std::make_unique<ParamGatherer<DeviceMemory<F>>>(
          layout, comm, clock_, params_.as<F>(), options.prefetch, DeviceMemory<F>{stream_},
          param_shard_.get());
    }
    std::vector<model::Range> ranges;
    for (int u = 0; u < layout.num_units(); ++u) {
      ranges.push_back(owned(u));
      segments_.push_back(owned_segments(layout, owned(u)));
    }
    if (nvme_) {  // the folder was checked node-local with room for this (run set-up)
      file_ = std::make_unique<NvmeState>(
          nvme_rank_folder(options.nvme_path.string(), rank_),
          cat("autotrain-rank", rank_, ".state"), owned_total_, 3,
          std::clamp<std::size_t>(owned_total_, 1, HostAdamW<F>::kPiece));
    }
    if (offload_ && !nvme_) {  // the gradients go to the host during backward
      host_grads_ = std::make_unique<HostGradients>(
          owned_offsets_, [this](int unit) { return gradients_->reduced(unit, owned(unit)); },
          stream_);
      gradients_->on_final(
          [this](int unit, CommHandle* writing) { host_grads_->send(unit, writing); });
    }
    if (offload_) {
      const std::size_t block = file_ ? file_->block_elements() : HostAdamW<F>::kPiece;
      host_adamw_ = std::make_unique<HostAdamW<F>>(
          owned_pieces(ranges, block), segments_, file_ ? nullptr : host_master_.get(),
          file_ ? nullptr : host_m_.get(), file_ ? nullptr : host_v_.get(), param_shard_.get(),
          stream_, file_.get(), host_grads_.get());
    }
    gathers_.resize(static_cast<std::size_t>(layout.num_units()));
    if (eight_bit_) {
      AT_CHECK(!offload_, "internal: the 8-bit AdamW has no offloaded step");
      eight_bit_state_ = std::make_unique<DeviceAdamW8bit>(ranges, segments_, stream_);
    }
    AT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  // The gatherer (EngineCore's) reads the compute shard: it goes first, with any gather in
  // flight.
  ~DeviceZeroEngine() override { gatherer_.reset(); }

  void init_parameters(const model::ParamSource& source) override {
    // Only the owned ranges (the values a single rank has for them),
    // become the master weights, one unit at a time through a host buffer of its size (the
    // checkpoint copies stay untouched); the compute copy is rebuilt from them.
    if (gatherer_) gatherer_->invalidate();
    if (offload_) {
      host_adamw_->visit_state(
          [&](const OwnedPiece& piece, typename HostAdamW<F>::StateAt state) {
            source.fill(layout_, {state.master, piece.count}, piece.flat);
            std::fill_n(state.m, piece.count, 0.0f);
            std::fill_n(state.v, piece.count, 0.0f);
          },
          /*write_back=*/true);
      rebuild_compute_params();
      return;
    }
    std::vector<float> values;
    for (int u = 0; u < layout_.num_units(); ++u) {
      const model::Range range = owned(u);
      values.resize(range.size);
      source.fill(layout_, values, range.offset);
      staging_.to_device(master_at(u, range.offset), values.data(), range.size * sizeof(float),
                         stream_);
    }
    m_.zero(stream_);
    v_.zero(stream_);
    if (eight_bit_state_) eight_bit_state_->zero();
    rebuild_compute_params();
  }

  // --- model::BasicUnitAccess (the rest is EngineCore's) ---------------------------------------
  const F* params(int unit) override {
    if (gatherer_) return gatherer_->acquire(unit);
    return compute_base() + checked_unit(layout_, unit).offset;
  }

  // --- the step -------------------------------------------------------------------------------
  void begin_step() override {
    if (host_grads_) host_grads_->end_step();  // the zeroing below comes after their copies
    Core::begin_step();
  }

  double grad_norm() override {
    // Each rank sums the squares of its shard, in double, on the device.
    auto* total = norm_total_.as<double>();
    AT_CUDA_CHECK(cudaMemsetAsync(total, 0, sizeof(double), stream_));
    for (int u = 0; u < layout_.num_units(); ++u) {
      const model::Range shard = layout_.shard(u, rank_);
      kernels::gpu::sum_of_squares(total, gradients_->reduced(u, shard), shard.size,
                                   norm_scratch_.as<float>(), stream_);
    }
    double sum = 0;
    AT_CUDA_CHECK(cudaMemcpyAsync(&sum, total, sizeof(double), cudaMemcpyDeviceToHost, stream_));
    AT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return this->combine_norm(sum, [this](const float* mine) {
      float* parts = norm_parts_.as<float>();
      AT_CUDA_CHECK(cudaMemcpyAsync(parts + 2 * rank_, mine, 2 * sizeof(float),
                                    cudaMemcpyHostToDevice, stream_));
      comm_.wait_for_stream(stream_);
      auto handle = comm_.allgather_async(parts + 2 * rank_, parts, 2, DType::fp32);
      clock_.wait(handle);
      const std::size_t count = host_norm_parts_.size();
      AT_CUDA_CHECK(cudaMemcpy(host_norm_parts_.data(), parts, count * sizeof(float),
                               cudaMemcpyDeviceToHost));
      return std::span<const float>(host_norm_parts_.data(), count);
    });
  }

  void step(float lr, float grad_scale) override {
    // Stage 3: gathers in flight read the shard the update is about to change, and every
    // gathered unit is stale after it; the next gathers start after the update (wait_for_stream).
    if (gatherer_) gatherer_->invalidate();
    ++steps_;
    if (offload_) {
      host_adamw_->step([this](const OwnedPiece& piece) { return grads_at(piece); },
                        [this](const OwnedPiece& piece) { return compute_at(piece); }, settings_,
                        lr, grad_scale, steps_);
      if (stage_ == 1 || stage_ == 2) gather_compute_params();
      return;
    }
    kernels::gpu::AdamWSettings settings;
    settings.lr = lr;
    settings.beta1 = settings_.beta1;
    settings.beta2 = settings_.beta2;
    settings.eps = settings_.eps;
    settings.weight_decay = settings_.weight_decay;
    settings.grad_scale = grad_scale;
    settings.step = steps_;
    for (int u = 0; u < layout_.num_units(); ++u) {
      if (eight_bit_state_) {
        const model::Range range = owned(u);
        eight_bit_state_->step(u, master_at(u, range.offset), compute_copy_at(u, range.offset),
                               gradients_->reduced(u, range), settings);
        continue;
      }
      for (const auto& segment : segments_[static_cast<std::size_t>(u)]) {
        settings.weight_decay = segment.decay ? settings_.weight_decay : 0.0f;
        const std::size_t at = state_index(u, segment.begin);
        kernels::gpu::adamw_update(
            master_at(u, segment.begin), compute_copy_at(u, segment.begin),
            gradients_->reduced(u, {segment.begin, segment.end - segment.begin}),
            m_.as<float>() + at, v_.as<float>() + at, segment.end - segment.begin, settings,
            stream_);
      }
    }
    if (stage_ == 1 || stage_ == 2) gather_compute_params();
  }

  MemoryReport memory() const override {
    MemoryReport report;
    report.param_bytes = params_.bytes() + master_.bytes();
    report.grad_bytes = gradients_->persistent_bytes();
    report.optimizer_bytes =
        m_.bytes() + v_.bytes() + (eight_bit_state_ ? eight_bit_state_->bytes() : 0);
    report.working_bytes = gradients_->working_bytes() + (gatherer_ ? gatherer_->bytes() : 0);
    if (offload_) {
      report.host_bytes =
          host_master_.pinned_bytes() + host_m_.pinned_bytes() + host_v_.pinned_bytes() +
          host_adamw_->pinned_bytes() + (file_ ? file_->host_bytes() : 0) +
          (host_grads_ ? host_grads_->pinned_bytes() : 0) +
          (param_shard_ ? param_shard_->host_bytes() : 0) + (frozen_ ? frozen_->host_bytes() : 0);
      report.nvme_bytes = (file_ ? file_->file_bytes() : 0) +
                          (param_shard_ ? param_shard_->nvme_bytes() : 0) +
                          (frozen_ ? frozen_->nvme_bytes() : 0);
    }
    return report;
  }

  std::size_t device_bytes() const override {
    return memory().total() + norm_total_.bytes() + norm_scratch_.bytes() + norm_parts_.bytes() +
           gather_scratch_.bytes();
  }

  // --- checkpoints ----------------------------------------------------------------------------
  std::vector<StateRun> shard_runs() override {
    download();
    return runs(true);
  }
  std::vector<StateRun> held_runs() override {
    download();  // a partial load keeps the values it does not overwrite
    return runs(false);
  }
  void after_load() override { upload(); }
  long long optimizer_steps() const override { return steps_; }
  void set_optimizer_steps(long long steps) override { steps_ = steps; }

  void gather_unit(int unit, std::span<float> out, int root) override {
    const model::ParamUnit& info = this->check_gather(unit, out, root);
    AT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    if (!offload_ && (stage_ == 0 || (kMasterIsCompute && stage_ < 3))) {
      // The whole unit's fp32 master weights are on this rank already.
      if (rank_ == root) {
        AT_CUDA_CHECK(cudaMemcpy(out.data(), master_at(unit, info.offset),
                                 info.numel * sizeof(float), cudaMemcpyDeviceToHost));
      }
      return;
    }
    // Stages 1-2 in 16 bits and stage 3: each rank holds the fp32 master of its shard only;
    // all-gather the unit into a scratch the size of the largest unit (allocated on the first
    // export, after training).
    if (gather_scratch_.bytes() == 0) {
      std::size_t largest = 0;
      for (const auto& u : layout_.units()) largest = std::max(largest, u.padded_numel);
      gather_scratch_ = autotrain::gpu::DeviceBuffer(largest * sizeof(float));
    }
    const model::Range shard = layout_.shard(unit, rank_);
    float* scratch = gather_scratch_.as<float>();
    float* mine = scratch + (shard.offset - info.offset);
    if (offload_) {
      host_adamw_->wait();
      std::vector<float> read;
      if (file_) {
        read.resize(shard.size);
        file_->read(0, state_index(unit, shard.offset), read);
      }
      const float* from =
          file_ ? read.data() : host_master_.get() + state_index(unit, shard.offset);
      AT_CUDA_CHECK(
          cudaMemcpyAsync(mine, from, shard.size * sizeof(float), cudaMemcpyHostToDevice, stream_));
      AT_CUDA_CHECK(cudaStreamSynchronize(stream_));  // `read` goes
    } else {
      AT_CUDA_CHECK(cudaMemcpyAsync(mine, master_at(unit, shard.offset), shard.size * sizeof(float),
                                    cudaMemcpyDeviceToDevice, stream_));
    }
    comm_.wait_for_stream(stream_);
    auto handle = comm_.allgather_async(mine, scratch, shard.size, DType::fp32);
    clock_.wait(handle);
    if (rank_ == root) {
      AT_CUDA_CHECK(
          cudaMemcpy(out.data(), scratch, info.numel * sizeof(float), cudaMemcpyDeviceToHost));
    }
  }

 private:
  std::vector<std::size_t> owned_offsets() const {
    std::vector<std::size_t> offsets{0};
    for (int u = 0; u < layout_.num_units(); ++u) offsets.push_back(offsets.back() + owned(u).size);
    return offsets;
  }
  std::size_t owned_at(int unit) const { return owned_offsets_[static_cast<std::size_t>(unit)]; }
  // Where flat element `index` (inside owned(unit)) sits in owned space (m, v, host staging).
  std::size_t state_index(int unit, std::size_t index) const {
    return owned_at(unit) + (index - owned(unit).offset);
  }
  // Where flat element `index` (inside owned(unit)) sits in params_: the flat buffer, or shard
  // space under stage 3.
  std::size_t param_index(int unit, std::size_t index) const {
    return stage_ == 3 ? state_index(unit, index) : index;
  }

  float* master_at(int unit, std::size_t index) {
    if constexpr (kMasterIsCompute) {
      return params_.as<float>() + param_index(unit, index);
    } else {
      return master_.as<float>() + state_index(unit, index);
    }
  }
  F* compute_copy_at(int unit, std::size_t index) {
    if constexpr (kMasterIsCompute) {
      return nullptr;  // the master weights are the compute parameters
    } else {
      return compute_base() + param_index(unit, index);
    }
  }

  // The compute parameters on the device: the flat buffer, or the shard in shard space under
  // stage 3 (null with offload_param: param_shard_ holds them).
  F* compute_base() const { return params_.as<F>(); }

  // Offload: where a piece's reduced gradient is (device), and where its compute parameters go.
  const float* grads_at(const OwnedPiece& piece) {
    return gradients_->reduced(piece.unit, {piece.flat, piece.count});
  }
  F* compute_at(const OwnedPiece& piece) {
    return compute_base() + param_index(piece.unit, piece.flat);
  }

  // Stages 1 and 2: every rank updated its shard of the compute parameters; make them whole again.
  void gather_compute_params() {
    comm_.wait_for_stream(stream_);
    for (int u = 0; u < layout_.num_units(); ++u) {
      const auto& info = layout_.units()[static_cast<std::size_t>(u)];
      const model::Range shard = layout_.shard(u, rank_);
      gathers_[static_cast<std::size_t>(u)] =
          comm_.allgather_async(compute_base() + shard.offset, compute_base() + info.offset,
                                shard.size, compute_dtype<F>());
    }
    for (auto& handle : gathers_) clock_.wait(handle);
  }

  // Device master weights and moments of the owned ranges -> the host copies (through the
  // pinned staging).
  void download() {
    // A save may outlast comm_timeout: no gather handle may stay pending (the watchdog expects
    // every handle waited within it), so the gathers are retired here.
    if (gatherer_) gatherer_->invalidate();
    if (offload_) {  // the host arrays, or the file, are the state
      host_adamw_->wait();
      return;
    }
    for (int u = 0; u < layout_.num_units(); ++u) {
      const model::Range range = owned(u);
      staging_.to_host(host_master_.get() + owned_at(u), master_at(u, range.offset),
                       range.size * sizeof(float), stream_);
    }
    if (eight_bit_state_) {
      eight_bit_state_->download(host_m_.get(), host_v_.get(), staging_);
      return;
    }
    staging_.to_host(host_m_.get(), m_.data(), m_.bytes(), stream_);
    staging_.to_host(host_v_.get(), v_.data(), v_.bytes(), stream_);
  }

  // The host copies -> device; the compute copy rebuilt from the master weights.
  void upload() {
    if (gatherer_) gatherer_->invalidate();  // gathers in flight read the compute shard
    if (offload_) {
      rebuild_compute_params();
      return;
    }
    for (int u = 0; u < layout_.num_units(); ++u) {
      const model::Range range = owned(u);
      staging_.to_device(master_at(u, range.offset), host_master_.get() + owned_at(u),
                         range.size * sizeof(float), stream_);
    }
    if (eight_bit_state_) {
      eight_bit_state_->upload(host_m_.get(), host_v_.get(), staging_);
    } else {
      staging_.to_device(m_.data(), host_m_.get(), m_.bytes(), stream_);
      staging_.to_device(v_.data(), host_v_.get(), v_.bytes(), stream_);
    }
    rebuild_compute_params();
  }

  // The compute copy from the master weights of the owned ranges (then made whole under stages
  // 1 and 2); returns with the stream drained.
  void rebuild_compute_params() {
    if (offload_) {
      host_adamw_->upload([this](const OwnedPiece& piece) { return compute_at(piece); });
    } else if constexpr (!kMasterIsCompute) {
      for (int u = 0; u < layout_.num_units(); ++u) {
        const model::Range range = owned(u);
        kernels::gpu::cast_from_float(compute_copy_at(u, range.offset), master_at(u, range.offset),
                                      range.size, stream_);
      }
    }
    if (stage_ == 1 || stage_ == 2) gather_compute_params();
    AT_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  // Every tensor cut at the rank-part boundaries of its unit; only_shard: this rank's parts;
  // otherwise the owned ranges (everything under stage 0, the shard under stages 1-3).
  std::vector<StateRun> runs(bool only_shard) {
    std::vector<StateRun> result;
    for (const TensorPiece& piece :
         tensor_pieces(layout_, (only_shard || stage_ >= 1) ? rank_ : -1)) {
      const std::size_t at = state_index(piece.unit, piece.begin);
      StateRun& run = result.emplace_back();
      run.begin = piece.begin;
      run.end = piece.end;
      if (!file_) {
        run.params = host_master_.get() + at;
        run.exp_avg = host_m_.get() + at;
        run.exp_avg_sq = host_v_.get() + at;
        continue;
      }
      for (int kind = 0; kind < kStateKinds; ++kind) {  // offload nvme: they stay in the file
        run.streamed[static_cast<std::size_t>(kind)] = {
            [this, kind, at](std::size_t from, std::span<float> out) {
              file_->read(kind, at + from, out);
            },
            [this, kind, at](std::size_t from, std::span<const float> in) {
              file_->write(kind, at + from, in);
            }};
      }
    }
    return result;
  }

  OptimizerSettings settings_;
  bool eight_bit_;  // optimizer adamw_8bit: eight_bit_state_ holds the moments, m_ and v_ none
  cudaStream_t stream_;
  bool offload_;  // offload_optimizer: master, m, v on the host, the step on the CPU
  bool nvme_;     // offload_optimizer nvme: master, m, v in file_
  std::vector<std::size_t> owned_offsets_;  // per unit, + the total
  std::size_t owned_total_;
  autotrain::gpu::DeviceBuffer
      params_;  // [padded_size] F (stage 3: [owned_total] F in shard space); empty on the host
  std::unique_ptr<OffloadedShard<F>> param_shard_;  // offload_param: [owned_total] F, shard space
  autotrain::gpu::DeviceBuffer master_;             // [owned_total] fp32, unless F is float
  autotrain::gpu::DeviceBuffer m_;                  // [owned_total] fp32
  autotrain::gpu::DeviceBuffer v_;                  // [owned_total] fp32
  autotrain::gpu::DeviceBuffer norm_total_;
  autotrain::gpu::DeviceBuffer norm_scratch_;
  autotrain::gpu::DeviceBuffer norm_parts_;  // [2 · world] fp32
  autotrain::gpu::DeviceBuffer
      gather_scratch_;  // export from a master shard (stages 1-2 in 16 bits, stage 3)
  autotrain::gpu::StagedCopy staging_;  // pinned chunks between the device and the host copies
  // [owned_total]: the checkpoint copies of device state, pageable; with offload the state itself,
  // pinned.
  HostFloats host_master_;
  HostFloats host_m_;
  HostFloats host_v_;
  std::unique_ptr<NvmeState> file_;            // offload nvme
  std::unique_ptr<HostGradients> host_grads_;  // offload cpu: the gradients sent in backward
  std::unique_ptr<HostAdamW<F>> host_adamw_;   // offload
  PinnedFloats host_norm_parts_;
  std::vector<std::vector<ParamSegment>> segments_;   // per unit, of owned(unit)
  std::unique_ptr<DeviceAdamW8bit> eight_bit_state_;  // optimizer adamw_8bit
  std::vector<CommHandle> gathers_;                   // stage 1/2 parameter all-gathers
  long long steps_ = 0;
};

}  // namespace

template <typename F>
std::unique_ptr<DeviceEngine<F>> DeviceEngine<F>::create(const model::ParamLayout& layout,
                                                         Communicator& comm,
                                                         const EngineOptions& options,
                                                         cudaStream_t stream) {
  validate_engine_options(layout, comm, options);
  if (options.optimizer.kind == OptimizerKind::adamw_8bit &&
      options.offload_optimizer != Offload::none) {
    throw CollectiveError(cat(
        "optimizer adamw_8bit with offload_optimizer_device ",
        offload_name(options.offload_optimizer),
        ": the offloaded step on the host is AdamW's 32-bit one; use offload_optimizer_device none "
        "(the 8-bit state is a quarter of AdamW's), or optimizer adamw"));
  }
  if (options.optimizer.kind != OptimizerKind::adamw &&
      options.optimizer.kind != OptimizerKind::adamw_8bit) {
    throw CollectiveError(
        "device cuda has the AdamW optimizer only; use optimizer adamw, or "
        "device cpu");
  }
  return std::make_unique<DeviceZeroEngine<F>>(layout, comm, options, stream);
}

template class DeviceEngine<float>;
template class DeviceEngine<__nv_bfloat16>;
template class DeviceEngine<__half>;

}  // namespace autotrain::zero::gpu
