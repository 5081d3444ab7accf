// gemm through oneDNN's matmul primitive. oneDNN picks its kernels from the ISA features the CPU
// reports (AVX2, AVX-512, AVX512-BF16, AMX) rather than from a table of CPU models, and packs its
// blocks for the shape it is given. One primitive per shape is created on first use and kept: a
// training step meets the same few shapes every step, so after the first step nothing is created.
#include "onednn_gemm.hpp"

#include <immintrin.h>
#include <omp.h>

#include <bit>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <vector>

#include "autotrain/core/dtype.hpp"
#include "autotrain/core/error.hpp"

namespace autotrain::kernels::onednn {
namespace {

using dnnl::memory;
using Dims = memory::dims;

// Everything a primitive is specialised for. The thread count is part of it: oneDNN splits
// the work for the threads it will run on.
using Key = std::tuple<bool, bool, std::size_t, std::size_t, std::size_t, std::size_t, std::size_t,
                       std::size_t, std::uint32_t, std::uint32_t, bool, int>;

struct Entry {
  dnnl::matmul primitive;
  memory src, weights, dst, scratchpad;
};

// A shape set that keeps changing (generate over prompts of many lengths) must not grow the
// cache without bound: past this many entries it starts afresh.
constexpr std::size_t kMaxEntries = 256;

dnnl::memory::dim dim(std::size_t n) {
  return static_cast<dnnl::memory::dim>(n);
}

// op(x) of `rows` × `cols` stored row-major with leading dimension ld, or transposed.
memory::desc matrix_desc(std::size_t rows, std::size_t cols, std::size_t ld, bool transposed,
                         memory::data_type type) {
  const Dims strides = transposed ? Dims{1, dim(ld)} : Dims{dim(ld), 1};
  return memory::desc({dim(rows), dim(cols)}, type, strides);
}

// The elements a strided row-major matrix spans: (rows - 1) · ld + cols.
std::size_t span(std::size_t rows, std::size_t cols, std::size_t ld) {
  return (rows - 1) * ld + cols;
}

// o[i] = x[i] rounded to bf16 (nearest even, NaN kept quiet): float_to_bf16's result, 32 at a
// time with AVX512-BF16's vcvtne2ps2bf16 (every CPU whose bf16 products oneDNN runs natively
// has it), except that the instruction reads fp32 subnormals (below 2^-126) as zero, as
// PyTorch's conversion on these CPUs does. Memory-bound: about 1.6× the scalar loop's speed,
// which matters for the LM head's [B·T, V] operands.
// `blocks` blocks of 32 elements. Its own function: OpenMP's outlined loop body does not inherit
// a target attribute (clang refuses AVX-512 intrinsics there on a CPU without AVX-512).
__attribute__((target("avx512f,avx512bf16"))) void round_blocks_avx512(const float* x,
                                                                       std::size_t blocks,
                                                                       std::uint16_t* o) {
  for (std::size_t b = 0; b < blocks; ++b) {
    const __m512 low = _mm512_loadu_ps(x + 32 * b);
    const __m512 high = _mm512_loadu_ps(x + 32 * b + 16);
    _mm512_storeu_si512(o + 32 * b, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(high, low)));
  }
}

void round_to_bf16_avx512(const float* x, std::size_t n, std::uint16_t* o) {
  constexpr std::size_t kBlocksPerChunk = 256;  // 8192 elements a thread's turn
  const std::size_t blocks = n / 32;
  const auto chunks = static_cast<std::ptrdiff_t>((blocks + kBlocksPerChunk - 1) / kBlocksPerChunk);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t c = 0; c < chunks; ++c) {
    const std::size_t first = static_cast<std::size_t>(c) * kBlocksPerChunk;
    round_blocks_avx512(x + 32 * first, std::min(kBlocksPerChunk, blocks - first), o + 32 * first);
  }
  for (std::size_t i = 32 * blocks; i < n; ++i) {
    o[i] = float_to_bf16(x[i]);
  }
}

void round_to_bf16(const float* x, std::size_t n, std::vector<std::uint16_t>& out) {
  if (out.size() < n) out.resize(n);
  std::uint16_t* o = out.data();
  static const bool vector_bf16 = __builtin_cpu_supports("avx512bf16");
  if (vector_bf16) return round_to_bf16_avx512(x, n, o);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(n); ++i) o[i] = float_to_bf16(x[i]);
}

class Cache {
 public:
  void gemm(Transpose ta, Transpose tb, std::size_t M, std::size_t N, std::size_t K, float alpha,
            const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta, float* c,
            std::size_t ldc, bool bf16) {
    const std::lock_guard<std::mutex> lock(mutex_);
    const bool a_t = ta == Transpose::yes;
    const bool b_t = tb == Transpose::yes;
    Entry& entry = find_or_create({a_t, b_t, M, N, K, lda, ldb, ldc, std::bit_cast<uint32_t>(alpha),
                                   std::bit_cast<uint32_t>(beta), bf16, omp_get_max_threads()});
    const void* src = a;
    const void* weights = b;
    if (bf16) {
      src = rounded(a, a_t ? span(K, M, lda) : span(M, K, lda), a_bf16_);
      weights = rounded(b, b_t ? span(N, K, ldb) : span(K, N, ldb), b_bf16_);
    }
    entry.src.set_data_handle(const_cast<void*>(src));  // oneDNN reads it only
    entry.weights.set_data_handle(const_cast<void*>(weights));
    entry.dst.set_data_handle(c);
    entry.scratchpad.set_data_handle(scratchpad_.data());
    entry.primitive.execute(stream_, {{DNNL_ARG_SRC, entry.src},
                                      {DNNL_ARG_WEIGHTS, entry.weights},
                                      {DNNL_ARG_DST, entry.dst},
                                      {DNNL_ARG_SCRATCHPAD, entry.scratchpad}});
    stream_.wait();
  }

