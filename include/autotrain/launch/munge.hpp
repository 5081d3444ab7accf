#pragma once
// munge, as MPI's start-up meets it: PMIx's munge security plugin (Open MPI's mpirun, its
// singletons, Slurm's srun --mpi=pmix) connects to munged's socket first. With munged running
// it answers; without munge installed the socket is absent and the plugin steps aside at once;
// but where the socket file is left behind with no munged (a stopped or crashed daemon), every
// connect is refused and the plugin retries for about 2 s in every MPI process that starts
// (measured: an MPI hello 2.7 s against 0.4 s). `autotrain doctor` reports it.
#include <string>

namespace autotrain {

// munge's socket on Debian, Ubuntu and RHEL (munged --socket's default).
inline constexpr const char* kMungeSocket = "/run/munge/munge.socket.2";

enum class SocketState { absent, answers, refuses };

// Whether a Unix stream socket at `path` accepts a connection (closed at once), is refused
// (`why`: the error), or is not there.
SocketState probe_unix_socket(const std::string& path, std::string* why = nullptr);

}  // namespace autotrain
