#include "autotrain/core/crash_report.hpp"

#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>

namespace autotrain {
namespace {

constexpr std::array<int, 4> kSignals = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
std::array<struct sigaction, kSignals.size()> g_previous{};
std::atomic<int> g_rank{0};
std::array<char, 256> g_host{};
bool g_prepared = false;
bool g_on_alternate_stack = false;
// The handlers run here, so that a stack overflow is reported too.
alignas(16) std::array<char, 64 * 1024> g_alternate_stack{};

// One line of the report, built without allocating and written with write(2).
class Line {
 public:
  Line& text(const char* text) {
    while (*text != '\0' && used_ < buffer_.size() - 1) buffer_[used_++] = *text++;
    return *this;
  }
  Line& hex(uintptr_t value) {
    std::array<char, 19> digits{};
    size_t at = digits.size() - 1;  // digits[at] stays '\0'
    do {
      digits[--at] = "0123456789abcdef"[value & 15];
      value >>= 4;
    } while (value != 0);
    return text("0x").text(digits.data() + at);
  }
  Line& number(long value) {
    std::array<char, 24> digits{};
    size_t at = digits.size() - 1;
    const bool negative = value < 0;
    unsigned long magnitude = negative ? 0UL - static_cast<unsigned long>(value) : value;
    do {
      digits[--at] = static_cast<char>('0' + magnitude % 10);
      magnitude /= 10;
    } while (magnitude != 0);
    if (negative) digits[--at] = '-';
    return text(digits.data() + at);
  }
  void write_out() {
    buffer_[used_++] = '\n';
    for (size_t done = 0; done < used_;) {
      const ssize_t wrote = ::write(STDERR_FILENO, buffer_.data() + done, used_ - done);
      if (wrote <= 0) break;
      done += static_cast<size_t>(wrote);
    }
    used_ = 0;
  }

