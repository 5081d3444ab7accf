// GPT-2 forward and backward on one CUDA device: src/model/gpt2.cpp step for step (same tensor
// offsets, same unit hook order, same residual-gradient trick), with the kernels of
// kernels/gpu/ queued on one stream. Shapes: B batch, T positions, C = n_embd, NH heads,
// L layers, V vocabulary, Vp padded vocabulary.
// Invariants: all device memory is one allocation made at construction; parameter gradients
// accumulate (+=); activation gradients are overwritten, except the residual stream, whose single
// gradient buffer [B, T, C] is zeroed before ln_f backward and collects every block's
// contribution (LayerNorm backward adds into it).
// Written twice on purpose, here and in src/model/gpt2.cpp, until the model-family description
// (docs/architecture.md) writes each family once per device: the device kernels take a stream,
// the cuBLASLt handle and fused epilogues, and keep fp32 statistics, so one shared body would be
// a macro layer over two kernel sets. tests/model/gpu/gpt2_test.cpp keeps the two in step
// (loss, every gradient, the hook order and the profile rows).
// This is host code only (it launches no kernel of its own), so it is a .cpp compiled as C++20:
// the header's std::span needs C++20 and the .cu files are C++17 (CMake 3.25 has no C++20 flag for
// nvcc).
#include "autotrain/model/gpu/gpt2.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <type_traits>

#include "../check_tokens.hpp"
#include "../kernel_clock.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/gpu/check.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/kernels/gpu/attention.hpp"
#include "autotrain/kernels/gpu/crossentropy.hpp"
#include "autotrain/kernels/gpu/encoder.hpp"
#include "autotrain/kernels/gpu/flash_attention.hpp"
#include "autotrain/kernels/gpu/layernorm.hpp"
#include "autotrain/kernels/gpu/residual.hpp"

namespace autotrain::model::gpu {

using namespace autotrain::kernels::gpu;
using autotrain::kernels::Transpose;

// The model's shape, the tensor offsets inside a unit, and every device buffer, carved from one
// allocation. Per-layer activations are [L, ...] with a stride of one layer's tensor.
// LayerNorm statistics and losses are fp32 whatever F is (the kernels' contract).
template <typename F>
struct DeviceGpt2<F>::Buffers : TensorOffsets {
  ModelConfig config;

  std::size_t bt;          // B·T: stride of per-layer [B, T] statistics
  std::size_t btc;         // B·T·C: stride of per-layer [B, T, C] tensors
  std::size_t att_stride;  // B·NH·T·T

  autotrain::gpu::DeviceBuffer memory;
  F* encoded;                      // [B, T, C]
  F* ln1;                          // [L, B, T, C]
  float *ln1_mean, *ln1_rstd;      // [L, B, T]
  F* qkv;                          // [L, B, T, 3C]
  F* atty;                         // [L, B, T, C]
  F* att;                          // [L, B, NH, T, T]
  F* residual2;                    // [L, B, T, C]
  F* ln2;                          // [L, B, T, C]
  float *ln2_mean, *ln2_rstd;      // [L, B, T]
  F *fch, *fch_gelu;               // [L, B, T, 4C]
  F* residual3;                    // [L, B, T, C]
  F* lnf;                          // [B, T, C]
  float *lnf_mean, *lnf_rstd;      // [B, T]
  F* proj;                         // [B, T, C] output of c_proj before the residual add
  F* logits;                       // [B, T, Vp]; holds dlogits once backward starts
  float *lse, *losses;             // [B, T]
  std::int32_t *inputs, *targets;  // [B, T] copied from the host every forward
  std::int32_t* token_runs;        // [3·B·T + 1] the inputs' positions grouped by token
  F* dresidual;                    // [B, T, C] the residual stream, accumulated
  F* dsmall;                       // [B, T, C] d(ln output) / d(attention output) / d(lnf)
  F* dlarge;                       // [B, T, 4C] d(fch) / d(qkv)
  F* datt;                         // [B, NH, T, T] attention_backward's d(scores) scratch
  float* scratch;                  // LayerNorm and bias-gradient partial sums
  // Flash attention keeps no [T, T] matrices (att and datt are then empty) but these:
  std::size_t rows_stride;  // B·NH·T
  float* flash_lse;         // [L, B, NH, T] each row's log-sum-exp
  float* flash_delta;       // [B, NH, T] the backward's Σ dout·out

