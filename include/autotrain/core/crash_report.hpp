#pragma once
// What a rank prints when it dies of a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL): the rank,
// its host, the signal and its cause, the faulting address and instruction with the object and
// symbol each falls in, the caller when the instruction is not in any object (a call through a
// null or stale function pointer, where unwinders give up), then the backtrace. One report, on
// standard error, written with write(2); then the handler that was there before runs (Open MPI's
// own report and abort), or the default action ends the process with the signal.
namespace autotrain {

// Installs the handlers where they are not ours already, keeping the ones they replace to run
// after the report. `rank`: this process's rank in MPI_COMM_WORLD, or -1 before MPI_Init. Called
// before MPI_Init (a crash inside it is reported too) and again after it, where Open MPI may have
// put its own handler in place.
void install_crash_report(int rank);

}  // namespace autotrain
