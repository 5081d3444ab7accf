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
// themselves live in host memory (offload_param: cpu) the step writes them in place instead.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <vector>

#include "autotrain/core/gpu/device.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/optim/optimizer.hpp"

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
  // (device memory, or host memory when `compute_on_host`).
  using GradsAt = std::function<const float*(const OwnedPiece&)>;
  using ComputeAt = std::function<F*(const OwnedPiece&)>;

  // `pieces` cover owned space in order, none longer than kPiece; `segments` per unit (its owned
  // range's weight-decay runs); master, m and v: pinned host arrays over owned space.
  HostAdamW(std::vector<OwnedPiece> pieces, std::vector<std::vector<ParamSegment>> segments,
            float* master, float* m, float* v, bool compute_on_host, cudaStream_t stream);

  void step(const GradsAt& grads, const ComputeAt& compute, const OptimizerSettings& settings,
            float lr, float grad_scale, long long step);
  // The compute parameters from the master weights (after init and load); queued like step's.
  void upload(const ComputeAt& compute);
  // Waits until no copy still reads or writes the host buffers (the master weights included).
  void wait() const;

  std::size_t pinned_bytes() const;  // the double buffers

 private:
  // The updated piece `i` (in the out buffer `slot`, or master for fp32) to its compute place.
  void send(std::size_t i, std::size_t slot, const ComputeAt& compute);
  // piece i's master weights -> F into `out` (host).
  void update(const OwnedPiece& piece, const float* grads, F* out,
              const OptimizerSettings& settings, float lr, float grad_scale, long long step);

  std::vector<OwnedPiece> pieces_;
  std::vector<std::vector<ParamSegment>> segments_;
  float* master_;
  float* m_;
  float* v_;
  bool compute_on_host_;
  cudaStream_t stream_;                       // the model's
  autotrain::gpu::Stream down_;               // gradients to the host
  autotrain::gpu::Stream up_;                 // weights to the device
  std::size_t half_;                          // the largest piece
  autotrain::gpu::PinnedArray<float> grads_;  // [2 · half_]
  autotrain::gpu::PinnedArray<F> out_;        // [2 · half_] unless F is float or on host
  autotrain::gpu::Event grads_in_[2];         // a piece's gradient arrived in half k
  autotrain::gpu::Event out_sent_[2];         // half k's weights left (free again)
  autotrain::gpu::Event started_;             // the model stream's work before the step
  autotrain::gpu::Event done_;                // the step's last weights sent
};

// Owned space cut into pieces of at most HostAdamW's kPiece elements (`owned` per unit).
std::vector<OwnedPiece> owned_pieces(const std::vector<model::Range>& owned);

}  // namespace autotrain::zero::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
