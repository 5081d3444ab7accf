#pragma once
// A CUDA graph of the work one function queues on a stream, captured once and launched in its
// place from then on: for a step whose launches are the same every time (decoding one token,
// model/gpu/decoder_base.hpp), one launch instead of a hundred kernel launches.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <functional>

namespace autotrain::gpu {

class StreamGraph {
 public:
  StreamGraph() = default;
  ~StreamGraph();
  StreamGraph(const StreamGraph&) = delete;
  StreamGraph& operator=(const StreamGraph&) = delete;

  // Queues `queue`'s work on `stream`. The first call runs `queue` as it is (first calls may
  // allocate or plan: cuBLASLt's heuristics, a workspace), the second captures it into a graph
  // and launches that, later calls launch the graph without calling `queue`. So `queue` must
  // queue the same kernels with the same arguments on every call: what changes between calls
  // lives in device memory. If `queue` throws during the capture, the capture ends and the
  // error propagates; the next call captures again.
  void run(cudaStream_t stream, const std::function<void()>& queue);

  // Whether the graph is captured (the next run() launches it).
  bool captured() const { return exec_ != nullptr; }

 private:
  bool ran_once_ = false;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace autotrain::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