  // Layer l's slice of the per-layer tensors: what its forward writes and its backward reads.
  struct Layer {
    F* ln1;
    float *ln1_mean, *ln1_rstd;
    F *qkv, *atty, *att, *residual2, *ln2;
    float *ln2_mean, *ln2_rstd;
    F *fch, *fch_gelu, *residual3;
    float* flash_lse;
  };
  Layer layer(int l) const {
    const auto i = static_cast<std::size_t>(l);
    return {ln1 + i * btc,       ln1_mean + i * bt,
            ln1_rstd + i * bt,   qkv + i * 3 * btc,
            atty + i * btc,      att + i * att_stride,
            residual2 + i * btc, ln2 + i * btc,
            ln2_mean + i * bt,   ln2_rstd + i * bt,
            fch + i * 4 * btc,   fch_gelu + i * 4 * btc,
            residual3 + i * btc, flash_lse + i * rows_stride};
  }

  Buffers(const ParamLayout& layout, int B, int T, bool flash)
      : TensorOffsets(layout), config(layout.config()) {
    const std::size_t L = static_cast<std::size_t>(config.n_layer);
    const std::size_t C = static_cast<std::size_t>(config.n_embd);
    const std::size_t Vp = static_cast<std::size_t>(config.padded_vocab_size);
    bt = static_cast<std::size_t>(B) * static_cast<std::size_t>(T);
    btc = bt * C;
    rows_stride = static_cast<std::size_t>(B) * static_cast<std::size_t>(config.n_head) *
                  static_cast<std::size_t>(T);
    att_stride = flash ? 0 : rows_stride * static_cast<std::size_t>(T);
    const std::size_t flash_rows = flash ? rows_stride : 0;
    const std::size_t scratch_floats =
        std::max(layernorm_backward_scratch_floats(bt, config.n_embd),
                 matmul_backward_scratch_floats(bt, 4 * config.n_embd));

    auto carve = [&](autotrain::gpu::SubBuffers parts) {
      parts.take(encoded, btc);
      parts.take(ln1, L * btc);
      parts.take(ln1_mean, L * bt);
      parts.take(ln1_rstd, L * bt);
      parts.take(qkv, L * 3 * btc);
      parts.take(atty, L * btc);
      parts.take(att, L * att_stride);
      parts.take(residual2, L * btc);
      parts.take(ln2, L * btc);
      parts.take(ln2_mean, L * bt);
      parts.take(ln2_rstd, L * bt);
      parts.take(fch, L * 4 * btc);
      parts.take(fch_gelu, L * 4 * btc);
      parts.take(residual3, L * btc);
      parts.take(lnf, btc);
      parts.take(lnf_mean, bt);
      parts.take(lnf_rstd, bt);
      parts.take(proj, btc);
      parts.take(logits, bt * Vp);
      parts.take(lse, bt);
      parts.take(losses, bt);
      parts.take(inputs, bt);
      parts.take(targets, bt);
      parts.take(token_runs, 3 * bt + 1);
      parts.take(dresidual, btc);
      parts.take(dsmall, btc);
      parts.take(dlarge, 4 * btc);
      parts.take(datt, att_stride);
      parts.take(flash_lse, L * flash_rows);
      parts.take(flash_delta, flash_rows);
      parts.take(scratch, scratch_floats);
      return parts.bytes();
    };
    memory = autotrain::gpu::DeviceBuffer(carve(autotrain::gpu::SubBuffers(nullptr)));
    carve(autotrain::gpu::SubBuffers(memory.data()));
  }
};

namespace {

// One layer's attention: flash attention where the model chose it (16-bit types only), else the
// path AUTOTRAIN_CUDA_ATTENTION selects.
template <typename F>
void layer_attention_forward(bool flash, F* out, F* att, float* lse, const F* qkv, int B, int T,
                             int C, int NH, cudaStream_t stream) {
  if constexpr (sizeof(F) == 2) {
    if (flash) {
      flash_attention_forward(out, lse, qkv, B, T, C, NH, stream);
      return;
    }
  }
  attention_forward(out, att, qkv, B, T, C, NH, stream);
}

template <typename F>
void layer_attention_backward(bool flash, F* dqkv, F* datt, float* delta, const F* dout,
                              const F* qkv, const F* out, const F* att, const float* lse, int B,
                              int T, int C, int NH, cudaStream_t stream) {
  if constexpr (sizeof(F) == 2) {
    if (flash) {
      flash_attention_backward(dqkv, delta, dout, qkv, out, lse, B, T, C, NH, stream);
      return;
    }
  }
  attention_backward(dqkv, datt, dout, qkv, att, B, T, C, NH, stream);
}

}  // namespace

// Event pairs around the timed calls of a profiled step. Events are created as the step needs
// them (profiling only: the timed steps of bench train run without) and destroyed with it.
template <typename F>
struct DeviceGpt2<F>::Profiler {
  struct Mark {
    int row;  // 2 · ProfileOp + pass
    cudaEvent_t start;
    cudaEvent_t stop;
  };
  std::vector<cudaEvent_t> events;
  std::vector<Mark> marks;
  cudaEvent_t last = nullptr;  // the previous restart or lap

