#include "autotrain/core/watchdog.hpp"

#include <algorithm>

#include "autotrain/core/deadline.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/peer_probe.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain {

Watchdog::Watchdog(std::string backend, int rank, double timeout_seconds, ExpiryHandler on_expiry)
    : backend_(std::move(backend)),
      rank_(rank),
      timeout_seconds_(timeout_seconds),
      on_expiry_(std::move(on_expiry)) {
  AT_CHECK(timeout_seconds > 0, "comm_timeout: expected a positive number of seconds, got ",
           timeout_seconds);
  in_flight_.reserve(256);
  thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

uint64_t Watchdog::begin(std::string_view operation, size_t bytes) {
  std::lock_guard lock(mutex_);
  const uint64_t sequence = next_sequence_++;
  in_flight_.push_back({sequence, operation, bytes, std::chrono::steady_clock::now()});
  return sequence;
}

void Watchdog::end(uint64_t sequence) {
  std::lock_guard lock(mutex_);
  // Usually the oldest entry: handles are mostly waited on in issue order.
  auto found = std::find_if(in_flight_.begin(), in_flight_.end(),
                            [&](const InFlight& entry) { return entry.sequence == sequence; });
  if (found != in_flight_.end()) in_flight_.erase(found);
}

void Watchdog::watch() {
  const auto timeout = std::chrono::duration<double>(timeout_seconds_);
  // Check often enough that the abort comes within ~10% of the timeout, but never spin.
  const auto period =
      std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(timeout / 10),
                 std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, period);
    if (stopping_ || expired_ || in_flight_.empty()) continue;
    const InFlight oldest = in_flight_.front();
    const auto age = std::chrono::steady_clock::now() - oldest.issued;
    if (age < timeout) continue;
    expired_ = true;
    const std::string size = oldest.bytes == 0
                                 ? std::string()
                                 : cat(" (", oldest.bytes, " bytes, ",
                                       human_bytes(static_cast<double>(oldest.bytes)), ")");
    const std::string message = cat(
        "collective timeout: ", backend_, " ", oldest.operation, " #", oldest.sequence, size,
        " on rank ", rank_, " did not complete within comm_timeout = ", timeout_seconds_,
        " s; another rank probably failed, stopped or skipped this collective (see its messages "
        "above), or the network is unreachable (check firewalls and the interface: "
        "docs/communication.md, troubleshooting)");
    lock.unlock();
    on_expiry_(message);
    lock.lock();
  }
}

void abort_job_on_collective_timeout(const std::string& message) {
  log::error(message, peer_probe_report(collective_timeout()));
  abort_job(1);
}

}  // namespace autotrain
