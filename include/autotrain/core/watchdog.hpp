#pragma once
// The collective watchdog (DESIGN.md contract 4): one thread per communicator watches the
// collectives in flight; one older than comm_timeout means a peer is gone or stuck, and waiting
// longer only hides it. The watchdog then reports the operation, its sequence number, its size
// and this rank, and calls `on_expiry` (the communicators log it and abort the whole job).
//
// A collective is in flight from its issue (begin) until it completes on this rank (end, called
// by the thread that ran it, and again harmlessly when its handle is waited on): a handle that
// is never waited on, such as a prefetch nobody used, does not count once it has completed.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace autotrain {

class Watchdog {
 public:
  using ExpiryHandler = std::function<void(const std::string& message)>;

  // `backend` and `rank` only name things in the message. Starts the thread.
  Watchdog(std::string backend, int rank, double timeout_seconds, ExpiryHandler on_expiry);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Registers a collective; returns its sequence number (1, 2, ... per communicator).
  // `operation` is kept, not copied: it must stay valid until end() (a string literal, or a
  // string its caller owns for that long). `bytes` 0 leaves the size out of the message.
  uint64_t begin(std::string_view operation, size_t bytes);
  void end(uint64_t sequence);

  double timeout_seconds() const { return timeout_seconds_; }

 private:
  struct InFlight {
    uint64_t sequence;
    std::string_view operation;
    size_t bytes;
    std::chrono::steady_clock::time_point issued;
  };

  void watch();

  std::string backend_;
  int rank_;
  double timeout_seconds_;
  ExpiryHandler on_expiry_;

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool expired_ = false;
  uint64_t next_sequence_ = 1;
  std::vector<InFlight> in_flight_;  // issue order; capacity reserved so begin() rarely allocates
  std::thread thread_;
};

// The abort the communicators install: logs `message` as an error, with the process's
// PeerProbe report (which ranks did not answer: peer_probe.hpp), and ends every rank of the job
// with a non-zero exit code.
[[noreturn]] void abort_job_on_collective_timeout(const std::string& message);

}  // namespace autotrain