  Profiler() = default;
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;
  ~Profiler() {
    for (cudaEvent_t event : events) cudaEventDestroy(event);
  }
  cudaEvent_t record(cudaStream_t stream) {
    cudaEvent_t event = nullptr;
    AT_CUDA_CHECK(cudaEventCreate(&event));
    events.push_back(event);
    AT_CUDA_CHECK(cudaEventRecord(event, stream));
    return event;
  }
  void restart(cudaStream_t stream) { last = record(stream); }
  void lap(int row, cudaStream_t stream) {
    const cudaEvent_t now = record(stream);
    marks.push_back({row, last, now});
    last = now;
  }
};

namespace {

// The device counterpart of KernelClock (model/kernel_clock.hpp): restart() after a unit hook,
// lap(kind) after each kernel call, each an event on the model's stream when profiling (the
// kernel's GPU time lies between two of them); one branch per call otherwise.
template <typename Profiler>
class EventClock {
 public:
  EventClock(Profiler* profiler, cudaStream_t stream, Pass pass)
      : profiler_(profiler), stream_(stream), pass_(static_cast<int>(pass)) {
    restart();
  }
  void restart() {
    if (profiler_ != nullptr) profiler_->restart(stream_);
  }
  void lap(ProfileOp kind) {
    if (profiler_ != nullptr) profiler_->lap(2 * kind + pass_, stream_);
  }

