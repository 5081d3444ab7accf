// STREAM's triad with this process's OpenMP threads (memory_bandwidth.hpp).
#include "memory_bandwidth.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "autotrain/core/timer.hpp"

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace autotrain::cli {
namespace {

constexpr std::size_t kLine = 16;  // floats in a 64-byte cache line
constexpr float kScalar = 3.0f;    // STREAM's scalar

// This thread's static block of [0, n), in whole lines (as adamw_update splits its work).
std::pair<std::size_t, std::size_t> thread_block(std::size_t n) {
  const auto threads = static_cast<std::size_t>(omp_get_num_threads());
  const auto thread = static_cast<std::size_t>(omp_get_thread_num());
  const std::size_t per_thread = ((n + kLine - 1) / kLine + threads - 1) / threads * kLine;
  const std::size_t begin = std::min(n, thread * per_thread);
  return {begin, std::min(n, begin + per_thread)};
}

std::span<float> line_aligned(float* base, std::size_t elements) {
  const auto address = reinterpret_cast<std::uintptr_t>(base);
  const std::size_t skip = (64 - address % 64) % 64 / sizeof(float);
  return {base + skip, elements};
}

// a = b + s * c over [begin, end), `a + begin` on a line, streaming stores past the caches.
void triad_streaming(float* a, const float* b, const float* c, std::size_t begin, std::size_t end) {
  std::size_t i = begin;
#if defined(__AVX512F__)
  for (; i + 16 <= end; i += 16)
    _mm512_stream_ps(a + i,
                     _mm512_add_ps(_mm512_loadu_ps(b + i),
                                   _mm512_mul_ps(_mm512_set1_ps(kScalar), _mm512_loadu_ps(c + i))));
#elif defined(__AVX__)
  for (; i + 8 <= end; i += 8)
    _mm256_stream_ps(a + i,
                     _mm256_add_ps(_mm256_loadu_ps(b + i),
                                   _mm256_mul_ps(_mm256_set1_ps(kScalar), _mm256_loadu_ps(c + i))));
#elif defined(__SSE2__)
  for (; i + 4 <= end; i += 4)
    _mm_stream_ps(a + i, _mm_add_ps(_mm_loadu_ps(b + i),
                                    _mm_mul_ps(_mm_set1_ps(kScalar), _mm_loadu_ps(c + i))));
#endif
  for (; i < end; ++i) a[i] = b[i] + kScalar * c[i];
#if defined(__SSE2__)
  _mm_sfence();  // the streamed lines reach memory before the region's closing barrier
#endif
}

void triad_plain(float* a, const float* b, const float* c, std::size_t begin, std::size_t end) {
#pragma omp simd
  for (std::size_t i = begin; i < end; ++i) a[i] = b[i] + kScalar * c[i];
}

void triad_in_place(float* a, const float* c, std::size_t begin, std::size_t end) {
#pragma omp simd
  for (std::size_t i = begin; i < end; ++i) a[i] = a[i] + kScalar * c[i];
}

}  // namespace

float unit_noise(std::uint64_t i) {
  // splitmix64's finaliser: consecutive i give unrelated bits.
  std::uint64_t z = i + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * 0x1p-24f;
}

RepeatTimes summarise(std::vector<double> seconds) {
  if (seconds.empty()) return {};
  std::sort(seconds.begin(), seconds.end());
  const std::size_t n = seconds.size();
  const double median = n % 2 == 1 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2]);
  return {median, seconds.front(), seconds.back()};
}

TriadArrays::TriadArrays(std::size_t elements)
    : storage_(std::make_unique_for_overwrite<float[]>(3 * (elements + kLine))) {
  a_ = line_aligned(storage_.get(), elements);
  b_ = line_aligned(storage_.get() + elements + kLine, elements);
  c_ = line_aligned(storage_.get() + 2 * (elements + kLine), elements);
#pragma omp parallel
  {
    const auto [begin, end] = thread_block(elements);
    for (std::size_t i = begin; i < end; ++i) {
      a_[i] = 0.0f;
      b_[i] = unit_noise(2 * i);
      c_[i] = unit_noise(2 * i + 1);
    }
  }
}

const char* TriadArrays::name(Kind kind) {
  switch (kind) {
    case Kind::plain:
      return "triad, plain stores";
    case Kind::streaming:
#if defined(__SSE2__)
      return "triad, streaming stores";
#else
      return "triad (no streaming stores)";
#endif
    case Kind::in_place:
      return "triad in place";
  }
  return "";
}

double TriadArrays::time_once(Kind kind) {
  float* a = a_.data();
  const float* b = b_.data();
  const float* c = c_.data();
  const std::size_t n = a_.size();
  const Timer timer;
#pragma omp parallel
  {
    const auto [begin, end] = thread_block(n);
    if (kind == Kind::plain) triad_plain(a, b, c, begin, end);
    if (kind == Kind::streaming) triad_streaming(a, b, c, begin, end);
    if (kind == Kind::in_place) triad_in_place(a, c, begin, end);
  }
  return timer.seconds();
}

}  // namespace autotrain::cli
