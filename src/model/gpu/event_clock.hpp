#pragma once
// The device models' kernel profile (bench train --profile): the device counterpart of
// KernelClock (model/kernel_clock.hpp). While profiling, restart() after a unit hook and
// lap(kind) after each kernel call record a CUDA event on the model's stream, so a kernel's GPU
// time lies between two of them; rows() waits for the events and sums them into the CPU model's
// rows. With profiling off each call is one branch. Host code.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <array>
#include <cstddef>
#include <vector>

#include "../kernel_clock.hpp"
#include "autotrain/core/gpu/check.hpp"
#include "autotrain/core/gpu/device.hpp"
#include "autotrain/model/profile.hpp"

namespace autotrain::model::gpu {

// Event pairs around the timed calls of the profiled steps. Events are created as a step needs
// them (profiling only: the timed steps of bench train run without) and destroyed with it.
class EventProfiler {
 public:
  EventProfiler() = default;
  EventProfiler(const EventProfiler&) = delete;
  EventProfiler& operator=(const EventProfiler&) = delete;
  ~EventProfiler() {
    for (cudaEvent_t event : events_) cudaEventDestroy(event);
  }

  void restart(cudaStream_t stream) { last_ = record(stream); }
  // row: 2 · ProfileOp + pass
  void lap(int row, cudaStream_t stream) {
    const cudaEvent_t now = record(stream);
    marks_.push_back({row, last_, now});
    last_ = now;
  }

  // Seconds per row since construction, in the CPU model's row order (waits for the events).
  std::vector<ProfileEntry> rows(const ModelConfig& config) const {
    std::array<double, 2 * kOpCount> seconds{};
    for (const auto& mark : marks_) {
      AT_CUDA_CHECK(cudaEventSynchronize(mark.stop));
      float ms = 0;
      AT_CUDA_CHECK(cudaEventElapsedTime(&ms, mark.start, mark.stop));
      seconds[static_cast<std::size_t>(mark.row)] += 1e-3 * ms;
    }
    return entries(seconds, config);
  }
  // The rows of a model that is not profiling: all zero.
  static std::vector<ProfileEntry> zero_rows(const ModelConfig& config) {
    return entries({}, config);
  }

 private:
  struct Mark {
    int row;
    cudaEvent_t start;
    cudaEvent_t stop;
  };
  cudaEvent_t record(cudaStream_t stream) {
    cudaEvent_t event = nullptr;
    AT_CUDA_CHECK(cudaEventCreate(&event));
    events_.push_back(event);
    AT_CUDA_CHECK(cudaEventRecord(event, stream));
    return event;
  }
  static std::vector<ProfileEntry> entries(const std::array<double, 2 * kOpCount>& seconds,
                                           const ModelConfig& config) {
    std::vector<ProfileEntry> rows;
    for (int op = 0; op < kOpCount; ++op) {
      rows.push_back({profile_op_name(op, config), seconds[2 * static_cast<std::size_t>(op)],
                      seconds[2 * static_cast<std::size_t>(op) + 1]});
    }
    return rows;
  }
  std::vector<cudaEvent_t> events_;
  std::vector<Mark> marks_;
  cudaEvent_t last_ = nullptr;  // the previous restart or lap
};

// One pass's clock over a profiler that may be null (not profiling).
class EventClock {
 public:
  EventClock(EventProfiler* profiler, cudaStream_t stream, Pass pass)
      : profiler_(profiler), stream_(stream), pass_(static_cast<int>(pass)) {
    restart();
  }
  void restart() {
    if (profiler_ != nullptr) profiler_->restart(stream_);
  }
  void lap(ProfileOp kind) {
    if (profiler_ != nullptr) profiler_->lap(2 * kind + pass_, stream_);
  }

 private:
  EventProfiler* profiler_;
  cudaStream_t stream_;
  int pass_;
};

}  // namespace autotrain::model::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