 private:
  Profiler* profiler_;
  cudaStream_t stream_;
  int pass_;
};

}  // namespace

template <typename F>
DeviceGpt2<F>::DeviceGpt2(const ParamLayout& layout, int B, int T, cudaStream_t stream,
                          const BlasHandle& blas)
    : B_(B),
      T_(T),
      stream_(stream),
      blas_(blas),
      host_tokens_(2 * static_cast<std::size_t>(B) * static_cast<std::size_t>(T)),
      host_losses_(static_cast<std::size_t>(B) * static_cast<std::size_t>(T)),
      host_runs_(3 * static_cast<std::size_t>(B) * static_cast<std::size_t>(T) + 1) {
  const ModelConfig& c = layout.config();
  AT_CHECK(B >= 1, "model: batch_size must be >= 1, got ", B);
  AT_CHECK(T >= 1 && T <= c.block_size, "model: sequence length ", T,
           " must be in [1, block_size = ", c.block_size, "]");
  AT_CHECK(c.n_head >= 1 && c.n_embd % c.n_head == 0 && c.head_size() <= kMaxAttentionHeadSize,
           "model: the CUDA attention kernels need n_embd (", c.n_embd, ") divisible by n_head (",
           c.n_head, ") and a head size of at most ", kMaxAttentionHeadSize);
  AT_CHECK(c.n_embd <= kernels::gpu::kLayerNormMaxChannels, "model: n_embd = ", c.n_embd,
           " is wider than the ", kernels::gpu::kLayerNormMaxChannels,
           " channels the CUDA LayerNorm holds in one warp's registers (GPT-2 XL has 1600)");
  // Flash attention where it was asked for and applies (16-bit, head size 16..64); elsewhere
  // the fast path, with a line saying so.
  flash_ = attention_kind() == AttentionKind::flash &&
           flash_attention_supports(sizeof(F), c.n_embd, c.n_head);
  if (attention_kind() == AttentionKind::flash && !flash_) {
    log::warn(
        "attention: flash attention needs bf16/fp16 and a head size that is a multiple of "
        "16 up to 64 (here ",
        sizeof(F) == 4 ? "fp32" : "16-bit", ", head size ", c.head_size(),
        "); using the fast path");
  }
  buffers_ = std::make_unique<Buffers>(layout, B, T, flash_);
  attention_prepare(stream_);  // the attention's cuBLAS workspace, now rather than in step 1
}

template <typename F>
DeviceGpt2<F>::~DeviceGpt2() = default;

template <typename F>
float DeviceGpt2<F>::forward(BasicUnitAccess<F>& access, const std::int32_t* inputs,
                             const std::int32_t* targets) {
  forward_async(access, inputs, targets);
  return loss();
}

template <typename F>
float DeviceGpt2<F>::loss() const {
  losses_copied_.synchronize();
  // In order, in double: as the CPU model sums its losses.
  return static_cast<float>(mean_loss(host_losses_.data(), host_losses_.size(), loss_positions_));
}

template <typename F>
void DeviceGpt2<F>::forward_async(BasicUnitAccess<F>& access, const std::int32_t* inputs,
                                  const std::int32_t* targets) {
  Buffers& b = *buffers_;
  const ModelConfig& cfg = b.config;
  const int B = B_, T = T_;
  const int C = cfg.n_embd, NH = cfg.n_head, L = cfg.n_layer;
  const int V = cfg.vocab_size, Vp = cfg.padded_vocab_size;
  const std::size_t bt = b.bt, btc = b.btc;
  check_tokens(inputs, bt, V, "inputs");
  loss_positions_ = check_targets(targets, bt, V);
  ready_for_backward_ = false;
  // Staged in pinned memory (the previous forward's copy out of it has run by now), so the
  // copy is asynchronous: from the caller's pageable arrays CUDA would first wait for the stream.
  tokens_copied_.synchronize();
  std::copy_n(inputs, bt, host_tokens_.data());
  std::copy_n(targets, bt, host_tokens_.data() + bt);
  AT_CUDA_CHECK(cudaMemcpyAsync(b.inputs, host_tokens_.data(), bt * sizeof(std::int32_t),
                                cudaMemcpyHostToDevice, stream_));
  AT_CUDA_CHECK(cudaMemcpyAsync(b.targets, host_tokens_.data() + bt, bt * sizeof(std::int32_t),
                                cudaMemcpyHostToDevice, stream_));
  // The positions grouped by token, for the deterministic token-embedding gradient.
  std::int32_t* runs = host_runs_.data();
  token_runs_ = make_token_runs(inputs, bt, runs, runs + bt, runs + 2 * bt + 1, run_scratch_);
  AT_CUDA_CHECK(cudaMemcpyAsync(b.token_runs, runs, host_runs_.size() * sizeof(std::int32_t),
                                cudaMemcpyHostToDevice, stream_));
  tokens_copied_.record(stream_);

  EventClock<Profiler> clock(profiler_.get(), stream_, Pass::forward);
  const F* p = access.params(0);
  clock.restart();
  encoder_forward(b.encoded, b.inputs, p + b.wte, p + b.wpe, B, T, C, stream_);
  clock.lap(kEncoder);
  access.release(0);

  const F* residual = b.encoded;
  for (int l = 0; l < L; ++l) {
    const int unit = ParamLayout::block_unit(l);
    p = access.params(unit);
    clock.restart();
    const auto x = b.layer(l);
    layernorm_forward(x.ln1, x.ln1_mean, x.ln1_rstd, residual, p + b.ln1w, p + b.ln1b, bt, C,
                      stream_);
    clock.lap(kLayerNorm);
    matmul_forward(blas_, x.qkv, x.ln1, p + b.qkvw, p + b.qkvb, bt, C, 3 * C, stream_);
    clock.lap(kMatmul);
    layer_attention_forward(flash_, x.atty, x.att, x.flash_lse, x.qkv, B, T, C, NH, stream_);
    clock.lap(kAttention);
    matmul_forward(blas_, b.proj, x.atty, p + b.attprojw, p + b.attprojb, bt, C, C, stream_);
    clock.lap(kMatmul);
    residual_forward(x.residual2, residual, b.proj, btc, stream_);
    clock.lap(kResidual);
    layernorm_forward(x.ln2, x.ln2_mean, x.ln2_rstd, x.residual2, p + b.ln2w, p + b.ln2b, bt, C,
                      stream_);
    clock.lap(kLayerNorm);
    // c_fc and the GELU in one call where cuBLASLt fuses them (the profile's matmul row then
    // holds the GELU too).
    matmul_gelu_forward(blas_, x.fch_gelu, x.fch, x.ln2, p + b.fcw, p + b.fcb, bt, C, 4 * C,
                        stream_);
    clock.lap(kMatmul);
    matmul_forward(blas_, b.proj, x.fch_gelu, p + b.fcprojw, p + b.fcprojb, bt, 4 * C, C, stream_);
    clock.lap(kMatmul);
    residual_forward(x.residual3, x.residual2, b.proj, btc, stream_);
    clock.lap(kResidual);
    access.release(unit);
    residual = x.residual3;
  }

  const int ln_f = L + 1;
  p = access.params(ln_f);
  clock.restart();
  layernorm_forward(b.lnf, b.lnf_mean, b.lnf_rstd, residual, p + b.lnfw, p + b.lnfb, bt, C,
                    stream_);
  clock.lap(kLayerNorm);
  access.release(ln_f);

  p = access.params(0);
  clock.restart();
  // logits[BT, Vp] = lnf[BT, C] · wte[Vp, C]ᵀ (tied LM head)
  gemm(blas_, Transpose::no, Transpose::yes, bt, static_cast<std::size_t>(Vp),
       static_cast<std::size_t>(C), b.lnf, static_cast<std::size_t>(C), p + b.wte,
       static_cast<std::size_t>(C), 0.0f, b.logits, static_cast<std::size_t>(Vp), stream_);
  clock.lap(kLmHead);
  access.release(0);
  clock.restart();
  crossentropy_forward(b.losses, b.lse, b.logits, b.targets, bt, V, Vp, stream_);
  clock.lap(kCrossEntropy);
  AT_CUDA_CHECK(cudaMemcpyAsync(host_losses_.data(), b.losses, bt * sizeof(float),
                                cudaMemcpyDeviceToHost, stream_));
  losses_copied_.record(stream_);
  ready_for_backward_ = true;
}

template <typename F>
void DeviceGpt2<F>::backward(BasicUnitAccess<F>& access, float loss_scale) {
  AT_CHECK(ready_for_backward_, "model: backward() needs a forward() with targets before it");
  ready_for_backward_ = false;  // the logits buffer becomes dlogits
  Buffers& b = *buffers_;
  const ModelConfig& cfg = b.config;
  const int B = B_, T = T_;
  const int C = cfg.n_embd, NH = cfg.n_head, L = cfg.n_layer;
  const int V = cfg.vocab_size, Vp = cfg.padded_vocab_size;
  const std::size_t bt = b.bt, btc = b.btc;
  const std::size_t Cs = static_cast<std::size_t>(C), Vps = static_cast<std::size_t>(Vp);
  F* dres = b.dresidual;
  F* dsmall = b.dsmall;
  F* dlarge = b.dlarge;

  EventClock<Profiler> clock(profiler_.get(), stream_, Pass::backward);

  // d(mean loss · scale)/d(loss of one position)
  const float dloss = position_dloss(loss_scale, loss_positions_);
  crossentropy_backward(b.logits, b.logits, b.lse, b.targets, dloss, bt, V, Vp, stream_);
  clock.lap(kCrossEntropy);
  {
    const F* p = access.params(0);
    F* g = access.grads(0);
    clock.restart();
    // dwte[Vp, C] += dlogits[BT, Vp]ᵀ · lnf[BT, C];  dlnf[BT, C] = dlogits · wte[Vp, C]
    gemm(blas_, Transpose::yes, Transpose::no, Vps, Cs, bt, b.logits, Vps, b.lnf, Cs, 1.0f,
         g + b.wte, Cs, stream_);
    gemm(blas_, Transpose::no, Transpose::no, bt, Cs, Vps, b.logits, Vps, p + b.wte, Cs, 0.0f,
         dsmall, Cs, stream_);
    clock.lap(kLmHead);
    access.release(0);
  }
  {
    const int ln_f = L + 1;
    const F* p = access.params(ln_f);
    F* g = access.grads(ln_f);
    AT_CUDA_CHECK(cudaMemsetAsync(dres, 0, btc * sizeof(F), stream_));
    clock.restart();
    layernorm_backward(dres, g + b.lnfw, g + b.lnfb, dsmall, b.layer(L - 1).residual3, p + b.lnfw,
                       b.lnf_mean, b.lnf_rstd, b.scratch, bt, C, stream_);
    clock.lap(kLayerNorm);
    access.release(ln_f);
    access.grads_ready(ln_f);
  }
  for (int l = L - 1; l >= 0; --l) {
    const int unit = ParamLayout::block_unit(l);
    const F* p = access.params(unit);
    F* g = access.grads(unit);
    clock.restart();
    const auto x = b.layer(l);
    const F* residual = l == 0 ? b.encoded : b.layer(l - 1).residual3;

    // MLP branch: residual3 = residual2 + c_proj(gelu(c_fc(ln_2(residual2)))), dres = d residual3;
    // the GELU's backward is fused into c_proj's (the matmul row holds it).
    matmul_backward(blas_, dlarge, g + b.fcprojw, g + b.fcprojb, dres, x.fch_gelu, p + b.fcprojw,
                    b.scratch, bt, 4 * C, C, stream_, x.fch);
    clock.lap(kMatmul);
    matmul_backward(blas_, dsmall, g + b.fcw, g + b.fcb, dlarge, x.ln2, p + b.fcw, b.scratch, bt, C,
                    4 * C, stream_);
    clock.lap(kMatmul);
    layernorm_backward(dres, g + b.ln2w, g + b.ln2b, dsmall, x.residual2, p + b.ln2w, x.ln2_mean,
                       x.ln2_rstd, b.scratch, bt, C, stream_);
    clock.lap(kLayerNorm);
    // Attention branch: residual2 = residual + c_proj(attn(c_attn(ln_1(residual)))),
    // dres = d residual2 now
    matmul_backward(blas_, dsmall, g + b.attprojw, g + b.attprojb, dres, x.atty, p + b.attprojw,
                    b.scratch, bt, C, C, stream_);
    clock.lap(kMatmul);
    layer_attention_backward(flash_, dlarge, b.datt, b.flash_delta, dsmall, x.qkv, x.atty, x.att,
                             x.flash_lse, B, T, C, NH, stream_);
    clock.lap(kAttention);
    matmul_backward(blas_, dsmall, g + b.qkvw, g + b.qkvb, dlarge, x.ln1, p + b.qkvw, b.scratch, bt,
                    C, 3 * C, stream_);
    clock.lap(kMatmul);
    layernorm_backward(dres, g + b.ln1w, g + b.ln1b, dsmall, residual, p + b.ln1w, x.ln1_mean,
                       x.ln1_rstd, b.scratch, bt, C, stream_);
    clock.lap(kLayerNorm);
    access.release(unit);
    access.grads_ready(unit);
  }
  F* g = access.grads(0);
  clock.restart();
  const TokenRuns runs{b.token_runs, b.token_runs + bt, b.token_runs + 2 * bt + 1, token_runs_};
  encoder_backward(g + b.wte, g + b.wpe, dres, runs, B, T, C, stream_);
  clock.lap(kEncoder);
  access.grads_ready(0);
}

template <typename F>
std::span<const float> DeviceGpt2<F>::losses() const {
  losses_copied_.synchronize();
  return {host_losses_.data(), host_losses_.size()};
}

template <typename F>
std::size_t DeviceGpt2<F>::activation_bytes() const {
  return buffers_->memory.bytes();
}

template <typename F>
void DeviceGpt2<F>::set_profiling(bool on) {
  if (on) {
    profiler_ = std::make_unique<Profiler>();
  } else {
    profiler_.reset();
  }
}

template <typename F>
std::vector<ProfileEntry> DeviceGpt2<F>::profile() const {
  std::array<double, 2 * kOpCount> seconds{};
  if (profiler_) {
    for (const auto& mark : profiler_->marks) {
      AT_CUDA_CHECK(cudaEventSynchronize(mark.stop));
      float ms = 0;
      AT_CUDA_CHECK(cudaEventElapsedTime(&ms, mark.start, mark.stop));
      seconds[static_cast<std::size_t>(mark.row)] += 1e-3 * ms;
    }
  }
  std::vector<ProfileEntry> rows;
  for (int op = 0; op < kOpCount; ++op) {
    rows.push_back({kOpNames[op], seconds[2 * static_cast<std::size_t>(op)],
                    seconds[2 * static_cast<std::size_t>(op) + 1]});
  }
  return rows;
}

template class DeviceGpt2<float>;
template class DeviceGpt2<__nv_bfloat16>;
template class DeviceGpt2<__half>;

}  // namespace autotrain::model::gpu
