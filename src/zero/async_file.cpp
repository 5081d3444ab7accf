// The engines of AsyncFile (async_file.hpp): io_uring through liburing, and the fallback of two
// threads doing pread/pwrite; and the bookkeeping of the transfers in flight on either.
#include "async_file.hpp"

#include <liburing.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"

namespace autotrain::zero {
namespace {

// Linux moves at most this much in one read or write (and io_uring's length is 32 bits).
constexpr std::size_t kMaxTransfer = 0x7ffff000;

class IoUringQueue final : public IoQueue {
 public:
  explicit IoUringQueue(int fd) : fd_(fd) {}
  ~IoUringQueue() override {
    if (ready_) io_uring_queue_exit(&ring_);
  }

  // The ring in place (liburing's struct is not copied once set up); an empty text when ready.
  std::string set_up(std::size_t depth) {
    const int status = io_uring_queue_init(static_cast<unsigned>(depth), &ring_, 0);
    if (status < 0) return cat("io_uring_queue_init: ", std::strerror(-status));
    ready_ = true;
    // IORING_OP_READ and IORING_OP_WRITE came with Linux 5.6; io_uring itself with 5.1.
    io_uring_probe* probe = io_uring_get_probe_ring(&ring_);
    const bool has_read_write = probe != nullptr &&
                                io_uring_opcode_supported(probe, IORING_OP_READ) &&
                                io_uring_opcode_supported(probe, IORING_OP_WRITE);
    if (probe != nullptr) io_uring_free_probe(probe);
    if (!has_read_write) {
      return "the kernel's io_uring has no read and write operations (Linux 5.6 or newer has)";
    }
    return {};
  }

  int submit(const Request& request) override {
    if (broken_ != 0) return broken_;
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) return -EBUSY;  // never: the ring has an entry per slot
    const auto bytes = static_cast<unsigned>(request.bytes);
    if (request.write) {
      io_uring_prep_write(sqe, fd_, request.data, bytes, request.offset);
    } else {
      io_uring_prep_read(sqe, fd_, request.data, bytes, request.offset);
    }
    sqe->user_data = request.slot;
    int submitted = 0;
    do {
      submitted = io_uring_submit(&ring_);
    } while (submitted == -EINTR);
    // A refused entry stays in the submission ring, and any later submit would send it along
    // with a buffer nobody waits for: the ring takes nothing more.
    if (submitted < 0) broken_ = submitted;
    return std::min(submitted, 0);
  }

  Completion wait_one() override {
    io_uring_cqe* cqe = nullptr;
    int status = 0;
    do {
      status = io_uring_wait_cqe(&ring_, &cqe);
    } while (status == -EINTR || status == -EAGAIN);
    AT_CHECK(status == 0, "io_uring_wait_cqe: ", std::strerror(-status));
    const Completion completion{static_cast<std::size_t>(cqe->user_data), cqe->res};
    io_uring_cqe_seen(&ring_, cqe);
    return completion;
  }

 private:
  int fd_;
  io_uring ring_{};
  bool ready_ = false;
  int broken_ = 0;  // -errno of a refused submission
};

// pread/pwrite on worker threads: requests in submission order, completions as they end.
class ThreadQueue final : public IoQueue {
 public:
  ThreadQueue(int fd, int threads) : fd_(fd) {
    for (int t = 0; t < threads; ++t) workers_.emplace_back([this] { work(); });
  }
  ~ThreadQueue() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    requests_ready_.notify_all();
    for (std::thread& worker : workers_) worker.join();
  }

  int submit(const Request& request) override {
    {
      std::lock_guard lock(mutex_);
      requests_.push_back(request);
    }
    requests_ready_.notify_one();
    return 0;
  }

  Completion wait_one() override {
    std::unique_lock lock(mutex_);
    completions_ready_.wait(lock, [this] { return !completions_.empty(); });
    const Completion completion = completions_.front();
    completions_.pop_front();
    return completion;
  }

 private:
  void work() {
    for (;;) {
      Request request;
      {
        std::unique_lock lock(mutex_);
        requests_ready_.wait(lock, [this] { return stopping_ || !requests_.empty(); });
        if (requests_.empty()) return;
        request = requests_.front();
        requests_.pop_front();
      }
      const Completion completion{request.slot, transfer(request)};
      {
        std::lock_guard lock(mutex_);
        completions_.push_back(completion);
      }
      completions_ready_.notify_one();
    }
  }

  long long transfer(const Request& request) const {
    const auto offset = static_cast<off_t>(request.offset);
    for (;;) {
      const ssize_t moved = request.write ? ::pwrite(fd_, request.data, request.bytes, offset)
                                          : ::pread(fd_, request.data, request.bytes, offset);
      if (moved >= 0) return moved;
      if (errno != EINTR) return -errno;
    }
  }

