// One decoding step's kernels that read the position from device memory (decode.hpp).
// decode_attention: block (c, h, i) of kDecodeThreads threads owns keys [c·S, c·S + S) ∩ the keys
// row t + i sees; its warps score one key at a time (lanes split the head, then a warp sum), warp 0
// turns the chunk's scores into exp(score - chunk max) and their sum, and the threads split the
// head to sum p·v over the chunk in key order. The partial [HS] output, the chunk's max and its
// Σ exp go to scratch [NH, chunks, HS + 2]; a chunk with no visible key stores Σ exp = 0. The
// merge kernel (one block per head) rescales each chunk to the head's max and sums them in chunk
// order. Scratch [rows, NH, chunks, HS + 2]. Shapes and the qkv layout as attention.cuh's
// Geometry.
#include "attention.cuh"
#include "autotrain/kernels/gpu/decode.hpp"

namespace autotrain::kernels::gpu {
namespace {

constexpr int kDecodeThreads = 128;
constexpr int kDecodeWarps = kDecodeThreads / kWarp;

// Grid (x, rows): blockIdx.y is the row.
template <typename F>
__global__ void decode_embed_kernel(F* out, const std::int32_t* tokens,
                                    const std::int32_t* position, const F* wte, const F* wpe, int C,
                                    float scale) {
  const auto t = static_cast<std::size_t>(*position) + blockIdx.y;
  const auto token = static_cast<std::size_t>(tokens[t]);
  F* row = out + std::size_t{blockIdx.y} * C;
  for (int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); c < C;
       c += static_cast<int>(gridDim.x * blockDim.x)) {
    const float a = to_float(wte[token * C + c]);
    const float b = wpe == nullptr ? 0.0f : to_float(wpe[t * C + c]);
    row[c] = from_float<F>((a + b) * scale);
  }
}

// `count` = rows · n values, contiguous on both sides.
template <typename F>
__global__ void decode_store_rows_kernel(F* cache, const F* new_rows, std::size_t count,
                                         std::size_t n, const std::int32_t* position) {
  F* to = cache + static_cast<std::size_t>(*position) * n;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    to[i] = new_rows[i];
  }
}

__host__ __device__ std::size_t partial_floats(int HS) {
  return static_cast<std::size_t>(HS) + 2;
}

// Grid (chunks, NH, rows). Static shared memory: the scaled query and the chunk's scores.
template <typename F>
__global__ void decode_attention_chunk_kernel(float* scratch, const F* rows,
                                              const std::int32_t* position, Geometry g) {
  __shared__ float q[kMaxAttentionHeadSize];
  __shared__ float p[kDecodeChunk];
  const int t = *position + static_cast<int>(blockIdx.z);
  const int h = static_cast<int>(blockIdx.y);
  const int chunk_begin = static_cast<int>(blockIdx.x) * kDecodeChunk;
  const int begin = chunk_begin > g.first_visible(t) ? chunk_begin : g.first_visible(t);
  const int end = chunk_begin + kDecodeChunk < t + 1 ? chunk_begin + kDecodeChunk : t + 1;
  const std::size_t head = std::size_t{blockIdx.z} * gridDim.y + static_cast<std::size_t>(h);
  float* partial = scratch + (head * gridDim.x + blockIdx.x) * partial_floats(g.HS);
  if (begin >= end) {
    if (threadIdx.x == 0) partial[g.HS + 1] = 0.0f;  // no key: the merge skips this chunk
    return;
  }
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const std::size_t stride = g.row();
  const F* query = rows + static_cast<std::size_t>(t) * stride + g.query(h);
  for (int i = static_cast<int>(threadIdx.x); i < g.HS; i += kDecodeThreads) {
    q[i] = to_float(query[i]) * g.scale;
  }
  __syncthreads();
  const std::size_t key = g.key(h / g.group);
  for (int k = begin + warp; k < end; k += kDecodeWarps) {
    const F* key_row = rows + static_cast<std::size_t>(k) * stride + key;
    float dot = 0.0f;
    for (int i = lane; i < g.HS; i += kWarp) dot += q[i] * to_float(key_row[i]);
    dot = warp_sum(dot);
    if (lane == 0) p[k - begin] = g.capped(dot);
  }
  __syncthreads();
  const int n = end - begin;
  if (warp == 0) {
    float chunk_max = -INFINITY;
    for (int j = lane; j < n; j += kWarp) chunk_max = fmaxf(chunk_max, p[j]);
    chunk_max = warp_max(chunk_max);
    float sum = 0.0f;
    for (int j = lane; j < n; j += kWarp) {
      p[j] = expf(p[j] - chunk_max);
      sum += p[j];
    }
    sum = warp_sum(sum);
    if (lane == 0) {
      partial[g.HS] = chunk_max;
      partial[g.HS + 1] = sum;
    }
  }
  __syncthreads();
  const std::size_t value = g.value(h / g.group);
  for (int i = static_cast<int>(threadIdx.x); i < g.HS; i += kDecodeThreads) {
    float sum = 0.0f;
    for (int j = 0; j < n; ++j) {
      sum += p[j] * to_float(rows[static_cast<std::size_t>(begin + j) * stride + value + i]);
    }
    partial[i] = sum;
  }
}

