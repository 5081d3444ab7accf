#include "autotrain/core/crash_report.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

namespace autotrain::crash_report_test {
namespace {

using Function = void (*)();

// A call through a null function pointer: the instruction is at address 0, in no object, and
// unwinders stop there; the report names the caller from the return address instead.
[[gnu::noinline]] void call_through(Function function) {
  function();
}

TEST(CrashReport, NamesTheCallerOfANullFunctionPointerThenDiesOfTheSignal) {
  EXPECT_EXIT(
      {
        install_crash_report(7);
        volatile Function null_function = nullptr;
        call_through(null_function);
      },
      testing::KilledBySignal(SIGSEGV),
      "\\[rank 7\\] fatal: SIGSEGV \\(address not mapped\\) on [^,]+, pid [0-9]+, at address 0x0\n"
      "\\[rank 7\\]   instruction 0x0 in no loaded object; called from 0x[0-9a-f]+ "
      "test_core\\+0x[0-9a-f]+\n"
      "\\[rank 7\\]   backtrace");
}

TEST(CrashReport, NamesTheObjectOfAFaultingInstruction) {
  EXPECT_EXIT(
      {
        install_crash_report(0);
        volatile int* volatile nowhere = reinterpret_cast<int*>(16);
        *nowhere = 1;
      },
      testing::KilledBySignal(SIGSEGV),
      "\\[rank 0\\] fatal: SIGSEGV \\(address not mapped\\) .* at address 0x10\n"
      "\\[rank 0\\]   instruction 0x[0-9a-f]+ test_core\\+0x[0-9a-f]+\n");
}

// A handler installed over ours (Open MPI's, in MPI_Init) is put behind ours by the second call,
// and runs after the report.
extern "C" void previous_handler(int, siginfo_t*, void*) {
  const char text[] = "the previous handler ran\n";
  (void)!write(STDERR_FILENO, text, sizeof(text) - 1);
  _exit(42);
}

TEST(CrashReport, HandsTheSignalToTheHandlerInstalledBefore) {
  EXPECT_EXIT(
      {
        install_crash_report(-1);
        struct sigaction action {};
        action.sa_sigaction = previous_handler;
        action.sa_flags = SA_SIGINFO;
        sigemptyset(&action.sa_mask);
        sigaction(SIGBUS, &action, nullptr);
        install_crash_report(3);
        raise(SIGBUS);
      },
      testing::ExitedWithCode(42),
      "\\[rank 3\\] fatal: SIGBUS \\(sent\\) on [^,]+, pid [0-9]+, from pid [0-9]+\n(.|\n)*the "
      "previous handler ran");
}

}  // namespace
}  // namespace autotrain::crash_report_test
