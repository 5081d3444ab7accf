#pragma once
// Time a rank spends blocked on communication (the "comm wait" of the step-time breakdown):
// every wait of the ZeRO layer goes through here.
#include "autotrain/comm/communicator.hpp"
#include "autotrain/core/timer.hpp"

namespace autotrain::zero {

class WaitClock {
 public:
  void wait(CommHandle& handle) {
    if (!handle.pending()) return;
    const Timer timer;
    handle.wait();
    seconds_ += timer.seconds();
  }
  // Seconds waited since the last call.
  double take() {
    const double seconds = seconds_;
    seconds_ = 0;
    return seconds;
  }

 private:
  double seconds_ = 0;
};

}  // namespace autotrain::zero
