#pragma once
// A file read and written in large transfers, several in flight at once, so that the CPU works
// on one buffer while the disk fills or drains others (nvme_state.hpp's pipeline). The engine is
// io_uring (liburing) where the kernel allows it; where io_uring_queue_init is refused (an old
// kernel, a container's seccomp filter, kernel.io_uring_disabled), two threads doing
// pread/pwrite take its place. docs/benchmarks.md ("NVMe offload I/O") says why io_uring and
// not libaio.
//
// Invariant: a buffer handed to read() or write() belongs to the kernel until its ticket is
// waited on (or drain() returns); the destructor drains, so a buffer must outlive its file.
// A short transfer (the kernel moves at most 2 GiB - 4 KiB per call) is resubmitted for the rest
// until it completes, fails (error) or meets the end of the file (done < requested, error 0).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace autotrain::zero {

enum class IoEngine { automatic, io_uring, threads };

// How one read or write ended.
struct Transfer {
  bool write = false;
  std::uint64_t offset = 0;
  std::size_t requested = 0;
  std::size_t done = 0;  // bytes moved before it ended
  int error = 0;         // errno; 0 with done < requested: the file ended (a short read)
  bool ok() const { return done == requested; }
};

// The submissions and completions of one engine (async_file.cpp has io_uring's and the
// threads').
class IoQueue {
 public:
  struct Request {
    bool write = false;
    std::byte* data = nullptr;
    std::size_t bytes = 0;
    std::uint64_t offset = 0;
    std::size_t slot = 0;  // comes back with the completion
  };
  struct Completion {
    std::size_t slot = 0;
    long long result = 0;  // bytes moved, or -errno
  };
  virtual ~IoQueue() = default;
  // 0, or -errno when the request was refused (it will not complete).
  virtual int submit(const Request& request) = 0;
  virtual Completion wait_one() = 0;  // blocks until a submitted request completes
};

class AsyncFile {
 public:
  using Ticket = std::uint64_t;

  // Transfers on `fd` (not owned; it must stay open while this lives), at most `depth` in
  // flight. `automatic` tries io_uring first and falls back to threads (engine_name() says why).
  AsyncFile(int fd, IoEngine engine, std::size_t depth);
  // On a queue of the caller's (the benchmark's libaio), called `engine_name`.
  AsyncFile(std::unique_ptr<IoQueue> queue, std::string engine_name, std::size_t depth);
  ~AsyncFile();
  AsyncFile(const AsyncFile&) = delete;
  AsyncFile& operator=(const AsyncFile&) = delete;

  // Start a transfer; at most `depth` may be in flight (an Error otherwise).
  Ticket read(std::span<std::byte> into, std::uint64_t offset);
  Ticket write(std::span<const std::byte> from, std::uint64_t offset);
  // Blocks until the transfer is over and returns how it ended (never throws for an I/O error).
  Transfer wait(Ticket ticket);
  // Waits for every transfer in flight; their outcomes are dropped (the unwinding path).
  void drain() noexcept;
  std::size_t in_flight() const;

  // "io_uring", or "pread/pwrite threads (io_uring unavailable: <reason>)".
  const std::string& engine_name() const { return engine_name_; }

 private:
  struct Slot {
    bool busy = false;
    bool complete = false;
    Ticket ticket = 0;
    std::byte* data = nullptr;
    Transfer outcome;
  };
  Ticket start(bool write, std::byte* data, std::size_t bytes, std::uint64_t offset);
  void submit_rest(std::size_t slot);
  void reap_one();

  std::unique_ptr<IoQueue> queue_;
  std::string engine_name_;
  std::vector<Slot> slots_;
  Ticket next_ticket_ = 1;
};

// The engines, for the tests and the benchmark: nullptr where io_uring cannot be set up, with
// the reason in `why_not`.
std::unique_ptr<IoQueue> make_io_uring_queue(int fd, std::size_t depth, std::string& why_not);
std::unique_ptr<IoQueue> make_thread_queue(int fd, int threads);

}  // namespace autotrain::zero
