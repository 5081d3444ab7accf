// cuDNN's fused attention through the backend API (cudnn_attention.hpp). The graphs are the ones
// cuDNN's fused flash-attention engines recognise (the pattern cudnn-frontend's SDPA nodes lower
// to for cuDNN 9.x before 9.21's unified SDPA operation, which 9.19 offers without masks):
//
// forward:  S = Q·Kᵀ (fp32) · scale [→ cap·tanh(S/cap)] → causal mask [→ window mask]
//           M = max_row S, E = exp(S - M), Σ = sum_row E, stats = M + log Σ, P = E / Σ (F),
//           O = P·V
// backward: D = sum_row dO∘O (softmax_sum, our delta buffer), S as above minus stats, masked,
//           P = exp(S); dV = Pᵀ·dO; dS = (dO·Vᵀ - D)∘P [→ ·(1 - tanh²)] · scale;
//           dK = dSᵀ·Q; dQ = dS·K into an fp32 accumulator, then to F.
// With GQA (NKV < NH) the products read key/value head h / (NH / NKV) by broadcasting the head
// dim, and dK, dV reduce the full-head products over each group.
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/kernels/gpu/cudnn_attention.hpp"
#include "cudnn_graph.cuh"

namespace autotrain::kernels::gpu {

#ifdef AUTOTRAIN_HAVE_CUDNN
namespace {

using cudnn::Graph;
using cudnn::Plan;
using cudnn::Tensor;
using Dims = std::array<std::int64_t, 4>;

// The variant pack's tensors (every other tensor is an intermediate, ids from 1000).
enum Uid : std::int64_t {
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

constexpr std::size_t kAlignment = 256;

std::size_t aligned(std::size_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

cudnnDataType_t io_type(const SdpaShape& s) {
  return s.bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
}

// Scores and probabilities [B, NH, T, T], rows contiguous.
Dims score_dims(const SdpaShape& s) {
  return {s.B, s.NH, s.T, s.T};
}
Dims score_strides(const SdpaShape& s) {
  const std::int64_t T = s.T;
  return {s.NH * T * T, T * T, T, 1};
}
// The same elements read transposed ([B, NH, T2, T]): the reshape before Pᵀ·dO and dSᵀ·Q.
Dims transposed_score_strides(const SdpaShape& s) {
  const std::int64_t T = s.T;
  return {s.NH * T * T, T * T, 1, T};
}
// Per-row values [B, NH, T, 1].
Dims row_dims(const SdpaShape& s) {
  return {s.B, s.NH, s.T, 1};
}
Dims row_strides(const SdpaShape& s) {
  return {static_cast<std::int64_t>(s.NH) * s.T, s.T, 1, 1};
}
// A full-head [B, NH, T, HS] tensor, contiguous (dQ's fp32 accumulator, GQA's dK and dV before
// the group sums).
Dims head_dims(const SdpaShape& s) {
  return {s.B, s.NH, s.T, s.HS};
}
Dims head_strides(const SdpaShape& s) {
  const std::int64_t T = s.T, HS = s.HS;
  return {s.NH * T * HS, T * HS, HS, 1};
}

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

// The scalars' tensors of one graph.
struct Scalars {
  Tensor scale, masked, softcap, window;
};

Scalars make_scalars(Graph& g, const SdpaShape& s) {
  Scalars c;
  c.scale = g.scalar(kScale);
  c.masked = g.scalar(kMasked);
  if (s.softcap > 0) c.softcap = g.scalar(kSoftcap);
  if (s.window > 0) c.window = g.scalar(kWindow);
  return c;
}

// scale · Q·Kᵀ, and with a soft cap cap · tanh(that / cap): [B, NH, T, T] fp32. `before_tanh`
// receives tanh's input (the backward's TANH_BWD takes it).
Tensor scaled_scores(Graph& g, const SdpaShape& s, const Tensor& q, const Tensor& kt,
                     const Scalars& c, Tensor* before_tanh) {
  Tensor scores = g.intermediate(score_dims(s), score_strides(s), CUDNN_DATA_FLOAT);
  g.matmul(q, kt, scores);
  Tensor x = g.binary(CUDNN_POINTWISE_MUL, scores, c.scale);
  if (s.softcap <= 0) return x;
  Tensor u = g.binary(CUDNN_POINTWISE_DIV, x, c.softcap);
  if (before_tanh != nullptr) *before_tanh = u;
  return g.binary(CUDNN_POINTWISE_MUL, g.unary(CUDNN_POINTWISE_TANH_FWD, u), c.softcap);
}

// Row t's and column t2's indices of `x`'s elements (int32).
Tensor index(Graph& g, const Tensor& x, std::int64_t axis) {
  Tensor i = g.intermediate_like(x, CUDNN_DATA_INT32);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, x, nullptr, nullptr, i, CUDNN_DATA_FLOAT, axis);
  return i;
}

// `x` where `keep`, the masked value elsewhere.
Tensor select(Graph& g, const Tensor& x, const Tensor& keep, const Scalars& c) {
  Tensor y = g.intermediate_like(x, CUDNN_DATA_FLOAT);
  g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, x, &c.masked, &keep, y);
  return y;
}

// `x` where position t sees t2 (t2 <= t, and t - window < t2 with a window), masked elsewhere.
Tensor masked(Graph& g, const SdpaShape& s, const Tensor& x, const Scalars& c) {
  Tensor keep = g.intermediate_like(x, CUDNN_DATA_BOOLEAN);
  Tensor row = index(g, x, 2), column = index(g, x, 3);
  g.pointwise(CUDNN_POINTWISE_CMP_GE, row, &column, nullptr, keep, CUDNN_DATA_BOOLEAN);
  Tensor y = select(g, x, keep, c);
  if (s.window <= 0) return y;
  Tensor row2 = index(g, y, 2), column2 = index(g, y, 3);
  Tensor shifted = g.intermediate_like(y, CUDNN_DATA_FLOAT);  // t2 + window
  g.pointwise(CUDNN_POINTWISE_ADD, column2, &c.window, nullptr, shifted);
  Tensor inside = g.intermediate_like(y, CUDNN_DATA_BOOLEAN);
  g.pointwise(CUDNN_POINTWISE_CMP_GT, shifted, &row2, nullptr, inside, CUDNN_DATA_BOOLEAN);
  return select(g, y, inside, c);
}

Plan build_forward(cudnnHandle_t handle, const SdpaShape& s,
                   const cudnn::Descriptor* device = nullptr) {
  Graph g(handle, device);
  const cudnnDataType_t io = io_type(s);
  const Tensor q = g.tensor(kQ, sdpa_q_layout(s), io);
  const Tensor kt = g.tensor(kK, sdpa_transposed(sdpa_k_layout(s)), io);
  const Tensor v = g.tensor(kV, sdpa_v_layout(s), io);
  const Tensor o = g.tensor(kO, sdpa_o_layout(s), io);
  const Tensor stats = g.tensor(kStats, sdpa_stats_layout(s), CUDNN_DATA_FLOAT);
  const Scalars c = make_scalars(g, s);

  const Tensor scores = masked(g, s, scaled_scores(g, s, q, kt, c, nullptr), c);
  const Tensor max = g.intermediate(row_dims(s), row_strides(s), CUDNN_DATA_FLOAT);
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, scores, max);
  const Tensor exps = g.unary(CUDNN_POINTWISE_EXP, g.binary(CUDNN_POINTWISE_SUB, scores, max));
  const Tensor sum = g.intermediate(row_dims(s), row_strides(s), CUDNN_DATA_FLOAT);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, exps, sum);
  const Tensor log_sum = g.unary(CUDNN_POINTWISE_LOG, sum);
  g.pointwise(CUDNN_POINTWISE_ADD, max, &log_sum, nullptr, stats);
  const Tensor probabilities = g.intermediate_like(exps, io);  // P·V's A operand in F
  g.pointwise(CUDNN_POINTWISE_DIV, exps, &sum, nullptr, probabilities);
  g.matmul(probabilities, v, o);
  return g.build("forward");
}

