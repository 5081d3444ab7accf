// The operation graphs of cuDNN's fused attention (cudnn_sdpa_graphs.cuh). They are the ones
// cuDNN's fused flash-attention engines recognise (the pattern cudnn-frontend's SDPA nodes lower
// to for cuDNN 9.x before 9.21's unified SDPA operation, which 9.19 offers without masks):
//
// forward:  S = Q·Kᵀ (fp32) · scale [→ cap·tanh(S/cap)] → causal mask [→ window mask]
//           M = max_row S, E = exp(S - M), Σ = sum_row E, stats = M + log Σ, P = E / Σ (F),
//           O = P·V
// backward: D = sum_row dO∘O (softmax_sum, our delta buffer), S as above minus stats, masked,
//           P = exp(S); dV = Pᵀ·dO; dS = (dO·Vᵀ - D)∘P [→ ·(1 - tanh²)] · scale;
//           dK = dSᵀ·Q; dQ = dS·K (deterministic: the engine keeps dP in its workspace; else
//           accumulated by atomics in fp32, then rounded to F).
// With GQA (NKV < NH) the products read key/value head h / (NH / NKV) by broadcasting the head
// dim, and dK, dV reduce the full-head products over each group.
#include <array>
#include <utility>

#include "cudnn_sdpa_graphs.cuh"

#ifdef AUTOTRAIN_HAVE_CUDNN
namespace autotrain::kernels::gpu::cudnn {
namespace {

using Dims = std::array<std::int64_t, 4>;

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

}  // namespace

Plan build_sdpa_forward(cudnnHandle_t handle, const SdpaShape& s, const Descriptor* device) {
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

Plan build_sdpa_backward(cudnnHandle_t handle, const SdpaShape& s, const Descriptor* device) {
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

}  // namespace autotrain::kernels::gpu::cudnn
#endif  // AUTOTRAIN_HAVE_CUDNN
