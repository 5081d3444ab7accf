#pragma once
// The lap timer of a profiled CPU model pass (bench train --profile): after each kernel call,
// lap(kind) adds the time since the previous lap (or restart) to that kind's row of the pass;
// restart() after a unit hook leaves the hook's time out. With profiling off each call is one
// branch. (The device model's counterpart records CUDA events instead: gpu/gpt2.cpp.)
#include <array>

#include "autotrain/core/timer.hpp"
#include "autotrain/model/profile.hpp"

namespace autotrain::model {

enum class Pass : int { forward = 0, backward = 1 };

class KernelClock {
 public:
  // rows[2 · kind + pass]: seconds per kernel kind, forward and backward.
  KernelClock(bool on, std::array<double, 2 * kOpCount>& rows, Pass pass)
      : on_(on), rows_(rows), pass_(static_cast<int>(pass)) {}
  void restart() {
    if (on_) timer_.reset();
  }
  void lap(ProfileOp kind) {
    if (!on_) return;
    rows_[static_cast<std::size_t>(2 * kind + pass_)] += timer_.seconds();
    timer_.reset();
  }

 private:
  bool on_;
  std::array<double, 2 * kOpCount>& rows_;
  int pass_;
  Timer timer_;
};

}  // namespace autotrain::model