// c = a·b, and with GQA (out's heads fewer than a's) the sum of each group's full-head products.
void product_into_heads(Graph& g, const SdpaShape& s, const Tensor& a, const Tensor& b,
                        const Tensor& out) {
  if (s.NKV == s.NH) {
    g.matmul(a, b, out);
    return;
  }
  const Tensor full = g.intermediate(head_dims(s), head_strides(s), io_type(s));
  g.matmul(a, b, full);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, full, out);
}

// The [B, NH, T2, T] transpose of a [B, NH, T, T2] intermediate, in F (a product's operand).
Tensor transposed_scores(Graph& g, const SdpaShape& s, const Tensor& x) {
  const Tensor y = g.intermediate(score_dims(s), transposed_score_strides(s), io_type(s));
  g.reshape(x, y);
  return y;
}

Plan build_backward(cudnnHandle_t handle, const SdpaShape& s,
                    const cudnn::Descriptor* device = nullptr) {
  Graph g(handle, device);
  const cudnnDataType_t io = io_type(s);
  const Tensor q = g.tensor(kQ, sdpa_q_layout(s), io);
  const Tensor kt = g.tensor(kK, sdpa_transposed(sdpa_k_layout(s)), io);
  const Tensor vt = g.tensor(kV, sdpa_transposed(sdpa_v_layout(s)), io);
  const Tensor o = g.tensor(kO, sdpa_o_layout(s), io);
  const Tensor dout = g.tensor(kDO, sdpa_o_layout(s), io);
  const Tensor stats = g.tensor(kStats, sdpa_stats_layout(s), CUDNN_DATA_FLOAT);
  const Tensor dq = g.tensor(kDQ, sdpa_q_layout(s), io);
  const Tensor dk = g.tensor(kDK, sdpa_k_layout(s), io);
  const Tensor dv = g.tensor(kDV, sdpa_v_layout(s), io);
  const Tensor softmax_sum = g.tensor(kSoftmaxSum, sdpa_stats_layout(s), CUDNN_DATA_FLOAT);
  const Scalars c = make_scalars(g, s);
  const Tensor one = g.scalar(kOne);

  // D = Σ_i dO∘O per row (the frontend's odd strides for this fused intermediate, kept).
  const std::int64_t T = s.T, HS = s.HS, NH = s.NH;
  const Tensor product =
      g.intermediate(head_dims(s), {NH * T * HS, T * HS, NH * HS, 1}, CUDNN_DATA_FLOAT);
  g.pointwise(CUDNN_POINTWISE_MUL, dout, &o, nullptr, product);
  const Tensor row_sum = g.intermediate(row_dims(s), row_strides(s), CUDNN_DATA_FLOAT);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, product, row_sum);
  g.pointwise(CUDNN_POINTWISE_MUL, row_sum, &one, nullptr, softmax_sum);

  // P = exp(scores - stats), recomputed.
  Tensor before_tanh;
  const Tensor scores = scaled_scores(g, s, q, kt, c, &before_tanh);
  const Tensor probabilities =
      g.unary(CUDNN_POINTWISE_EXP, masked(g, s, g.binary(CUDNN_POINTWISE_SUB, scores, stats), c));
  product_into_heads(g, s, transposed_scores(g, s, probabilities), dout, dv);

  // dS = (dO·Vᵀ - D)∘P, through the soft cap's tanh, times the scale.
  const Tensor dp = g.intermediate(score_dims(s), score_strides(s), CUDNN_DATA_FLOAT);
  g.matmul(dout, vt, dp);
  Tensor ds =
      g.binary(CUDNN_POINTWISE_MUL, g.binary(CUDNN_POINTWISE_SUB, dp, softmax_sum), probabilities);
  if (s.softcap > 0) {
    const Tensor dy = g.binary(CUDNN_POINTWISE_MUL, ds, c.softcap);
    const Tensor dx = g.intermediate_like(ds, CUDNN_DATA_FLOAT);
    g.activation_backward(CUDNN_POINTWISE_TANH_BWD, dy, before_tanh, dx);
    ds = g.binary(CUDNN_POINTWISE_DIV, dx, c.softcap);
  }
  ds = g.binary(CUDNN_POINTWISE_MUL, ds, c.scale);
  product_into_heads(g, s, transposed_scores(g, s, ds), q, dk);

  // dQ = dS·K, K read back through Kᵀ's memory: deterministic, straight into dQ (the engine
  // keeps dP in its workspace); else accumulated by atomics in fp32, then rounded to F.
  const SdpaLayout k_layout = sdpa_k_layout(s);
  const Tensor k = g.intermediate(k_layout.dims, k_layout.strides, io);
  g.reshape(kt, k);
  if (s.deterministic) {
    g.matmul(ds, k, dq);
  } else {
    SdpaLayout accumulator;
    accumulator.dims = head_dims(s);
    accumulator.strides = head_strides(s);
    const Tensor dq_accumulator = g.tensor(kDQAccum, accumulator, CUDNN_DATA_FLOAT);
    g.matmul(ds, k, dq_accumulator);
    g.pointwise(CUDNN_POINTWISE_IDENTITY, dq_accumulator, nullptr, nullptr, dq);
  }
  return g.build("backward");
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
        built.forward = std::make_unique<Plan>(build_forward(handle_, s));
        built.backward = std::make_unique<Plan>(build_backward(handle_, s));
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
    check.forward = check_build([&] { return build_forward(nullptr, shape, &device); });
    check.backward = check_build([&] { return build_backward(nullptr, shape, &device); });
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
