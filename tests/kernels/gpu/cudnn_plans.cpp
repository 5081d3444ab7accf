// cudnn_plans: whether cuDNN takes our fused-attention graphs (src/kernels/gpu/cudnn_attention.cu),
// checked without a GPU: for each shape, the forward and backward operation graphs are built and
// finalized, heuristics (mode A, then the fallback list) are asked for an engine, and an execution
// plan is finalized for the GPU a device-properties description names (cuDNN 9.8's deviceless
// compilation). What it cannot say: whether the plans compute the right numbers (the real-GPU
// test CudnnAttentionTest in test_kernels does) or run on a real H100 as they do on its
// description.
//   cudnn_plans                 an H100 SXM (sm_90, 132 SMs, 227 KB of shared memory per block)
//   cudnn_plans DEVICE.json     the GPU that cuDNN's CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION
//                               of it describes
// Prints the engines per shape; exits 1 where a graph is not taken, 77 where this build has no
// cuDNN (the emulated build). The ctest cuda.cudnn_plans runs it
// with the real-CUDA build of the kernels.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "autotrain/kernels/attention_choice.hpp"
#include "autotrain/kernels/gpu/cudnn_attention.hpp"

namespace {

namespace gpu = autotrain::kernels::gpu;
using autotrain::kernels::AttentionOptions;
using autotrain::kernels::SdpaShape;

// An H100 80GB HBM3 (SXM) as cuDNN's device properties describe a GPU: compute capability 9.0,
// its SMs, shared memory, registers and clocks from NVIDIA's specifications and
// cudaGetDeviceProperties on one. The keys are the ones cuDNN 9.19 asks for.
const char* const kH100 =
    R"({"deviceName": "NVIDIA H100 80GB HBM3", "deviceVer": 900, "driverVer": 13000,)"
    R"( "cudaDeviceId": 0, "pciDeviceId": 0, "multiProcessorCount": 132, "warpSize": 32,)"
    R"( "maxGridSize": [2147483647, 65535, 65535], "maxBlockSize": [1024, 1024, 64],)"
    R"( "maxThreadsPerBlock": 1024, "maxThreadsPerSM": 2048, "maxCtasPerSM": 32,)"
    R"( "regsPerBlock": 65536, "maxRegistersPerSM": 65536, "maxSharedMemoryPerBlock": 49152,)"
    R"( "maxSharedMemoryPerBlockOptin": 232448, "reservedSharedMemoryPerBlock": 1024,)"
    R"( "l2CacheSize": 52428800, "totalGlobalMem": 85031714816, "smClockRateKHz": 1980000,)"
    R"( "memClockRateKHz": 2619000, "isTccDriver": 0, "supportCoopLaunch": 1})";

struct Check {
  SdpaShape shape;
  const char* what;
};

SdpaShape shape(bool bf16, int B, int T, int NH, int NKV, int HS,
                const AttentionOptions& options = {}) {
  return autotrain::kernels::sdpa_shape(bf16, B, T, NH, NKV, HS, options);
}

// The backward that accumulates dQ by atomics (AUTOTRAIN_CUDNN_DETERMINISTIC=0).
SdpaShape atomic(SdpaShape s) {
  s.deterministic = false;
  return s;
}

std::vector<Check> checks() {
  AttentionOptions window, softcap, gemma2;
  window.window = 512;
  softcap.softcap = 50;
  gemma2.scale = 1 / 16.0;
  gemma2.softcap = 50;
  gemma2.window = 512;
  return {
      {shape(true, 16, 1024, 12, 12, 64), "GPT-2 124M"},
      {shape(false, 16, 1024, 12, 12, 64), "GPT-2 124M in fp16"},
      {shape(true, 2, 37, 4, 2, 64), "a ragged T with grouped heads"},
      {shape(true, 1, 4096, 32, 8, 128), "Llama 3 8B"},
      {atomic(shape(true, 1, 4096, 32, 8, 128)), "Llama 3 8B, dQ by atomics"},
      {shape(true, 4, 2048, 16, 8, 128, window), "a sliding window"},
      {shape(true, 4, 2048, 16, 8, 128, softcap), "the logit soft cap"},
      {shape(true, 4, 2048, 16, 8, 256, gemma2), "Gemma 2's options at head size 256"},
  };
}

}  // namespace

int main(int argc, char** argv) {
  if (!gpu::cudnn_attention_built()) {
    std::printf("cudnn_plans: %s\n", gpu::cudnn_attention_version().c_str());
    return 77;
  }
  std::string device = kH100;
  if (argc > 1) {
    std::ifstream in(argv[1]);
    if (!in) {
      std::fprintf(stderr, "cudnn_plans: cannot read %s\n", argv[1]);
      return 2;
    }
    device.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::printf("cudnn_plans: %s, for %s\n", gpu::cudnn_attention_version().c_str(),
              argc > 1 ? argv[1] : "an H100 (sm_90)");
  int failed = 0;
  for (const Check& c : checks()) {
    const gpu::CudnnPlanCheck check = gpu::cudnn_attention_plan_check(c.shape, device);
    const bool taken = check.forward.taken && check.backward.taken;
    const char* verdict = taken ? "taken: " : "FAILED:";
    std::printf("%s %s (%s)\n  forward: %s\n  backward: %s\n", verdict, c.what,
                c.shape.describe().c_str(), check.forward.detail.c_str(),
                check.backward.detail.c_str());
    failed += taken ? 0 : 1;
  }
  return failed == 0 ? 0 : 1;
}
