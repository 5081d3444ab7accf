// cuDNN's fused attention (cudnn_attention.hpp): the plans of each shape, built once per
// (thread, device) and cached with one workspace, and the calls that run them on our buffers.
// The graphs are in cudnn_sdpa_graphs.cu, the descriptors' owner in cudnn_graph.cu.
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/kernels/gpu/cudnn_attention.hpp"
#include "cudnn_graph.cuh"
#include "cudnn_sdpa_graphs.cuh"

namespace autotrain::kernels::gpu {

#ifdef AUTOTRAIN_HAVE_CUDNN
namespace {

using namespace cudnn;  // Plan, the variant pack's ids, HostScalars, the graphs

constexpr std::size_t kAlignment = 256;

std::size_t aligned(std::size_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

// One shape's plans, or why they did not build.
struct ShapePlans {
  std::string refusal;
  std::unique_ptr<Plan> forward, backward;
  // Device bytes the backward needs: its plan's workspace, then (not deterministic) dQ's fp32
  // accumulator.
  std::size_t backward_plan_bytes() const { return aligned(backward->workspace_bytes()); }
  std::size_t backward_bytes(const SdpaShape& s) const {
    const std::size_t accumulator =
        s.deterministic ? 0 : sizeof(float) * static_cast<std::size_t>(s.B) * s.NH * s.T * s.HS;
    return backward_plan_bytes() + accumulator;
  }
};

// The cuDNN handle of one (thread, device), its plans by shape and one workspace for them all,
// grown when a plan is built (so the training steps after the first prepare allocate nothing).
class CudnnState {
 public:
  CudnnState() { cudnn::check(cudnnCreate(&handle_), "cudnnCreate"); }
  ~CudnnState() { cudnnDestroy(handle_); }
  CudnnState(const CudnnState&) = delete;
  CudnnState& operator=(const CudnnState&) = delete;

  // The handle, queueing on `stream`.
  cudnnHandle_t on(cudaStream_t stream) {
    if (!stream_set_ || stream != stream_) {
      cudnn::check(cudnnSetStream(handle_, stream), "cudnnSetStream");
      stream_ = stream;
      stream_set_ = true;
    }
    return handle_;
  }

  // The plans of `s`, built on its first call (a failure is kept as the refusal).
  const ShapePlans& plans(const SdpaShape& s) {
    auto found = plans_.find(s);
    if (found != plans_.end()) return found->second;
    ShapePlans built;
    built.refusal = sdpa_shape_refusal(s);
    if (built.refusal.empty()) {
      try {
        built.forward = std::make_unique<Plan>(build_sdpa_forward(handle_, s));
        built.backward = std::make_unique<Plan>(build_sdpa_backward(handle_, s));
        workspace(aligned(built.forward->workspace_bytes()));
        workspace(built.backward_bytes(s));
      } catch (const Error& e) {
        built.refusal = e.what();
        built.forward.reset();
        built.backward.reset();
      }
    }
    return plans_.emplace(s, std::move(built)).first->second;
  }

  // At least `bytes` of device memory, grown (allocating) where smaller.
  char* workspace(std::size_t bytes) {
    if (bytes > workspace_.bytes()) workspace_ = autotrain::gpu::DeviceBuffer(bytes);
    return workspace_.as<char>();
  }

 private:
  cudnnHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
  bool stream_set_ = false;
  std::map<SdpaShape, ShapePlans> plans_;
  autotrain::gpu::DeviceBuffer workspace_;
};

// One state per (thread, device): a cuDNN handle must not be used by two threads at once and
// belongs to the device current at its creation.
CudnnState& state() {
  thread_local std::map<int, std::unique_ptr<CudnnState>> by_device;
  int device = 0;
  AT_CUDA_CHECK(cudaGetDevice(&device));
  std::unique_ptr<CudnnState>& slot = by_device[device];
  if (!slot) slot = std::make_unique<CudnnState>();
  return *slot;
}

const ShapePlans& ready_plans(const SdpaShape& s) {
  const ShapePlans& p = state().plans(s);
  AT_CHECK(p.refusal.empty(), "cuDNN attention for ", s.describe(), ": ", p.refusal);
  return p;
}

// AUTOTRAIN_CUDNN_DETERMINISTIC, read once per process.
bool deterministic_backward() {
  static const bool deterministic =
      parse_cudnn_deterministic(std::getenv("AUTOTRAIN_CUDNN_DETERMINISTIC"));
  return deterministic;
}

// `shape` with the process's choice of backward: the key its plans are cached under.
SdpaShape keyed(SdpaShape shape) {
  shape.deterministic = deterministic_backward();
  return shape;
}

template <typename F>
SdpaShape shape_of(int B, int T, int NH, int NKV, int HS, const AttentionOptions& options) {
  static_assert(std::is_same_v<F, __nv_bfloat16> || std::is_same_v<F, __half>,
                "cuDNN's fused attention takes bf16 or fp16");
  return keyed(sdpa_shape(std::is_same_v<F, __nv_bfloat16>, B, T, NH, NKV, HS, options));
}

// The scalars' ids and host addresses for a graph of shape `s` (the soft cap and the window
// only where the graph has them).
void add_scalars(const SdpaShape& s, HostScalars& h, std::vector<std::int64_t>& uids,
                 std::vector<void*>& pointers) {
  uids.insert(uids.end(), {kScale, kMasked});
  pointers.insert(pointers.end(), {&h.scale, &h.masked});
  if (s.softcap > 0) {
    uids.push_back(kSoftcap);
    pointers.push_back(&h.softcap);
  }
  if (s.window > 0) {
    uids.push_back(kWindow);
    pointers.push_back(&h.window);
  }
}

}  // namespace

bool cudnn_attention_built() {
  return true;
}

std::string cudnn_attention_version() {
  const std::size_t v = cudnnGetVersion();
  return cat("cuDNN ", v / 10000, ".", v / 100 % 100, ".", v % 100, " (built with ", CUDNN_MAJOR,
             ".", CUDNN_MINOR, ".", CUDNN_PATCHLEVEL, ")");
}

std::string cudnn_attention_prepare(const SdpaShape& shape, cudaStream_t stream) {
  try {
    CudnnState& st = state();
    st.on(stream);
    return st.plans(keyed(shape)).refusal;
  } catch (const Error& e) {  // no handle: no GPU, a driver too old, a sublibrary missing
    return e.what();
  }
}

namespace {

// One graph's deviceless build: the engine that built or compiled it, or why not.
CudnnPlanCheck::Result check_build(const std::function<Plan()>& build) {
  try {
    return {true, build().engine()};
  } catch (const cudnn::CompiledWithoutDriver& e) {
    return {true, e.what()};
  } catch (const Error& e) {
    return {false, e.what()};
  }
}

}  // namespace

CudnnPlanCheck cudnn_attention_plan_check(const SdpaShape& shape, const std::string& device_json) {
  CudnnPlanCheck check;
  const std::string refusal = sdpa_shape_refusal(shape);
  if (!refusal.empty()) {
    check.forward = check.backward = {false, refusal};
    return check;
  }
  try {
    const cudnn::Descriptor device = cudnn::device_properties(device_json);
    check.forward = check_build([&] { return cudnn::build_sdpa_forward(nullptr, shape, &device); });
    check.backward =
        check_build([&] { return cudnn::build_sdpa_backward(nullptr, shape, &device); });
  } catch (const Error& e) {  // the device description itself
    check.forward = check.backward = {false, e.what()};
  }
  return check;
}

std::string cudnn_attention_engines(const SdpaShape& shape) {
  const SdpaShape s = keyed(shape);
  const ShapePlans& p = ready_plans(s);
  return cat("forward ", p.forward->engine(), ", backward ", p.backward->engine(),
             s.deterministic ? " (deterministic)" : " (atomic dQ)");
}

template <typename F>
void cudnn_attention_forward(F* out, float* lse, const F* qkv, int B, int T, int NH, int NKV,
                             int HS, cudaStream_t stream, const AttentionOptions& options) {
  const SdpaShape s = shape_of<F>(B, T, NH, NKV, HS, options);
  const ShapePlans& p = ready_plans(s);
  CudnnState& st = state();
  HostScalars h(s);
  F* base = const_cast<F*>(qkv);  // read only: the variant pack takes void*
  std::vector<std::int64_t> uids{kQ, kK, kV, kO, kStats};
  std::vector<void*> pointers{base + sdpa_q_layout(s).offset, base + sdpa_k_layout(s).offset,
                              base + sdpa_v_layout(s).offset, out, lse};
  add_scalars(s, h, uids, pointers);
  p.forward->execute(st.on(stream), uids, pointers,
                     st.workspace(aligned(p.forward->workspace_bytes())));
}

template <typename F>
void cudnn_attention_backward(F* dqkv, float* delta, const F* dout, const F* qkv, const F* out,
                              const float* lse, int B, int T, int NH, int NKV, int HS,
                              cudaStream_t stream, const AttentionOptions& options) {
  const SdpaShape s = shape_of<F>(B, T, NH, NKV, HS, options);
  const ShapePlans& p = ready_plans(s);
  CudnnState& st = state();
  HostScalars h(s);
  char* workspace = st.workspace(p.backward_bytes(s));
  void* accumulator = workspace + p.backward_plan_bytes();
  const std::size_t accumulator_bytes = p.backward_bytes(s) - p.backward_plan_bytes();
  // cuDNN from 9.6 initialises dQ's accumulator itself; before, its caller zeroes it.
  if (!s.deterministic && cudnnGetVersion() < 90600) {
    AT_CUDA_CHECK(cudaMemsetAsync(accumulator, 0, accumulator_bytes, stream));
  }
  F* base = const_cast<F*>(qkv);  // read only: the variant pack takes void*
  std::vector<std::int64_t> uids{kQ, kK, kV, kO, kDO, kStats, kDQ, kDK, kDV, kOne, kSoftmaxSum};
  std::vector<void*> pointers{base + sdpa_q_layout(s).offset,
                              base + sdpa_k_layout(s).offset,
                              base + sdpa_v_layout(s).offset,
                              const_cast<F*>(out),
                              const_cast<F*>(dout),
                              const_cast<float*>(lse),
                              dqkv + sdpa_q_layout(s).offset,
                              dqkv + sdpa_k_layout(s).offset,
                              dqkv + sdpa_v_layout(s).offset,
                              &h.one,
                              delta};
  if (!s.deterministic) {
    uids.push_back(kDQAccum);
    pointers.push_back(accumulator);
  }
  add_scalars(s, h, uids, pointers);
  p.backward->execute(st.on(stream), uids, pointers, workspace);
}

#else  // no cuDNN: the emulated build, or a CUDA build that did not find it

bool cudnn_attention_built() {
  return false;
}

std::string cudnn_attention_version() {
#ifdef AUTOTRAIN_CUDA_EMULATED
  return "not built in (the CUDA emulator cannot run cuDNN)";
#else
  return "not built in (CMake did not find cuDNN: set CUDNN_ROOT)";
#endif
}

std::string cudnn_attention_prepare(const SdpaShape&, cudaStream_t) {
  return "this build has no cuDNN: " + cudnn_attention_version();
}

std::string cudnn_attention_engines(const SdpaShape&) {
  throw Error("cuDNN attention: " + cudnn_attention_version());
}

CudnnPlanCheck cudnn_attention_plan_check(const SdpaShape&, const std::string&) {
  const std::string why = "this build has no cuDNN: " + cudnn_attention_version();
  return {{false, why}, {false, why}};
}

template <typename F>
void cudnn_attention_forward(F*, float*, const F*, int, int, int, int, int, cudaStream_t,
                             const AttentionOptions&) {
  throw Error("cuDNN attention: " + cudnn_attention_version());
}

template <typename F>
void cudnn_attention_backward(F*, float*, const F*, const F*, const F*, const float*, int, int, int,
                              int, int, cudaStream_t, const AttentionOptions&) {
  throw Error("cuDNN attention: " + cudnn_attention_version());
}

#endif  // AUTOTRAIN_HAVE_CUDNN

template void cudnn_attention_forward<__nv_bfloat16>(__nv_bfloat16*, float*, const __nv_bfloat16*,
                                                     int, int, int, int, int, cudaStream_t,
                                                     const AttentionOptions&);
template void cudnn_attention_forward<__half>(__half*, float*, const __half*, int, int, int, int,
                                              int, cudaStream_t, const AttentionOptions&);
template void cudnn_attention_backward<__nv_bfloat16>(__nv_bfloat16*, float*, const __nv_bfloat16*,
                                                      const __nv_bfloat16*, const __nv_bfloat16*,
                                                      const float*, int, int, int, int, int,
                                                      cudaStream_t, const AttentionOptions&);
template void cudnn_attention_backward<__half>(__half*, float*, const __half*, const __half*,
                                               const __half*, const float*, int, int, int, int, int,
                                               cudaStream_t, const AttentionOptions&);

}  // namespace autotrain::kernels::gpu