 private:
  std::array<char, 512> buffer_{};
  size_t used_ = 0;
};

const char* signal_text(int signal_number) {
  switch (signal_number) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    default:
      return "a fatal signal";
  }
}

const char* cause_text(int signal_number, int code) {
  if (code == SI_USER || code == SI_TKILL) return "sent";
  switch (signal_number) {
    case SIGSEGV:
      return code == SEGV_MAPERR ? "address not mapped" : "no permission";
    case SIGBUS:
      return code == BUS_ADRALN ? "misaligned address" : "bad memory access";
    case SIGFPE:
      return code == FPE_INTDIV ? "integer division by zero" : "arithmetic error";
    case SIGILL:
      return "illegal instruction";
    default:
      return "";
  }
}

// "libgloo.so.0+0x1a2b (symbol+0x10)", the object's offset being what addr2line -e takes.
bool describe(Line& line, uintptr_t address) {
  Dl_info info{};
  if (address == 0 || dladdr(reinterpret_cast<void*>(address), &info) == 0 ||
      info.dli_fname == nullptr) {
    line.text("in no loaded object");
    return false;
  }
  const char* slash = std::strrchr(info.dli_fname, '/');
  line.text(slash != nullptr ? slash + 1 : info.dli_fname)
      .text("+")
      .hex(address - reinterpret_cast<uintptr_t>(info.dli_fbase));
  if (info.dli_sname != nullptr) {
    line.text(" (").text(info.dli_sname).text("+");
    line.hex(address - reinterpret_cast<uintptr_t>(info.dli_saddr)).text(")");
  }
  return true;
}

// The faulting instruction, and where the last call came from: at a fault on a call's target
// the return address is at the stack pointer (x86-64) or in the link register (AArch64).
struct Registers {
  uintptr_t pc = 0;
  uintptr_t caller = 0;
};
Registers registers(const void* context) {
  Registers found;
  const auto* state = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
  found.pc = static_cast<uintptr_t>(state->uc_mcontext.gregs[REG_RIP]);
  const auto* stack = reinterpret_cast<const uintptr_t*>(state->uc_mcontext.gregs[REG_RSP]);
  Dl_info info{};
  // Read only when the instruction is in no object: the stack is sound then (no overflow).
  if (stack != nullptr && (found.pc == 0 || dladdr(reinterpret_cast<void*>(found.pc), &info) == 0))
    found.caller = *stack;
#elif defined(__aarch64__)
  found.pc = static_cast<uintptr_t>(state->uc_mcontext.pc);
  found.caller = static_cast<uintptr_t>(state->uc_mcontext.regs[30]);
#else
  (void)state;
#endif
  return found;
}

// "[rank 3] ", or "[rank ?] " before MPI_Init has said.
Line& begin(Line& line) {
  const int rank = g_rank.load();
  line.text("[rank ");
  if (rank >= 0) {
    line.number(rank);
  } else {
    line.text("?");
  }
  return line.text("] ");
}

void report(int signal_number, const siginfo_t* info, const void* context) {
  Line line;
  begin(line).text("fatal: ").text(signal_text(signal_number)).text(" (");
  line.text(cause_text(signal_number, info->si_code)).text(") on ").text(g_host.data());
  line.text(", pid ").number(getpid());
  if (info->si_code == SI_USER || info->si_code == SI_TKILL) {
    line.text(", from pid ").number(info->si_pid).write_out();
  } else {
    line.text(", at address ").hex(reinterpret_cast<uintptr_t>(info->si_addr)).write_out();
  }
  const Registers at = registers(context);
  begin(line).text("  instruction ").hex(at.pc).text(" ");
  if (!describe(line, at.pc) && at.caller != 0) {
    line.text("; called from ").hex(at.caller).text(" ");
    describe(line, at.caller);
  }
  line.write_out();
  begin(line).text("  backtrace (this handler's frames first):").write_out();
  std::array<void*, 64> frames{};
  backtrace_symbols_fd(frames.data(), backtrace(frames.data(), frames.size()), STDERR_FILENO);
}

size_t index_of(int signal_number) {
  for (size_t i = 0; i < kSignals.size(); ++i) {
    if (kSignals[i] == signal_number) return i;
  }
  return 0;
}

// The default action, which ends the process with the signal (and a core where enabled).
void end_with_default(int signal_number) {
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  sigaction(signal_number, &default_action, nullptr);
  // Pending until the handler returns; a fault also repeats when its instruction runs again.
  raise(signal_number);
}

// Hands the signal on to the handler installed before ours (Open MPI's report and abort), else
// to the default action.
void pass_on(int signal_number, siginfo_t* info, void* context) {
  const struct sigaction& previous = g_previous[index_of(signal_number)];
  if ((previous.sa_flags & SA_SIGINFO) != 0 && previous.sa_sigaction != nullptr) {
    previous.sa_sigaction(signal_number, info, context);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN &&
             previous.sa_handler != nullptr) {
    previous.sa_handler(signal_number);
  } else {
    end_with_default(signal_number);
  }
}

// A second entry (the previous handler returned and the fault repeated, or another thread
// faulted) goes to the default action: the process ends, it never loops.
extern "C" void on_fatal_signal(int signal_number, siginfo_t* info, void* context) {
  static std::atomic<bool> reported{false};
  if (reported.exchange(true)) {
    end_with_default(signal_number);
    return;
  }
  report(signal_number, info, context);
  pass_on(signal_number, info, context);
}

}  // namespace

void install_crash_report(int rank) {
  g_rank.store(rank);
  if (!g_prepared) {
    g_prepared = true;
    if (gethostname(g_host.data(), g_host.size() - 1) != 0) std::strcpy(g_host.data(), "?");
    // backtrace() loads the unwinder on its first call, which allocates: not in a handler.
    std::array<void*, 4> warm_up{};
    backtrace(warm_up.data(), warm_up.size());
    stack_t alternate{};
    alternate.ss_sp = g_alternate_stack.data();
    alternate.ss_size = g_alternate_stack.size();
    g_on_alternate_stack = sigaltstack(&alternate, nullptr) == 0;
  }
  struct sigaction action {};
  action.sa_sigaction = on_fatal_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_SIGINFO | (g_on_alternate_stack ? SA_ONSTACK : 0);
  for (size_t i = 0; i < kSignals.size(); ++i) {
    struct sigaction current {};
    if (sigaction(kSignals[i], nullptr, &current) != 0) continue;
    const bool ours =
        (current.sa_flags & SA_SIGINFO) != 0 && current.sa_sigaction == on_fatal_signal;
    // A handler installed since (Open MPI's, in MPI_Init) runs after the report.
    if (!ours) sigaction(kSignals[i], &action, &g_previous[i]);
  }
}

}  // namespace autotrain