// Grid (NH, rows): head h of row i, its chunks merged in order into out[i, h·HS, (h + 1)·HS).
template <typename F>
__global__ void decode_attention_merge_kernel(F* out, const float* scratch, int chunks, int HS) {
  const std::size_t h = std::size_t{blockIdx.y} * gridDim.x + blockIdx.x;  // (row, head)
  const float* first = scratch + h * chunks * partial_floats(HS);
  float head_max = -INFINITY;
  for (int c = 0; c < chunks; ++c) {
    const float* partial = first + static_cast<std::size_t>(c) * partial_floats(HS);
    if (partial[HS + 1] > 0.0f) head_max = fmaxf(head_max, partial[HS]);
  }
  float total = 0.0f;
  for (int c = 0; c < chunks; ++c) {
    const float* partial = first + static_cast<std::size_t>(c) * partial_floats(HS);
    if (partial[HS + 1] > 0.0f) total += partial[HS + 1] * expf(partial[HS] - head_max);
  }
  for (int i = static_cast<int>(threadIdx.x); i < HS; i += static_cast<int>(blockDim.x)) {
    float sum = 0.0f;
    for (int c = 0; c < chunks; ++c) {
      const float* partial = first + static_cast<std::size_t>(c) * partial_floats(HS);
      if (partial[HS + 1] > 0.0f) sum += partial[i] * expf(partial[HS] - head_max);
    }
    out[h * HS + i] = from_float<F>(sum / total);
  }
}

int chunks_for(int capacity) {
  return static_cast<int>(ceil_div(static_cast<std::size_t>(capacity), kDecodeChunk));
}

void check_rows(int rows) {
  AT_CHECK(rows >= 1 && rows <= kMaxDecodeRows, "decode: ", rows, " rows in one step; expected 1..",
           kMaxDecodeRows);
}

}  // namespace

template <typename F>
void decode_embed(F* out, const std::int32_t* tokens, const std::int32_t* position, int rows,
                  const F* wte, const F* wpe, int C, float scale, cudaStream_t stream) {
  AT_CHECK(C >= 1, "decode: C = ", C, " must be positive");
  check_rows(rows);
  const dim3 grid(grid_for(static_cast<std::size_t>(C)), static_cast<unsigned>(rows));
  decode_embed_kernel<<<grid, kBlockThreads, 0, stream>>>(out, tokens, position, wte, wpe, C,
                                                          scale);
  AT_CUDA_CHECK_LAUNCH();
}

template <typename F>
void decode_store_rows(F* cache, const F* new_rows, int rows, std::size_t n,
                       const std::int32_t* position, cudaStream_t stream) {
  check_rows(rows);
  const std::size_t count = static_cast<std::size_t>(rows) * n;
  if (count == 0) return;
  decode_store_rows_kernel<<<grid_for(count), kBlockThreads, 0, stream>>>(cache, new_rows, count, n,
                                                                          position);
  AT_CUDA_CHECK_LAUNCH();
}

std::size_t decode_attention_scratch_floats(int capacity, int rows, int NH, int HS) {
  return static_cast<std::size_t>(rows) * NH * chunks_for(capacity) * partial_floats(HS);
}

template <typename F>
void decode_attention(F* out, float* scratch, const F* cache, const std::int32_t* position,
                      int rows, int capacity, int NH, int NKV, int HS,
                      const AttentionOptions& options, cudaStream_t stream) {
  check_rows(rows);
  Geometry g = checked_geometry(1, capacity, NH, NKV, HS);
  g.scale = static_cast<float>(options.scale_for(HS));
  g.cap = static_cast<float>(options.softcap);
  g.window = options.window;
  const int chunks = chunks_for(capacity);
  const auto heads = static_cast<unsigned>(NH);
  const auto queries = static_cast<unsigned>(rows);
  decode_attention_chunk_kernel<<<dim3(static_cast<unsigned>(chunks), heads, queries),
                                  kDecodeThreads, 0, stream>>>(scratch, cache, position, g);
  AT_CUDA_CHECK_LAUNCH();
  decode_attention_merge_kernel<<<dim3(heads, queries), kDecodeThreads, 0, stream>>>(out, scratch,
                                                                                     chunks, HS);
  AT_CUDA_CHECK_LAUNCH();
}

#define AT_DECODE_INSTANTIATE(F)                                                                   \
  template void decode_embed<F>(F*, const std::int32_t*, const std::int32_t*, int, const F*,       \
                                const F*, int, float, cudaStream_t);                               \
  template void decode_store_rows<F>(F*, const F*, int, std::size_t, const std::int32_t*,          \
                                     cudaStream_t);                                                \
  template void decode_attention<F>(F*, float*, const F*, const std::int32_t*, int, int, int, int, \
                                    int, const AttentionOptions&, cudaStream_t);
AT_GPU_INSTANTIATE(AT_DECODE_INSTANTIATE)

}  // namespace autotrain::kernels::gpu