  // Rounds x[0, n) to bf16 once for the products that read inside it until unshare(x).
  void share(const float* x, std::size_t n) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (shared_copies_.size() <= shared_.size()) shared_copies_.emplace_back();
    std::vector<std::uint16_t>& copy = shared_copies_[shared_.size()];
    round_to_bf16(x, n, copy);
    shared_.push_back({x, n, copy.data()});
  }
  void unshare(const float* x) {
    const std::lock_guard<std::mutex> lock(mutex_);
    AT_CHECK(!shared_.empty() && shared_.back().x == x,
             "internal: shared bf16 operands must end in the reverse order of their start");
    shared_.pop_back();
  }

 private:
  struct Shared {
    const float* x;
    std::size_t n;
    const std::uint16_t* copy;
  };

  // The bf16 values of p[0, n): from a shared copy that holds them, else rounded into scratch.
  const std::uint16_t* rounded(const float* p, std::size_t n, std::vector<std::uint16_t>& scratch) {
    for (auto it = shared_.rbegin(); it != shared_.rend(); ++it) {
      const auto address = reinterpret_cast<std::uintptr_t>(p);
      const auto begin = reinterpret_cast<std::uintptr_t>(it->x);
      if (address >= begin && address + n * sizeof(float) <= begin + it->n * sizeof(float)) {
        return it->copy + (p - it->x);
      }
    }
    round_to_bf16(p, n, scratch);
    return scratch.data();
  }

  Entry& find_or_create(const Key& key) {
    if (auto it = entries_.find(key); it != entries_.end()) return it->second;
    if (entries_.size() >= kMaxEntries) entries_.clear();
    const auto [a_t, b_t, M, N, K, lda, ldb, ldc, alpha_bits, beta_bits, bf16, threads] = key;
    const auto in_type = bf16 ? memory::data_type::bf16 : memory::data_type::f32;
    const memory::desc src = matrix_desc(M, K, lda, a_t, in_type);
    const memory::desc weights = matrix_desc(K, N, ldb, b_t, in_type);
    const memory::desc dst = matrix_desc(M, N, ldc, false, memory::data_type::f32);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const float alpha = std::bit_cast<float>(alpha_bits);
    const float beta = std::bit_cast<float>(beta_bits);
    if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
    if (beta != 0.0f) {
      dnnl::post_ops ops;
      ops.append_sum(beta);
      attr.set_post_ops(ops);
    }
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, weights, dst), attr, engine_);
    const memory::desc scratch = pd.scratchpad_desc();
    if (scratchpad_.size() < scratch.get_size()) scratchpad_.resize(scratch.get_size());
    Entry entry{dnnl::matmul(pd), memory(src, engine_, nullptr), memory(weights, engine_, nullptr),
                memory(dst, engine_, nullptr), memory(scratch, engine_, nullptr)};
    return entries_.emplace(key, std::move(entry)).first->second;
  }

  std::mutex mutex_;
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
  std::map<Key, Entry> entries_;
  std::vector<std::uint8_t> scratchpad_;
  std::vector<std::uint16_t> a_bf16_, b_bf16_;
  std::vector<Shared> shared_;                             // innermost last
  std::vector<std::vector<std::uint16_t>> shared_copies_;  // by depth, kept between steps
};

Cache& cache() {
  static Cache instance;
  return instance;
}

}  // namespace

void gemm(Transpose ta, Transpose tb, std::size_t M, std::size_t N, std::size_t K, float alpha,
          const float* a, std::size_t lda, const float* b, std::size_t ldb, float beta, float* c,
          std::size_t ldc, bool bf16) {
  try {
    cache().gemm(ta, tb, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc, bf16);
  } catch (const dnnl::error& error) {
    throw Error(cat("oneDNN matmul ", M, "×", N, "×", K,
                    ta == Transpose::yes ? " (a transposed)" : "",
                    tb == Transpose::yes ? " (b transposed)" : "", bf16 ? " in bf16" : " in fp32",
                    " failed: ", error.what(), " (status ", static_cast<int>(error.status), ")"));
  }
}

void share_bf16(const float* x, std::size_t n) {
  cache().share(x, n);
}

void unshare_bf16(const float* x) {
  cache().unshare(x);
}

bool native_bf16() {
  const auto isa = dnnl::get_effective_cpu_isa();
  return isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
}

std::string isa_name() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41:
      return "SSE4.1";
    case dnnl::cpu_isa::avx:
      return "AVX";
    case dnnl::cpu_isa::avx2:
      return "AVX2";
    case dnnl::cpu_isa::avx2_vnni:
      return "AVX2 with VNNI";
    case dnnl::cpu_isa::avx512_core:
      return "AVX-512";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "AVX-512 with VNNI";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "AVX-512 with AVX512-BF16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "AVX-512 with AMX-BF16";
    default:
      return "generic";
  }
}

std::string version() {
  const dnnl_version_t* v = dnnl_version();
  return cat(v->major, ".", v->minor, ".", v->patch);
}

}  // namespace autotrain::kernels::onednn
