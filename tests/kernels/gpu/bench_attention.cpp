// bench_attention: causal attention forward and backward on the device, cuDNN's fused attention
// against our flash kernels, in bf16, timed with CUDA events (3 warm-up calls, then the mean of
// 20). TFLOP/s count the products a causal attention needs: forward 4·B·NH·HS per visible
// (query, key) pair (QKᵀ and PV; T(T + 1)/2 pairs causal, fewer in a sliding window), backward
// 2.5 times that (five products), as FlashAttention-2 counts.
//   bench_attention        GPT-2 124M (B=16 T=1024 NH=12 HS=64), Llama 3.2 1B (B=16 T=1024 NH=32
//                          NKV=8 HS=64), Llama 3 8B's heads (B=4 T=4096 NH=32 NKV=8 HS=128), and
//                          Gemma's head size 256: Gemma 2 2B (B=8 T=2048 NH=8 NKV=4, soft cap 50,
//                          and its sliding layers' window of 4096 is longer than T) and Gemma 3 1B
//                          (B=8 T=2048 NH=4 NKV=1, a sliding layer: window 512)
//   bench_attention B T NH NKV HS [window=W] [cap=C] ...   the shapes given, plain causal unless
//                          a window or soft cap follows
// One line per path and shape, starting "sdpa " (scripts/gpu-check.sh collects them). Exits 77
// without a GPU.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "autotrain/core/dtype.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/gpu/check.hpp"
#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/attention_choice.hpp"
#include "autotrain/kernels/gpu/cudnn_attention.hpp"
#include "autotrain/kernels/gpu/flash_attention.hpp"

namespace {

using autotrain::gpu::DeviceBuffer;
using F = __nv_bfloat16;
namespace gpu = autotrain::kernels::gpu;

struct Shape {
  int B, T, NH, NKV, HS;
  autotrain::kernels::AttentionOptions options;

  // The (query, key) pairs a query sees: causal, within the window.
  double pairs() const {
    double n = 0;
    for (int t = 0; t < T; ++t) n += t + 1 - options.first_visible(t);
    return n;
  }
  std::string extras() const {
    std::string text;
    if (options.window > 0) text += " window=" + std::to_string(options.window);
    if (options.softcap > 0) text += " cap=" + std::to_string(static_cast<int>(options.softcap));
    return text;
  }
};

// Device memory of `count` bf16 values drawn uniformly from [-1, 1].
DeviceBuffer random_bf16(std::size_t count, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<std::uint16_t> bits(count);
  for (auto& b : bits) b = autotrain::float_to_bf16(dist(gen));
  DeviceBuffer buffer(count * sizeof(F));
  buffer.copy_from_host(bits.data(), count * sizeof(F));
  return buffer;
}

// Mean milliseconds of `run` on `stream` over 20 calls after 3 warm-up calls.
template <typename Run>
double milliseconds(cudaStream_t stream, Run&& run) {
  for (int i = 0; i < 3; ++i) run();
  cudaEvent_t start, stop;
  AT_CUDA_CHECK(cudaEventCreate(&start));
  AT_CUDA_CHECK(cudaEventCreate(&stop));
  AT_CUDA_CHECK(cudaEventRecord(start, stream));
  const int calls = 20;
  for (int i = 0; i < calls; ++i) run();
  AT_CUDA_CHECK(cudaEventRecord(stop, stream));
  AT_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  AT_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  AT_CUDA_CHECK(cudaEventDestroy(start));
  AT_CUDA_CHECK(cudaEventDestroy(stop));
  return ms / calls;
}

void report(const char* path, const Shape& s, double forward_ms, double backward_ms) {
  const double forward_flops = 4.0 * s.B * s.NH * s.HS * s.pairs();
  const double backward_flops = 2.5 * forward_flops;
  std::printf(
      "sdpa %-6s B=%-3d T=%-5d NH=%-3d NKV=%-3d HS=%-4d bf16  %8.3f %8.3f  %7.1f %7.1f %7.1f%s\n",
      path, s.B, s.T, s.NH, s.NKV, s.HS, forward_ms, backward_ms, forward_flops / forward_ms * 1e-9,
      backward_flops / backward_ms * 1e-9,
      (forward_flops + backward_flops) / (forward_ms + backward_ms) * 1e-9, s.extras().c_str());
}

void bench(const Shape& s, cudaStream_t stream) {
  const std::size_t qkv = std::size_t(s.B) * s.T * (s.NH + 2 * s.NKV) * s.HS;
  const std::size_t out = std::size_t(s.B) * s.T * s.NH * s.HS;
  const std::size_t rows = std::size_t(s.B) * s.NH * s.T;
  DeviceBuffer d_qkv = random_bf16(qkv, 1), d_dout = random_bf16(out, 2);
  DeviceBuffer d_out(out * sizeof(F)), d_dqkv(qkv * sizeof(F));
  DeviceBuffer lse(rows * sizeof(float)), delta(rows * sizeof(float));
  F* q = d_qkv.as<F>();
  const autotrain::kernels::SdpaShape shape =
      autotrain::kernels::sdpa_shape(true, s.B, s.T, s.NH, s.NKV, s.HS, s.options);
  const std::string refusal = gpu::cudnn_attention_prepare(shape, stream);
  if (refusal.empty()) {
    const double f = milliseconds(stream, [&] {
      gpu::cudnn_attention_forward(d_out.as<F>(), lse.as<float>(), q, s.B, s.T, s.NH, s.NKV, s.HS,
                                   stream, s.options);
    });
    const double b = milliseconds(stream, [&] {
      gpu::cudnn_attention_backward(d_dqkv.as<F>(), delta.as<float>(), d_dout.as<F>(), q,
                                    d_out.as<F>(), lse.as<float>(), s.B, s.T, s.NH, s.NKV, s.HS,
                                    stream, s.options);
    });
    report("cudnn", s, f, b);
    std::printf("sdpa cudnn engines: %s\n", gpu::cudnn_attention_engines(shape).c_str());
  } else {
    std::printf("sdpa cudnn   B=%d T=%d NH=%d NKV=%d HS=%d%s: not built: %s\n", s.B, s.T, s.NH,
                s.NKV, s.HS, s.extras().c_str(), refusal.c_str());
  }
  if (!gpu::flash_attention_supports(sizeof(F), s.NH, s.NKV, s.HS)) {
    std::printf("sdpa flash   B=%d T=%d NH=%d NKV=%d HS=%d: head size not supported\n", s.B, s.T,
                s.NH, s.NKV, s.HS);
    return;
  }
  const double f = milliseconds(stream, [&] {
    gpu::flash_attention_forward(d_out.as<F>(), lse.as<float>(), q, s.B, s.T, s.NH, s.NKV, s.HS,
                                 stream, s.options);
  });
  const double b = milliseconds(stream, [&] {
    gpu::flash_attention_backward(d_dqkv.as<F>(), delta.as<float>(), d_dout.as<F>(), q,
                                  d_out.as<F>(), lse.as<float>(), s.B, s.T, s.NH, s.NKV, s.HS,
                                  stream, s.options);
  });
  report("flash", s, f, b);
}

}  // namespace

