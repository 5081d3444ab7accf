// ZeRO-Offload's CPU AdamW step for the device engine (host_adamw.hpp). Host code.
#include "host_adamw.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "autotrain/core/dtype.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/gpu/check.hpp"
#include "autotrain/optim/adamw_kernel.hpp"

namespace autotrain::zero::gpu {
namespace {

template <typename F>
constexpr bool kFloat = std::is_same_v<F, float>;

template <typename F>
std::uint16_t* bits(F* values) {
  return reinterpret_cast<std::uint16_t*>(values);
}

// out[0, n) = master rounded to F (nearest even, as the device's casts).
template <typename F>
void cast(const float* master, F* out, std::size_t n) {
  if constexpr (kFloat<F>) {
    std::copy_n(master, n, out);
  } else if constexpr (std::is_same_v<F, __nv_bfloat16>) {
    for (std::size_t i = 0; i < n; ++i) bits(out)[i] = float_to_bf16(master[i]);
  } else {
    for (std::size_t i = 0; i < n; ++i) bits(out)[i] = float_to_fp16(master[i]);
  }
}

std::size_t largest_piece(const std::vector<OwnedPiece>& pieces) {
  std::size_t largest = 0;
  for (const auto& piece : pieces) largest = std::max(largest, piece.count);
  return largest;
}

}  // namespace

std::vector<OwnedPiece> owned_pieces(const std::vector<model::Range>& owned, std::size_t block) {
  constexpr std::size_t kPiece = HostAdamW<float>::kPiece;
  std::vector<OwnedPiece> pieces;
  std::size_t state = 0;
  for (std::size_t u = 0; u < owned.size(); ++u) {
    for (std::size_t done = 0; done < owned[u].size;) {
      const std::size_t to_block = block - state % block;  // a piece ends at a block's end
      const std::size_t count = std::min({kPiece, owned[u].size - done, to_block});
      pieces.push_back({static_cast<int>(u), owned[u].offset + done, count, state});
      state += count;
      done += count;
    }
  }
  return pieces;
}

template <typename F>
HostAdamW<F>::HostAdamW(std::vector<OwnedPiece> pieces,
                        std::vector<std::vector<ParamSegment>> segments, float* master, float* m,
                        float* v, OffloadedShard<F>* compute_shard, cudaStream_t stream,
                        NvmeState* file, HostGradients* host_grads)
    : pieces_(std::move(pieces)),
      segments_(std::move(segments)),
      master_(master),
      m_(m),
      v_(v),
      compute_shard_(compute_shard),
      compute_host_(compute_shard ? compute_shard->host_data() : nullptr),
      file_(file),
      host_grads_(host_grads),
      stream_(stream),
      half_(largest_piece(pieces_)),
      grads_(host_grads ? 0 : 2 * half_),
      // Rounded into out_ on the way to the device (F is not float) or to the file.
      out_(compute_host_ == nullptr && (compute_shard_ != nullptr || !kFloat<F>) ? 2 * half_ : 0) {
  for (const auto& piece : pieces_) {
    AT_CHECK(piece.count <= kPiece, "internal: an offload piece of ", piece.count, " elements");
  }
  AT_CHECK(file_ == nullptr || file_->arrays() == 3, "internal: the offload file needs 3 arrays");
}

template <typename F>
void HostAdamW<F>::update(const OwnedPiece& piece, StateAt state, const float* grads, F* out,
                          const Update& step) {
  AdamWStepArgs args = adamw_step_args(*step.settings, step.lr, step.grad_scale, step.step);
  float* master = state.master;
  const std::size_t end = piece.flat + piece.count;
  std::size_t at = piece.flat;  // elements before `at` are done
  for (const ParamSegment& segment : segments_[static_cast<std::size_t>(piece.unit)]) {
    const std::size_t begin = std::max(segment.begin, piece.flat);
    const std::size_t stop = std::min(segment.end, end);
    if (begin >= stop) continue;
    // Padding between tensors has no gradient and stays what the master weights hold.
    if (out != nullptr) cast(master + (at - piece.flat), out + (at - piece.flat), begin - at);
    const std::size_t i = begin - piece.flat, n = stop - begin;
    args.weight_decay = segment.decay ? step.settings->weight_decay : 0.0f;
    if constexpr (kFloat<F>) {
      adamw_update(master + i, grads + i, state.m + i, state.v + i, n, args);
      if (out != nullptr) std::copy_n(master + i, n, out + i);
    } else if constexpr (std::is_same_v<F, __nv_bfloat16>) {
      adamw_update_bf16(master + i, grads + i, state.m + i, state.v + i, bits(out + i), n, args);
    } else {
      adamw_update_fp16(master + i, grads + i, state.m + i, state.v + i, bits(out + i), n, args);
    }
    at = stop;
  }
  if (out != nullptr) cast(master + (at - piece.flat), out + (at - piece.flat), end - at);
}

template <typename F>
void HostAdamW<F>::send(std::size_t i, std::size_t slot, const float* master,
                        const ComputeAt& compute) {
  const OwnedPiece& piece = pieces_[i];
  if (compute_host_ != nullptr) return;  // written in place
  if (compute_shard_ != nullptr) {       // into the file
    compute_shard_->store(piece.state, out_.data() + slot * half_, piece.count);
    return;
  }
  const void* from = kFloat<F> ? static_cast<const void*>(master)
                               : static_cast<const void*>(out_.data() + slot * half_);
  AT_CUDA_CHECK(cudaMemcpyAsync(compute(piece), from, piece.count * sizeof(F),
                                cudaMemcpyHostToDevice, up_.get()));
  out_sent_[slot].record(up_.get());
}

template <typename F>
void HostAdamW<F>::run(std::size_t first, std::size_t last,
                       const std::function<StateAt(const OwnedPiece&)>& at,
                       const ComputeAt& compute, const Update& step) {
  const auto fetch = [&](std::size_t i) {
    const std::size_t part = i % 2;
    AT_CUDA_CHECK(cudaMemcpyAsync(grads_.data() + part * half_, (*step.grads)(pieces_[i]),
                                  pieces_[i].count * sizeof(float), cudaMemcpyDeviceToHost,
                                  down_.get()));
    grads_in_[part].record(down_.get());
  };
  const bool fetching = step.grads != nullptr && host_grads_ == nullptr;
  if (fetching && first < last) fetch(first);
  for (std::size_t i = first; i < last; ++i) {
    const std::size_t slot = i % 2;
    const StateAt state = at(pieces_[i]);
    F* out = nullptr;
    if (compute_host_ != nullptr) {
      out = compute_host_ + pieces_[i].state;
    } else if (out_.size() > 0) {
      out_sent_[slot].synchronize();  // piece i - 2's weights have left this half
      out = out_.data() + slot * half_;
    }
    if (step.grads == nullptr) {
      if (out != nullptr) cast(state.master, out, pieces_[i].count);
    } else {
      const float* grads = nullptr;
      if (fetching) {
        if (i + 1 < last) fetch(i + 1);  // its half was read by update(i - 1)
        grads_in_[slot].synchronize();
        grads = grads_.data() + slot * half_;
      } else {
        grads = host_grads_->wait(pieces_[i].unit) + pieces_[i].state;
      }
      update(pieces_[i], state, grads, out, step);
    }
    send(i, slot, state.master, compute);
  }
}

template <typename F>
void HostAdamW<F>::run_all(const ComputeAt& compute, const Update& step) {
  wait();  // the last step's copies of the master weights
  started_.record(stream_);
  AT_CUDA_CHECK(cudaStreamWaitEvent(down_.get(), started_.get(), 0));
  AT_CUDA_CHECK(cudaStreamWaitEvent(up_.get(), started_.get(), 0));
  if (file_ == nullptr) {
    run(
        0, pieces_.size(),
        [this](const OwnedPiece& piece) {
          return StateAt{master_ + piece.state, m_ + piece.state, v_ + piece.state};
        },
        compute, step);
  } else {
    std::size_t next = 0;
    file_->for_each_block(
        [&](std::size_t begin, std::size_t count, std::span<float* const> data) {
          std::size_t last = next;
          while (last < pieces_.size() && pieces_[last].state < begin + count) ++last;
          run(
              next, last,
              [&](const OwnedPiece& piece) {
                const std::size_t off = piece.state - begin;
                return StateAt{data[0] + off, data[1] + off, data[2] + off};
              },
              compute, step);
          next = last;
          up_.synchronize();  // the copies read the block's buffer, which goes back to the file
        },
        /*write_back=*/step.grads != nullptr);
  }
  done_.record(up_.get());
  AT_CUDA_CHECK(cudaStreamWaitEvent(stream_, done_.get(), 0));
}

template <typename F>
void HostAdamW<F>::step(const GradsAt& grads, const ComputeAt& compute,
                        const OptimizerSettings& settings, float lr, float grad_scale,
                        long long step) {
  run_all(compute, {&grads, &settings, lr, grad_scale, step});
}

template <typename F>
void HostAdamW<F>::upload(const ComputeAt& compute) {
  run_all(compute, {nullptr, nullptr, 0, 0, 0});
}

template <typename F>
void HostAdamW<F>::visit_state(const StateVisitor& visit, bool write_back) {
  wait();
  if (file_ == nullptr) {
    for (const auto& piece : pieces_) {
      visit(piece, {master_ + piece.state, m_ + piece.state, v_ + piece.state});
    }
    return;
  }
  std::size_t next = 0;
  file_->for_each_block(
      [&](std::size_t begin, std::size_t count, std::span<float* const> data) {
        for (; next < pieces_.size() && pieces_[next].state < begin + count; ++next) {
          const std::size_t off = pieces_[next].state - begin;
          visit(pieces_[next], {data[0] + off, data[1] + off, data[2] + off});
        }
      },
      write_back);
}

template <typename F>
void HostAdamW<F>::wait() const {
  done_.synchronize();
}

template <typename F>
std::size_t HostAdamW<F>::pinned_bytes() const {
  return grads_.size() * sizeof(float) + out_.size() * sizeof(F);
}

template class HostAdamW<float>;
template class HostAdamW<__nv_bfloat16>;
template class HostAdamW<__half>;

}  // namespace autotrain::zero::gpu
