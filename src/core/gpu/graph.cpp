// Capture-once CUDA graphs (core/gpu/graph.hpp).
#include "autotrain/core/gpu/graph.hpp"

#include "autotrain/core/gpu/check.hpp"

namespace autotrain::gpu {

StreamGraph::~StreamGraph() {
  if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
  if (graph_ != nullptr) cudaGraphDestroy(graph_);
}

void StreamGraph::run(cudaStream_t stream, const std::function<void()>& queue) {
  if (exec_ == nullptr && !ran_once_) {
    queue();
    ran_once_ = true;
    return;
  }
  if (exec_ == nullptr) {
    // Thread-local: another thread's CUDA calls (a data loader's pinned copies) do not break it.
    AT_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    try {
      queue();
    } catch (...) {
      cudaGraph_t partial = nullptr;
      if (cudaStreamEndCapture(stream, &partial) == cudaSuccess && partial != nullptr) {
        cudaGraphDestroy(partial);
      }
      throw;
    }
    AT_CUDA_CHECK(cudaStreamEndCapture(stream, &graph_));
    AT_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
  }
  AT_CUDA_CHECK(cudaGraphLaunch(exec_, stream));
}

}  // namespace autotrain::gpu
