#include "autotrain/train/signals.hpp"

#include <pthread.h>

#include <atomic>
#include <csignal>
#include <ctime>
#include <thread>

#include "autotrain/core/error.hpp"

namespace autotrain::train {
namespace {

// Written by the handler and the watcher, read by the step loop and other threads: a lock-free
// atomic is async-signal-safe and, unlike volatile sig_atomic_t, well defined across threads.
std::atomic<int> g_received{0};
static_assert(std::atomic<int>::is_always_lock_free);
bool g_installed = false;
struct sigaction g_previous_term {};
struct sigaction g_previous_usr1 {};
sigset_t g_previous_mask;
std::atomic<bool> g_watching{false};
std::thread g_watcher;

// The first signal is kept; later ones are absorbed (the ranks are saving already).
void record(int signal_number) {
  int none = 0;
  g_received.compare_exchange_strong(none, signal_number);
}

extern "C" void on_stop_signal(int signal_number) {
  record(signal_number);
}

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);
  return set;
}

// Takes the stop signals that no thread left unblocked, checking every 100 ms whether to end.
void watch() {
  const sigset_t set = stop_signals();
  const timespec wait{0, 100'000'000};
  while (g_watching.load()) {
    const int signal_number = sigtimedwait(&set, nullptr, &wait);
    if (signal_number > 0) record(signal_number);
  }
}

}  // namespace

// A stop signal handled on a thread in the middle of a oneDNN kernel broke that kernel (a
// primitive that failed to execute, or a SIGSEGV in its JIT code): the signals are blocked on
// this thread, whose mask every thread started from it later inherits (the OpenMP workers, the
// checkpoint writer), and taken by a watcher thread instead. Threads started before (MPI's) may
// still run the handler, which only sets the flag.
StopSignals::StopSignals() {
  AT_CHECK(!g_installed, "StopSignals: the handlers are already installed");
  g_received.store(0);
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  // SA_RESTART: a signal arriving during a blocking read or MPI wait does not fail the call.
  action.sa_flags = SA_RESTART;
  AT_CHECK(sigaction(SIGTERM, &action, &g_previous_term) == 0,
           "cannot install the SIGTERM handler");
  AT_CHECK(sigaction(SIGUSR1, &action, &g_previous_usr1) == 0,
           "cannot install the SIGUSR1 handler");
  const sigset_t set = stop_signals();
  AT_CHECK(pthread_sigmask(SIG_BLOCK, &set, &g_previous_mask) == 0,
           "cannot block the stop signals on the training thread");
  g_watching.store(true);
  g_watcher = std::thread(watch);
  g_installed = true;
}

StopSignals::~StopSignals() {
  g_watching.store(false);
  if (g_watcher.joinable()) g_watcher.join();
  if (g_received.load() != 0) {
    // Stopping after a signal: the process is on its way out (checkpoint saved, exit 3). A
    // second signal (Slurm's TERM at the limit, a repeated scancel) must not kill it now with
    // the default action, which would turn the requeue status 3 into 143 or 138.
    signal(SIGTERM, SIG_IGN);
    signal(SIGUSR1, SIG_IGN);
  } else {
    sigaction(SIGTERM, &g_previous_term, nullptr);
    sigaction(SIGUSR1, &g_previous_usr1, nullptr);
  }
  pthread_sigmask(SIG_SETMASK, &g_previous_mask, nullptr);
  g_installed = false;
}

int StopSignals::received() {
  return g_received.load();
}

const char* signal_name(int signal_number) {
  switch (signal_number) {
    case SIGTERM:
      return "SIGTERM";
    case SIGUSR1:
      return "SIGUSR1";
    default:
      return "a stop signal";
  }
}

}  // namespace autotrain::train
