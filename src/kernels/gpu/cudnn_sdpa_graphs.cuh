#pragma once
// The forward and backward operation graphs of cuDNN's fused attention for one SdpaShape
// (cudnn_sdpa_graphs.cu says which ops and why), as plans, and the ids of the tensors a plan's
// variant pack binds. Host code; compiled only with cuDNN (AUTOTRAIN_HAVE_CUDNN).
#ifdef AUTOTRAIN_HAVE_CUDNN
#include <cstdint>
#include <limits>

#include "autotrain/kernels/attention_choice.hpp"
#include "cudnn_graph.cuh"

namespace autotrain::kernels::gpu::cudnn {

// The variant pack's tensors (every other tensor is an intermediate, ids from 1000).
enum SdpaUid : std::int64_t {
  kQ = 1,
  kK,
  kV,
  kO,
  kStats,
  kDO,
  kDQ,
  kDK,
  kDV,
  kScale,
  kMasked,  // the value of masked scores: -inf
  kOne,
  kSoftcap,
  kWindow,
  kSoftmaxSum,
  kDQAccum,
};

// The host values of the scalars a graph takes by value; alive while a plan executes.
struct HostScalars {
  float scale, masked, one = 1.0f, softcap, window;
  explicit HostScalars(const SdpaShape& s)
      : scale(s.scale),
        // cuDNN before 9.1 wants the lowest float for masked scores, later versions -inf.
        masked(cudnnGetVersion() < 91000 ? std::numeric_limits<float>::lowest()
                                         : -std::numeric_limits<float>::infinity()),
        softcap(s.softcap),
        window(static_cast<float>(s.window)) {}
};

// The plans of `s` for the GPU of `handle`, or (handle null) for the GPU `device` describes
// (cuDNN's deviceless compilation). Error where no engine takes the graph.
Plan build_sdpa_forward(cudnnHandle_t handle, const SdpaShape& s,
                        const Descriptor* device = nullptr);
Plan build_sdpa_backward(cudnnHandle_t handle, const SdpaShape& s,
                         const Descriptor* device = nullptr);

}  // namespace autotrain::kernels::gpu::cudnn
#endif  // AUTOTRAIN_HAVE_CUDNN