  int fd_;
  std::mutex mutex_;
  std::condition_variable requests_ready_, completions_ready_;
  std::deque<Request> requests_;
  std::deque<Completion> completions_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace

std::unique_ptr<IoQueue> make_io_uring_queue(int fd, std::size_t depth, std::string& why_not) {
  auto queue = std::make_unique<IoUringQueue>(fd);
  why_not = queue->set_up(depth);
  if (!why_not.empty()) return nullptr;
  return queue;
}

std::unique_ptr<IoQueue> make_thread_queue(int fd, int threads) {
  return std::make_unique<ThreadQueue>(fd, threads);
}

AsyncFile::AsyncFile(int fd, IoEngine engine, std::size_t depth) : slots_(depth) {
  AT_CHECK(depth > 0, "AsyncFile: at least one transfer must be allowed in flight");
  if (engine != IoEngine::threads) {
    std::string why_not;
    queue_ = make_io_uring_queue(fd, depth, why_not);
    if (queue_ != nullptr) {
      engine_name_ = "io_uring";
    } else if (engine == IoEngine::io_uring) {
      throw Error(cat("io_uring is not available here: ", why_not));
    } else {
      engine_name_ = cat("pread/pwrite threads (io_uring unavailable: ", why_not, ")");
    }
  }
  if (queue_ == nullptr) {
    // Two threads: the pipeline's read of the next block and write of the last one overlap.
    queue_ = make_thread_queue(fd, 2);
    if (engine_name_.empty()) engine_name_ = "pread/pwrite threads";
  }
}

AsyncFile::AsyncFile(std::unique_ptr<IoQueue> queue, std::string engine_name, std::size_t depth)
    : queue_(std::move(queue)), engine_name_(std::move(engine_name)), slots_(depth) {
  AT_CHECK(depth > 0, "AsyncFile: at least one transfer must be allowed in flight");
}

AsyncFile::~AsyncFile() {
  drain();
}

AsyncFile::Ticket AsyncFile::read(std::span<std::byte> into, std::uint64_t offset) {
  return start(false, into.data(), into.size(), offset);
}

AsyncFile::Ticket AsyncFile::write(std::span<const std::byte> from, std::uint64_t offset) {
  // The kernel only reads this buffer; IoQueue::Request has one pointer type for both ways.
  return start(true, const_cast<std::byte*>(from.data()), from.size(), offset);
}

AsyncFile::Ticket AsyncFile::start(bool write, std::byte* data, std::size_t bytes,
                                   std::uint64_t offset) {
  const auto free_slot =
      std::find_if(slots_.begin(), slots_.end(), [](const Slot& s) { return !s.busy; });
  AT_CHECK(free_slot != slots_.end(), "AsyncFile: more than ", slots_.size(),
           " transfers in flight");
  Slot& slot = *free_slot;
  slot = Slot{true, false, next_ticket_++, data, Transfer{write, offset, bytes, 0, 0}};
  if (bytes == 0) {
    slot.complete = true;
  } else {
    submit_rest(static_cast<std::size_t>(free_slot - slots_.begin()));
  }
  return slot.ticket;
}

// Submits what is left of the slot's transfer (at most kMaxTransfer of it); a refused
// submission ends the transfer with its error.
void AsyncFile::submit_rest(std::size_t index) {
  Slot& slot = slots_[index];
  Transfer& t = slot.outcome;
  const IoQueue::Request request{t.write, slot.data + t.done,
                                 std::min(t.requested - t.done, kMaxTransfer), t.offset + t.done,
                                 index};
  const int status = queue_->submit(request);
  if (status < 0) {
    t.error = -status;
    slot.complete = true;
  }
}

void AsyncFile::reap_one() {
  const IoQueue::Completion completion = queue_->wait_one();
  Slot& slot = slots_[completion.slot];
  Transfer& t = slot.outcome;
  if (completion.result < 0) {
    t.error = static_cast<int>(-completion.result);
    slot.complete = true;
  } else if (completion.result == 0) {
    slot.complete = true;  // the end of the file
  } else {
    t.done += static_cast<std::size_t>(completion.result);
    if (t.done < t.requested) {
      submit_rest(completion.slot);
    } else {
      slot.complete = true;
    }
  }
}

Transfer AsyncFile::wait(Ticket ticket) {
  const auto found = std::find_if(slots_.begin(), slots_.end(),
                                  [ticket](const Slot& s) { return s.busy && s.ticket == ticket; });
  AT_CHECK(found != slots_.end(), "AsyncFile: no transfer ", ticket, " in flight");
  while (!found->complete) reap_one();
  const Transfer outcome = found->outcome;
  *found = Slot{};
  return outcome;
}

void AsyncFile::drain() noexcept {
  try {
    for (Slot& slot : slots_) {
      while (slot.busy && !slot.complete) reap_one();
      slot = Slot{};
    }
  } catch (const std::exception& e) {
    // The kernel may still be writing into buffers about to be freed: stopping is the only
    // safe way out.
    log::error("asynchronous file I/O: cannot wait for the transfers in flight: ", e.what());
    std::abort();
  }
}

std::size_t AsyncFile::in_flight() const {
  return static_cast<std::size_t>(
      std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.busy; }));
}

}  // namespace autotrain::zero
