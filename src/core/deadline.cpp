#include "autotrain/core/deadline.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/peer_probe.hpp"
#include "autotrain/core/watchdog.hpp"

namespace autotrain {
namespace {

struct ProcessWatchdog {
  std::mutex mutex;
  double timeout_seconds = 600;
  std::unique_ptr<Watchdog> watchdog;  // started at the first deadline

  Watchdog& get() {
    std::lock_guard lock(mutex);
    if (!watchdog) {
      watchdog = std::make_unique<Watchdog>("mpi", world_rank(), timeout_seconds,
                                            abort_job_on_collective_timeout);
    }
    return *watchdog;
  }
};

ProcessWatchdog& process_watchdog() {
  static ProcessWatchdog instance;
  return instance;
}

}  // namespace

std::string rank_list(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size() && i < 16; ++i) {
    text += cat(i == 0 ? "" : ", ", ranks[i]);
  }
  if (ranks.size() > 16) text += cat(" and ", ranks.size() - 16, " more");
  return text;
}

void set_collective_timeout(double seconds) {
  AT_CHECK(seconds > 0, "comm_timeout: expected a positive number of seconds, got ", seconds);
  auto& process = process_watchdog();
  std::lock_guard lock(process.mutex);
  if (process.timeout_seconds == seconds) return;
  process.timeout_seconds = seconds;
  process.watchdog.reset();  // the next deadline starts one with the new timeout
}

double collective_timeout() {
  auto& process = process_watchdog();
  std::lock_guard lock(process.mutex);
  return process.timeout_seconds;
}

CollectiveDeadline::CollectiveDeadline(std::string operation)
    : operation_(std::move(operation)), sequence_(process_watchdog().get().begin(operation_, 0)) {}

CollectiveDeadline::~CollectiveDeadline() {
  process_watchdog().get().end(sequence_);
}

void wait_or_abort(std::span<MPI_Request> requests, std::span<const int> peers,
                   std::string_view operation) {
  using Clock = std::chrono::steady_clock;
  const double timeout = collective_timeout();
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout));
  auto pause = std::chrono::microseconds(0);
  while (true) {
    int done = 0;
    AT_MPI_CHECK(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done,
                             MPI_STATUSES_IGNORE));
    if (done) return;
    if (Clock::now() >= deadline) break;
    // Poll at once for quick agreements, then back off to at most a millisecond.
    if (pause.count() == 0) {
      std::this_thread::yield();
      pause = std::chrono::microseconds(10);
    } else {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
  }
  std::vector<int> missing;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    int done = 0;
    MPI_Test(&requests[i], &done, MPI_STATUS_IGNORE);
    if (!done && i < peers.size() && peers[i] >= 0) missing.push_back(peers[i]);
  }
  std::sort(missing.begin(), missing.end());
  missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
  log::error(cat("collective timeout: ", operation, " on rank ", world_rank(),
                 " did not complete within comm_timeout = ", timeout, " s",
                 missing.empty() ? std::string() : cat("; ", rank_list(missing), " did not arrive"),
                 " (stopped, crashed, or running another command or configuration: see their "
                 "messages above)",
                 missing.empty() ? peer_probe_report(timeout) : std::string()));
  abort_job(1);
}

void wait_or_abort(MPI_Request& request, std::string_view operation) {
  wait_or_abort(std::span<MPI_Request>(&request, 1), {}, operation);
}

void run_on_root(MPI_Comm comm, std::string_view operation, const std::function<void()>& work) {
  constexpr int kTag = 0x4142;  // heartbeats: 0 = still working, 1 = done
  const int rank = comm_rank(comm);
  const int size = comm_size(comm);
  if (size == 1) return work();
  using Clock = std::chrono::steady_clock;
  const auto timeout = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(collective_timeout()));
  if (rank == 0) {
    std::mutex mutex;
    std::condition_variable wake;
    bool done = false;
    std::vector<int> beat(static_cast<size_t>(size), 0);
    const auto send_all = [&](int value) {
      std::vector<MPI_Request> requests(static_cast<size_t>(size - 1));
      for (int r = 1; r < size; ++r) {
        beat[static_cast<size_t>(r)] = value;
        AT_MPI_CHECK(MPI_Isend(&beat[static_cast<size_t>(r)], 1, MPI_INT, r, kTag, comm,
                               &requests[static_cast<size_t>(r - 1)]));
      }
      AT_MPI_CHECK(MPI_Waitall(size - 1, requests.data(), MPI_STATUSES_IGNORE));
    };
    std::thread heart([&] {
      std::unique_lock lock(mutex);
      while (!wake.wait_for(lock, timeout / 4, [&] { return done; })) {
        lock.unlock();
        send_all(0);
        lock.lock();
      }
    });
    work();
    {
      std::lock_guard lock(mutex);
      done = true;
    }
    wake.notify_all();
    heart.join();
    send_all(1);
    return;
  }
  while (true) {
    int value = 0;
    MPI_Request request = MPI_REQUEST_NULL;
    AT_MPI_CHECK(MPI_Irecv(&value, 1, MPI_INT, 0, kTag, comm, &request));
    const int peers[1] = {0};
    wait_or_abort(std::span<MPI_Request>(&request, 1), peers, operation);
    if (value == 1) return;
  }
}

void stop_here_if_asked(std::string_view phase) {
  const char* target = std::getenv("AUTOTRAIN_INJECT_STOP");
  if (target == nullptr) return;
  const std::string_view text(target);
  const auto colon = text.find(':');
  if (colon == std::string_view::npos || text.substr(colon + 1) != phase) return;
  if (std::to_string(world_rank()) != text.substr(0, colon)) return;
  log::warn("stopping this rank at ", phase, " (AUTOTRAIN_INJECT_STOP=", text, ")");
  std::raise(SIGSTOP);
}

}  // namespace autotrain
