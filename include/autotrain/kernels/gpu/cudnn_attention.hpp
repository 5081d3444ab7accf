#pragma once
// cuDNN's fused attention (scaled dot-product attention, FlashAttention-2's scheme in NVIDIA's
// kernels) for the causal grouped-query attention of attention.hpp, forward and backward, built
// through cuDNN's backend API (there is no cudnn-frontend here): per shape (kernels::SdpaShape:
// B, T, NH, NKV, HS, bf16/fp16, scale, soft cap, window) an operation graph of matmuls,
// pointwise ops and reductions in the pattern cuDNN's fused-attention engines match, heuristics
// (mode A), the first engine configuration whose execution plan finalizes, its workspace; built
// once per (thread, device) and cached. Q, K, V are read from the fused qkv buffer through
// strides and dQ, dK, dV written into dqkv the same way (attention_choice.hpp's layouts).
//
// Shapes as flash_attention.hpp's: qkv and dqkv [B, T, (NH + 2·NKV)·HS], out and dout
// [B, T, NH·HS], lse [B, NH, T] fp32: cuDNN's softmax statistics, max + log Σ exp(s - max) of
// each row's scores s (natural log, after the scale, soft cap and mask) = log Σ exp(s), flash
// attention's lse. bf16 and fp16 only.
//
// cuDNN is compiled in only for real CUDA builds that found it (AUTOTRAIN_HAVE_CUDNN;
// cmake/AutotrainDependencies.cmake): the CUDA emulator cannot run it, so there every call to
// cudnn_attention_prepare refuses and the model runs our own kernels.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>
#include <string>

#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/attention_choice.hpp"

namespace autotrain::kernels::gpu {

// Whether this binary has cuDNN compiled in, and its version ("cuDNN 9.19.0 (built with
// 9.19.0)") or why not.
bool cudnn_attention_built();
std::string cudnn_attention_version();

// Builds (or finds cached) the forward and backward plans for `shape` on the current device,
// allocating their workspace now, so that training allocates nothing later. Returns "" where
// both built, else why not (this build has no cuDNN, the shape is refused, heuristics found no
// engine, every engine configuration failed to finalize, with cuDNN's own message); never throws
// for an unsupported shape: the caller falls back to our kernels.
std::string cudnn_attention_prepare(const SdpaShape& shape, cudaStream_t stream);

// Whether cuDNN takes the forward and backward graphs of `shape` for the GPU that `device_json`
// describes (cuDNN's device properties as JSON, CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION; cuDNN
// 9.8 or later), on a machine without a GPU: each graph is built, heuristics asked and execution
// plans finalized until one builds. Runtime-compiled engines compile their kernels and then need
// a CUDA driver to load them; with the toolkit's stub driver that last step fails, and a graph
// that got that far counts as taken. What CI checks of our graphs without a GPU
// (tests/kernels/gpu/cudnn_plans.cpp); the plans are dropped.
struct CudnnPlanCheck {
  struct Result {
    bool taken = false;
    std::string detail;  // the engine, or why not
  };
  Result forward, backward;
};
CudnnPlanCheck cudnn_attention_plan_check(const SdpaShape& shape, const std::string& device_json);

// "forward engine 7, backward engine 8 (nondeterministic)": the engines a prepared shape runs,
// for the log. Error where its plans did not build.
std::string cudnn_attention_engines(const SdpaShape& shape);

// out [B, T, NH·HS] and lse [B, NH, T] overwritten. The plans must have been prepared (else
// this prepares them, and throws Error where they do not build).
template <typename F>
void cudnn_attention_forward(F* out, float* lse, const F* qkv, int B, int T, int NH, int NKV,
                             int HS, cudaStream_t stream, const AttentionOptions& options = {});

// dqkv [B, T, (NH + 2·NKV)·HS] overwritten; out and lse are the forward's; delta [B, NH, T]
// fp32 is scratch (Σ dout·out per row). Deterministic unless AUTOTRAIN_CUDNN_DETERMINISTIC=0 (read
// once per process; SdpaShape::deterministic): then dQ is accumulated by atomics in fp32 in the
// workspace, not bit-reproducible from run to run, with far less workspace.
template <typename F>
void cudnn_attention_backward(F* dqkv, float* delta, const F* dout, const F* qkv, const F* out,
                              const float* lse, int B, int T, int NH, int NKV, int HS,
                              cudaStream_t stream, const AttentionOptions& options = {});

}  // namespace autotrain::kernels::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
