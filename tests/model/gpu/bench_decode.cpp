// bench_decode: generation's decoding step on the device (model/gpu/causal_lm.hpp's
// DeviceDecoder) in bf16, launched kernel by kernel against as a CUDA graph, on random weights:
// a prompt of `prompt` tokens (no logits), then `new` tokens each with its logits copied back
// (what `generate` does per token, less the sampling). The prompt fed token by token, or (the
// "prefill" line, what `generate` does) several rows a step with feed_tokens. Wall-clock per
// token of the new tokens and of the prompt's, median and range of 3 runs after a warm-up run.
//   bench_decode [MODEL [POSITIONS [PROMPT [NEW]]]]
// MODEL: gpt2-124m (the default) or a Hugging Face folder (data/models/meta-llama--Llama-3.2-1B);
// POSITIONS: the cache (default 1024), PROMPT (default 128), NEW (default 256). One line per
// launch mode, starting "decode " (scripts/gpu-check.sh collects them). Exits 77 without a GPU.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "autotrain/core/dtype.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/gpu/matmul.hpp"
#include "autotrain/model/config.hpp"
#include "autotrain/model/folder.hpp"
#include "autotrain/model/gpu/causal_lm.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/model/unit_access.hpp"

namespace {

using namespace autotrain;
using F = __nv_bfloat16;
using Clock = std::chrono::steady_clock;

// bf16 values in [-0.02, 0.02) from a linear congruential generator (fast for a billion).
gpu::DeviceBuffer random_params(std::size_t count) {
  std::vector<std::uint16_t> bits(count);
  std::uint32_t state = 12345;
  for (auto& b : bits) {
    state = state * 1664525u + 1013904223u;
    b = float_to_bf16((static_cast<float>(state >> 8) / 16777216.0f - 0.5f) * 0.04f);
  }
  gpu::DeviceBuffer buffer(count * sizeof(F));
  buffer.copy_from_host(bits.data(), count * sizeof(F));
  return buffer;
}

struct Times {
  double prompt_ms;  // per prompt token
  double new_ms;     // per new token
};

Times run_once(model::gpu::DeviceDecoder<F>& decoder, model::BasicUnitAccess<F>& access, int vocab,
               int prompt, int fresh, bool prefill) {
  std::vector<float> logits(static_cast<std::size_t>(vocab));
  decoder.reset();
  std::int32_t token = 1;
  const auto next = [&] { return token = (token * 31 + 7) % vocab; };
  std::vector<std::int32_t> prompt_tokens(static_cast<std::size_t>(prompt));
  for (auto& t : prompt_tokens) t = next();
  const auto start = Clock::now();
  if (prefill) {
    decoder.feed_tokens(access, prompt_tokens, logits);
  } else {
    for (int i = 0; i < prompt - 1; ++i) decoder.feed_token(access, prompt_tokens[i], {});
    decoder.feed_token(access, prompt_tokens.back(), logits);
  }
  const auto prompted = Clock::now();
  for (int i = 0; i < fresh; ++i) decoder.feed_token(access, next(), logits);
  const auto end = Clock::now();
  const auto ms = [](Clock::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
  };
  return {ms(prompted - start) / prompt, ms(end - prompted) / fresh};
}

}  // namespace

int main(int argc, char** argv) {
  if (gpu::device_count() == 0) {
    std::fprintf(stderr, "bench_decode: no CUDA device\n");
    return 77;
  }
  try {
    const std::string name = argc > 1 ? argv[1] : "gpt2-124m";
    const int positions = argc > 2 ? std::atoi(argv[2]) : 1024;
    const int prompt = argc > 3 ? std::atoi(argv[3]) : 128;
    const int fresh = argc > 4 ? std::atoi(argv[4]) : 256;
    AT_CHECK(prompt >= 1 && fresh >= 1 && prompt + fresh <= positions,
             "bench_decode: PROMPT + NEW must fit POSITIONS");
    model::ModelConfig config =
        name == "gpt2-124m" ? model::ModelConfig::gpt2_124m() : model::read_folder_config(name);
    config.block_size = std::max(config.block_size, positions);
    const model::ParamLayout layout(config);
    const gpu::DeviceBuffer params = random_params(layout.padded_size());
    model::BasicFlatUnitAccess<F> access(layout, params.as<F>(), nullptr);
    const gpu::Stream stream;
    const kernels::gpu::BlasHandle blas;
    for (const char* mode : {"kernels", "graph", "prefill"}) {
      const bool prefill = std::string(mode) == "prefill";
      const auto launch = std::string(mode) == "kernels" ? model::gpu::DecodeLaunch::kernels
                                                         : model::gpu::DecodeLaunch::graph;
      const auto decoder =
          model::gpu::make_device_decoder<F>(layout, positions, stream.get(), blas, launch);
      // A warm-up (and the graphs' capture).
      run_once(*decoder, access, config.vocab_size, prompt, fresh, prefill);
      std::vector<Times> runs;
      for (int r = 0; r < 3; ++r) {
        runs.push_back(run_once(*decoder, access, config.vocab_size, prompt, fresh, prefill));
      }
      const auto stats = [&](double Times::*field) {
        std::vector<double> v;
        for (const Times& t : runs) v.push_back(t.*field);
        std::sort(v.begin(), v.end());
        return std::vector<double>{v[1], v.front(), v.back()};
      };
      const auto n = stats(&Times::new_ms), p = stats(&Times::prompt_ms);
      std::printf(
          "decode %-10s %-7s bf16 %.0fM params, cache %d: new tokens %.3f ms (%.3f-%.3f), %.0f "
          "tokens/s; prompt tokens %.3f ms (%.3f-%.3f)\n",
          name.c_str(), mode, static_cast<double>(layout.num_parameters()) * 1e-6, positions, n[0],
          n[1], n[2], 1e3 / n[0], p[0], p[1], p[2]);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_decode: %s\n", e.what());
    return 1;
  }
  return 0;
}