int main(int argc, char** argv) {
  if (autotrain::gpu::device_count() == 0) {
    std::fprintf(stderr, "bench_attention: no CUDA device\n");
    return 77;
  }
  std::vector<Shape> shapes;
  for (int i = 1; i < argc;) {
    if (i + 5 > argc) {
      std::fprintf(stderr, "usage: bench_attention [B T NH NKV HS [window=W] [cap=C]]...\n");
      return 2;
    }
    Shape s{std::atoi(argv[i]),     std::atoi(argv[i + 1]), std::atoi(argv[i + 2]),
            std::atoi(argv[i + 3]), std::atoi(argv[i + 4]), {}};
    for (i += 5; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg.rfind("window=", 0) == 0) {
        s.options.window = std::atoi(arg.c_str() + 7);
      } else if (arg.rfind("cap=", 0) == 0) {
        s.options.softcap = std::atof(arg.c_str() + 4);
      } else {
        break;
      }
    }
    shapes.push_back(s);
  }
  if (shapes.empty()) {
    autotrain::kernels::AttentionOptions gemma2, gemma3;
    gemma2.softcap = 50;
    gemma3.window = 512;
    shapes = {{16, 1024, 12, 12, 64, {}},
              {16, 1024, 32, 8, 64, {}},
              {4, 4096, 32, 8, 128, {}},
              {8, 2048, 8, 4, 256, gemma2},
              {8, 2048, 4, 1, 256, gemma3}};
  }
  try {
    autotrain::gpu::Stream stream;
    std::printf("%s\n", gpu::cudnn_attention_version().c_str());
    std::printf(
        "sdpa path   shape                                       fwd_ms   bwd_ms  "
        "fwd_TF/s bwd_TF/s all_TF/s\n");
    for (const Shape& s : shapes) bench(s, stream.get());
    stream.synchronize();
  } catch (const autotrain::Error& e) {
    std::fprintf(stderr, "bench_attention: %s\n", e.what());
    return 1;
  }
  return 0;
}
