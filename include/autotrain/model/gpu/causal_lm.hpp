#pragma once
// A causal language model on one CUDA device, whatever the family: the device counterpart of
// model/causal_lm.hpp, which the GPU replica (train/gpu/replica.cpp), bench train and generate
// drive without naming a family. make_device_causal_lm / make_device_decoder build the layout's
// family's model: gpu::DeviceGpt2 (gpu/gpt2.hpp) or gpu::DeviceLlama (gpu/llama.hpp), and their
// key/value-cache decoders (gpu/decoder.hpp, gpu/llama_decoder.hpp).
//
// F is the element type of activations, parameters and gradients on the device (float,
// __nv_bfloat16 or __half: the compute precision of mixed_precision no|bf16|fp16; every kernel
// accumulates in fp32). All device memory is allocated at construction; forward and backward
// allocate nothing. Work is queued on the stream given at construction.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/gpu/matmul.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/model/profile.hpp"
#include "autotrain/model/recompute.hpp"
#include "autotrain/model/unit_access.hpp"

namespace autotrain::model::gpu {

template <typename F>
class DeviceCausalLM {
 public:
  virtual ~DeviceCausalLM() = default;

  virtual int batch_size() const = 0;
  virtual int seq_len() const = 0;

  // inputs, targets: [B, T] token ids in host memory (checked as the CPU model checks them; a
  // target may be kIgnoreTarget), staged through pinned memory (the caller may reuse them on
  // return). Queues the forward pass and the copy of the per-position losses to the host; the
  // host does not wait, so it can queue backward meanwhile.
  virtual void forward_async(BasicUnitAccess<F>& access, const std::int32_t* inputs,
                             const std::int32_t* targets) = 0;
  // The mean loss of the last forward over its targets that carry loss (CausalLM::forward; fp32
  // losses summed in double on the host, in order); waits for that forward only, not for work
  // queued after it.
  virtual float loss() const = 0;
  // forward_async(), then loss().
  float forward(BasicUnitAccess<F>& access, const std::int32_t* inputs,
                const std::int32_t* targets) {
    forward_async(access, inputs, targets);
    return loss();
  }

  // Adds d(loss_scale · mean loss)/d(params) into access.grads() (loss_scale also carries fp16's
  // loss scaling). Queues work only; does not synchronise.
  virtual void backward(BasicUnitAccess<F>& access, float loss_scale) = 0;
  // Adds d(loss_scale · Σ weights[i] · losses()[i])/d(params), weights [B, T] in host memory
  // (CausalLM::backward_weighted); copies them before it returns.
  virtual void backward_weighted(BasicUnitAccess<F>& access, float loss_scale,
                                 std::span<const float> weights) = 0;

  // Per-position losses [B, T] of the last forward (waits for it, as loss()); with a score head
  // the marked positions' scores (CausalLM::losses; backward() throws, so does
  // make_device_decoder).
  virtual std::span<const float> losses() const = 0;

  // Bytes of device memory held for activations, their gradients and scratch.
  virtual std::size_t activation_bytes() const = 0;

  // Per-kernel-kind timing, as the CPU model's (same rows): CUDA events around each call while
  // profiling is on; profile() waits for them and sums since set_profiling(true).
  virtual void set_profiling(bool on) = 0;
  virtual std::vector<ProfileEntry> profile() const = 0;
};

// How a device decoder queues a token's step: kernel by kernel, or (graph) as a CUDA graph
// captured at the second step of its kind (with logits, without) and replayed at every later one:
// one launch instead of about ten a layer. With graph the parameters must stay where they are for
// the decoder's life: every feed_token's `access` gives the same pointers (a flat access does).
enum class DecodeLaunch { kernels, graph };

// Inference one token at a time with a key/value cache (batch 1): the device counterpart of
// CausalLM::reset_cache() / feed_token(), which `generate` runs.
template <typename F>
class DeviceDecoder {
 public:
  virtual ~DeviceDecoder() = default;

  // Forgets the positions fed so far.
  virtual void reset() = 0;
  // Positions fed since the last reset.
  virtual int length() const = 0;

  // Runs `token` (checked against vocab_size) at position length() and caches its keys and
  // values. With `logits` [vocab_size], writes the next token's logits there in fp32 and waits
  // for the stream; with an empty span it only queues the work (a prompt's tokens before its last
  // need no logits). Throws Error once the cache is full.
  virtual void feed_token(BasicUnitAccess<F>& access, std::int32_t token,
                          std::span<float> logits) = 0;
  // Runs `tokens` (a prompt) at positions length(), length() + 1, ... as feed_token would one by
  // one, in steps of several rows: each step's products over all its rows at once (the weights
  // read once a step, not once a token), each row's attention over the cache up to its own
  // position. `logits` as feed_token's, for the last token.
  virtual void feed_tokens(BasicUnitAccess<F>& access, std::span<const std::int32_t> tokens,
                           std::span<float> logits) = 0;

  // Bytes of device memory held (the cache and the rows of every activation a step feeds).
  virtual std::size_t device_bytes() const = 0;
};

// The layout's family's device model for micro-batches [B, T] (T <= block_size) on the current
// device. `recompute`: activation checkpointing, as make_causal_lm's (model/causal_lm.hpp,
// model/recompute.hpp): what forward keeps of each block, and what backward recomputes before
// differentiating it; the same bits in every mode.
template <typename F>
std::unique_ptr<DeviceCausalLM<F>> make_device_causal_lm(const ParamLayout& layout, int B, int T,
                                                         cudaStream_t stream,
                                                         const kernels::gpu::BlasHandle& blas,
                                                         Recompute recompute = Recompute::none);

// The device memory make_device_causal_lm's model allocates for B sequences of T positions (its
// activation_bytes()), computed on the host: no device is needed. The attention path is the one
// the model would choose without building cuDNN's plans (DeviceModelBase::plans_fused_attention).
template <typename F>
std::size_t planned_activation_bytes(const ParamLayout& layout, int B, int T, Recompute recompute);

// The layout's family's decoder with a cache of `positions` (1..block_size) positions.
template <typename F>
std::unique_ptr<DeviceDecoder<F>> make_device_decoder(const ParamLayout& layout, int positions,
                                                      cudaStream_t stream,
                                                      const kernels::gpu::BlasHandle& blas,
                                                      DecodeLaunch launch = DecodeLaunch::kernels);

}  // namespace autotrain::model::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
