#pragma once
// ZeRO-Offload's optimizer (Ren et al., arXiv:2101.06840) for the device engine: the fp32
// master weights and AdamW moments of the rank's owned ranges live in pinned host memory and the
// AdamW step runs on the CPU (optim/adamw_kernel.hpp), so the device keeps only the compute-dtype
// parameters and the gradients. A step walks the owned ranges in pieces of at most kPiece
// elements, overlapping three things on two pinned double buffers and one copy stream:
//
//   copy stream   D2H grad(i+1)            H2D weights(i-1)
//   host                        AdamW(i) -> weights(i) in F
//
// The copy stream starts after the work queued on the model's stream (the gradient adds of the
// reduction) and the model's stream waits for the last weights before anything queued after the
// step (the next forward, the stage 1-2 parameter all-gather) runs. Where the compute parameters
// themselves are offloaded (offload_param) the step writes them in place in host memory (cpu),
// or stores each piece into their file (nvme), instead.
// With offload_optimizer nvme the master weights and moments live in an NvmeState (three arrays
// over owned space) instead: the step walks its blocks (read i+1 and write i-1 while the pieces
// of block i run through the pipeline above); pieces never cross a block.
// With HostGradients (offload_optimizer cpu) the gradients reached the host during backward:
// the step waits for each piece's unit instead of fetching it (no D2H in the pipeline).
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <vector>

#include "../nvme_state.hpp"
#include "../offloaded_shard.hpp"
#include "autotrain/core/gpu/device.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/optim/optimizer.hpp"
#include "host_gradients.hpp"

namespace autotrain::zero::gpu {

// A run of owned elements inside one unit: flat [flat, flat + count), owned-space index `state`.
struct OwnedPiece {
  int unit = 0;
  std::size_t flat = 0;
  std::size_t count = 0;
  std::size_t state = 0;
};

template <typename F>
class HostAdamW {
 public:
  static constexpr std::size_t kPiece = std::size_t{1} << 22;  // elements (16 MiB of fp32)

  // Where a piece's reduced fp32 gradient is (device), and where its compute parameters go
  // (device memory; unused with `compute_shard`).
  using GradsAt = std::function<const float*(const OwnedPiece&)>;
  using ComputeAt = std::function<F*(const OwnedPiece&)>;

  // Where a piece's master weights, m and v are (host memory).
  struct StateAt {
    float* master;
    float* m;
    float* v;
  };
  using StateVisitor = std::function<void(const OwnedPiece&, StateAt)>;

  // `pieces` cover owned space in order, none longer than kPiece (nor crossing a block of
  // `file`); `segments` per unit (its owned range's weight-decay runs); master, m and v: pinned
  // host arrays over owned space, or null with `file` (its arrays 0, 1, 2); `compute_shard`:
  // the compute parameters offloaded (stage 3, shard space = owned space), or null. Both must
  // outlive this.
  HostAdamW(std::vector<OwnedPiece> pieces, std::vector<std::vector<ParamSegment>> segments,
            float* master, float* m, float* v, OffloadedShard<F>* compute_shard,
            cudaStream_t stream, NvmeState* file = nullptr, HostGradients* host_grads = nullptr);

  // Every piece's state in order (from the file, a block at a time; written back if asked):
  // initialisation, checkpoints.
  void visit_state(const StateVisitor& visit, bool write_back);

  void step(const GradsAt& grads, const ComputeAt& compute, const OptimizerSettings& settings,
            float lr, float grad_scale, long long step);
  // The compute parameters from the master weights (after init and load); queued like step's.
  void upload(const ComputeAt& compute);
  // Waits until no copy still reads or writes the host buffers (the master weights included).
  void wait() const;

  std::size_t pinned_bytes() const;  // the double buffers

 private:
  // Pieces [first, last) through the pipeline: update (with `grads`) or, without, upload.
  struct Update {
    const GradsAt* grads;  // null: upload only
    const OptimizerSettings* settings;
    float lr, grad_scale;
    long long step;
  };
  void run(std::size_t first, std::size_t last, const std::function<StateAt(const OwnedPiece&)>& at,
           const ComputeAt& compute, const Update& update);
  // The updated piece `i` (in the out buffer `slot`, or master for fp32) to its compute place.
  void send(std::size_t i, std::size_t slot, const float* master, const ComputeAt& compute);
  // A piece's master weights updated, and rounded to F into `out` (host) where not null.
  void update(const OwnedPiece& piece, StateAt state, const float* grads, F* out,
              const Update& update);
  // Every piece through run(), from memory or block by block from the file.
  void run_all(const ComputeAt& compute, const Update& update);

  std::vector<OwnedPiece> pieces_;
  std::vector<std::vector<ParamSegment>> segments_;
  float* master_;
  float* m_;
  float* v_;
  OffloadedShard<F>* compute_shard_;
  F* compute_host_;  // compute_shard_'s host memory, written in place; null: stored
  NvmeState* file_;
  HostGradients* host_grads_;
  cudaStream_t stream_;                       // the model's
  autotrain::gpu::Stream down_;               // gradients to the host
  autotrain::gpu::Stream up_;                 // weights to the device
  std::size_t half_;                          // the largest piece
  autotrain::gpu::PinnedArray<float> grads_;  // [2 · half_], unless host_grads_
  autotrain::gpu::PinnedArray<F> out_;        // [2 · half_] where the step rounds into it
  autotrain::gpu::Event grads_in_[2];         // a piece's gradient arrived in half k
  autotrain::gpu::Event out_sent_[2];         // half k's weights left (free again)
  autotrain::gpu::Event started_;             // the model stream's work before the step
  autotrain::gpu::Event done_;                // the step's last weights sent
};

// Owned space cut into pieces of at most HostAdamW's kPiece elements (`owned` per unit), none
// crossing a multiple of `block` (an NvmeState's blocks).
std::vector<OwnedPiece> owned_pieces(const std::vector<model::Range>& owned,
                                     std::size_t block = HostAdamW<float>::kPiece);

}  // namespace autotrain::zero::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
