#include "autotrain/train/signals.hpp"

#include <csignal>

#include "autotrain/core/error.hpp"

namespace autotrain::train {
namespace {

// Written by the handler, read by the step loop: a lock-free atomic int is async-signal-safe.
volatile std::sig_atomic_t g_received = 0;
bool g_installed = false;
struct sigaction g_previous_term {};
struct sigaction g_previous_usr1 {};

extern "C" void on_stop_signal(int signal_number) {
  if (g_received == 0) g_received = signal_number;
}

}  // namespace

StopSignals::StopSignals() {
  AT_CHECK(!g_installed, "StopSignals: the handlers are already installed");
  g_received = 0;
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
  sigaction(SIGTERM, &g_previous_term, nullptr);
  sigaction(SIGUSR1, &g_previous_usr1, nullptr);
  g_installed = false;
}

int StopSignals::received() {
  return g_received;
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
