#include "autotrain/train/signals.hpp"

#include <atomic>
#include <csignal>

#include "autotrain/core/error.hpp"

namespace autotrain::train {
namespace {

// Written by the handler, read by the step loop and other threads: a lock-free atomic is
// async-signal-safe and, unlike volatile sig_atomic_t, well defined across threads.
std::atomic<int> g_received{0};
static_assert(std::atomic<int>::is_always_lock_free);
bool g_installed = false;
struct sigaction g_previous_term {};
struct sigaction g_previous_usr1 {};

// The first signal is kept; later ones are absorbed (the ranks are saving already).
extern "C" void on_stop_signal(int signal_number) {
  int none = 0;
  g_received.compare_exchange_strong(none, signal_number);
}

}  // namespace

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
  g_installed = true;
}

StopSignals::~StopSignals() {
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
