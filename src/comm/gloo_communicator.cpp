// The Gloo backend: Gloo's TCP transport and algorithms on host buffers.
//
// Setup: Debian's Gloo has no MPI context, so the rendezvous runs over MPI: MpiStore turns the
// Store's set() into an MPI allgather of every rank's (key, value), after which get()/wait() are
// local look-ups; gloo::rendezvous::Context::connectFullMesh then opens the TCP pairs.
//
// Execution: a Gloo context is not thread-safe and its collectives block, so every collective
// runs on one worker thread, in issue order (which is also the order all ranks agree on); an
// async handle waits on that task's future.
//
// bf16/fp16: converted to an fp32 staging buffer, reduced in fp32 by Gloo, converted back once
// (one rounding per element, unlike the MPI backend which rounds every partial sum).
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <mpi.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/comm/gloo_address.hpp"
#include "autotrain/core/deadline.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/watchdog.hpp"
#include "autotrain/launch/launcher_env.hpp"
#include "gloo_reduce_scatter.hpp"
#include "internal.hpp"

namespace autotrain::comm_detail {
namespace {

// A rendezvous Store whose key exchange is an MPI collective: every set() is called by all ranks
// together (connectFullMesh sets exactly one key per rank) and publishes all ranks' keys.
class MpiStore final : public gloo::rendezvous::Store {
 public:
  explicit MpiStore(MPI_Comm comm) : comm_(comm) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    // Blob: key bytes, '\0', value bytes.
    std::vector<char> blob(key.begin(), key.end());
    blob.push_back('\0');
    blob.insert(blob.end(), data.begin(), data.end());
    int size = 0;
    AT_MPI_CHECK(MPI_Comm_size(comm_, &size));
    const int length = checked_int_count(blob.size(), "gloo rendezvous");
    std::vector<int> lengths(static_cast<size_t>(size));
    allgather_or_abort(&length, 1, MPI_INT, lengths.data(), comm_, "gloo rendezvous");
    std::vector<int> offsets(static_cast<size_t>(size));
    size_t total = 0;
    for (size_t r = 0; r < lengths.size(); ++r) {
      offsets[r] = checked_int_count(total, "gloo rendezvous");
      total += static_cast<size_t>(lengths[r]);
    }
    std::vector<char> all(total);
    allgatherv_or_abort(blob.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                        comm_, "gloo rendezvous");
    for (size_t r = 0; r < lengths.size(); ++r) {
      const char* begin = all.data() + offsets[r];
      const char* end = begin + lengths[r];
      const char* separator = std::find(begin, end, '\0');
      AT_CHECK(separator != end, "gloo rendezvous: malformed entry from rank ", r);
      values_[std::string(begin, separator)] = std::vector<char>(separator + 1, end);
    }
  }

  std::vector<char> get(const std::string& key) override {
    wait({key});
    return values_.at(key);
  }

  void wait(const std::vector<std::string>& keys) override {
    for (const auto& key : keys) {
      AT_CHECK(values_.count(key) != 0, "gloo rendezvous: no rank published key '", key,
               "'; every rank of the communicator must create the gloo communicator together");
    }
  }

  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds&) override {
    wait(keys);  // the exchange in set() is synchronous: a key is there or never will be
  }

 private:
  MPI_Comm comm_;
  std::map<std::string, std::vector<char>> values_;
};

// Runs tasks one at a time, in submission order, on its own thread.
class OrderedWorker {
 public:
  OrderedWorker() : thread_([this] { run(); }) {}
  ~OrderedWorker() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();  // drains the queue first: a submitted collective always runs
  }
  OrderedWorker(const OrderedWorker&) = delete;
  OrderedWorker& operator=(const OrderedWorker&) = delete;

  std::future<void> submit(std::function<void()> work) {
    std::packaged_task<void()> task(std::move(work));
    std::future<void> done = task.get_future();
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(task));
    }
    wake_.notify_one();
    return done;
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    while (true) {
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      std::packaged_task<void()> task = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      task();  // exceptions land in the task's future
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts after the queue exists
};

class GlooPending final : public PendingCollective {
 public:
  GlooPending(Watchdog& watchdog, uint64_t sequence, std::future<void> done)
      : watchdog_(watchdog), sequence_(sequence), done_(std::move(done)) {}
  ~GlooPending() override {
    if (!ended_) watchdog_.end(sequence_);
  }
  void wait() override {
    ended_ = true;
    try {
      done_.get();
    } catch (...) {
      watchdog_.end(sequence_);
      throw;
    }
    watchdog_.end(sequence_);
  }

 private:
  Watchdog& watchdog_;
  uint64_t sequence_;
  std::future<void> done_;
  bool ended_ = false;
};

template <typename T>
ReduceFunction reduce_function(ReduceOp op) {
  return op == ReduceOp::max ? static_cast<ReduceFunction>(&gloo::max<T>)
                             : static_cast<ReduceFunction>(&gloo::sum<T>);
}

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(MPI_Comm parent, const CommOptions& options)
      : comm_(OwnedComm::duplicate(parent, "communicator set-up (MPI_Comm_dup)")),
        rank_(comm_rank(comm_.get())),
        size_(comm_size(comm_.get())),
        watchdog_("gloo", rank_, options.timeout_seconds, abort_job_on_collective_timeout) {
    // The address first, agreed by every rank, so no rank waits in the rendezvous for one
    // that could not choose (gloo_address.hpp).
    const GlooPeers peers = gloo_peers(comm_.get());
    GlooAddress address;
    std::string failure;
    try {
      address = choose_gloo_address(peers, process_environment());
    } catch (const std::exception& error) {
      failure = cat(error.what(), " (rank ", rank_, ")");
    }
    agree_or_throw_local(failure);
    try {
      gloo::transport::tcp::attr attr;
      attr.hostname = address.address;
      auto device = gloo::transport::tcp::CreateDevice(attr);
      auto context = std::make_shared<gloo::rendezvous::Context>(rank_, size_);
      // Gloo's own timeout is only a backstop: the watchdog fires first and names the collective.
      const double backstop_seconds = options.timeout_seconds * 1.5 + 5.0;
      context->setTimeout(std::chrono::milliseconds(static_cast<int64_t>(backstop_seconds * 1000)));
      MpiStore store(comm_.get());
      context->connectFullMesh(store, device);
      context_ = std::move(context);
    } catch (const std::exception& error) {
      failure = cat("gloo: could not connect the full mesh from ", address.address, " (",
                    address.how, ") on rank ", rank_, ": ", error.what(),
                    " (set GLOO_SOCKET_IFNAME to an interface the other nodes reach; see "
                    "docs/communication.md)");
    }
    agree_or_throw_local(failure);
  }

  ~GlooCommunicator() override = default;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view name() const override { return "gloo"; }

  CommHandle allreduce_async(void* data, size_t count, DType dtype, ReduceOp op) override {
    check_reduction("gloo", "allreduce", dtype, op);
    return submit("allreduce", count * dtype_size(dtype),
                  [=, this](uint32_t tag) { run_allreduce(data, count, dtype, op, tag); });
  }

  CommHandle reduce_scatter_async(const void* input, void* output, size_t part, DType dtype,
                                  ReduceOp op) override {
    check_reduction("gloo", "reduce_scatter", dtype, op);
    checked_int_count(part * static_cast<size_t>(size_), "reduce_scatter");
    return submit(
        "reduce_scatter", part * static_cast<size_t>(size_) * dtype_size(dtype),
        [=, this](uint32_t tag) { run_reduce_scatter(input, output, part, dtype, op, tag); });
  }

  CommHandle allgather_async(const void* input, void* output, size_t part, DType dtype) override {
    const size_t bytes = part * dtype_size(dtype);
    return submit("allgather", bytes * static_cast<size_t>(size_), [=, this](uint32_t tag) {
      if (bytes == 0) return;
      auto* out = static_cast<uint8_t*>(output);
      const auto* in = static_cast<const uint8_t*>(input);
      if (in == out + static_cast<size_t>(rank_) * bytes) {
        // Gloo copies input into output itself; an aliased input must be copied away first.
        std::memcpy(staging(bytes), in, bytes);
        in = static_cast<const uint8_t*>(staging(bytes));
      }
      gloo::AllgatherOptions options(context_);
      options.setInput(const_cast<uint8_t*>(in), bytes);
      options.setOutput(out, bytes * static_cast<size_t>(size_));
      options.setTag(tag);
      gloo::allgather(options);
    });
  }

  CommHandle broadcast_async(void* data, size_t count, DType dtype, int root) override {
    AT_CHECK(root >= 0 && root < size_, "broadcast: root ", root, " is not a rank of a ", size_,
             "-rank communicator");
    const size_t bytes = count * dtype_size(dtype);
    return submit("broadcast", bytes, [=, this](uint32_t tag) {
      if (bytes == 0) return;
      gloo::BroadcastOptions options(context_);
      options.setOutput(static_cast<uint8_t*>(data), bytes);
      options.setRoot(root);
      options.setTag(tag);
      gloo::broadcast(options);
    });
  }

  CommHandle barrier_async() override {
    return submit("barrier", 0, [this](uint32_t tag) {
      gloo::BarrierOptions options(context_);
      options.setTag(tag);
      gloo::barrier(options);
    });
  }

 private:
  void agree_or_throw_local(const std::string& failure) {
    agree_or_throw(failure.empty(), failure, comm_.get());
  }

  template <typename Work>
  CommHandle submit(std::string_view operation, size_t bytes, Work work) {
    const uint64_t sequence = watchdog_.begin(operation, bytes);
    // Every rank issues the same sequence, so the sequence number is a tag all ranks agree on;
    // distinct tags keep a fast rank's next collective apart from a slow rank's current one.
    const auto tag = static_cast<uint32_t>(sequence);
    // The entry ends when the collective completes, not when its handle is waited on: a gather
    // prefetched and never used must not count against comm_timeout.
    std::future<void> done = worker_.submit([=, this] {
      try {
        work(tag);
      } catch (const std::exception& error) {
        watchdog_.end(sequence);
        throw Error(cat("gloo ", operation, " #", sequence, " (", bytes, " bytes) failed on rank ",
                        rank_, ": ", error.what()));
      }
      watchdog_.end(sequence);
    });
    return CommHandle(std::make_unique<GlooPending>(watchdog_, sequence, std::move(done)));
  }

  // Worker-thread scratch; grows to the largest collective, then never allocates again.
  void* staging(size_t bytes) {
    if (staging_.size() < bytes) {
      staging_.resize(bytes);
    }
    return staging_.data();
  }

  template <typename T>
  void allreduce_typed(T* data, size_t count, ReduceOp op, uint32_t tag) {
    gloo::AllreduceOptions options(context_);
    options.setOutput(data, count);  // no input: in place
    options.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    options.setReduceFunction(reduce_function<T>(op));
    options.setTag(tag);
    gloo::allreduce(options);
    if constexpr (std::is_floating_point_v<T>) {
      if (op == ReduceOp::avg) divide_in_place(data, count, DType::fp32, size_);
    }
  }

  void run_allreduce(void* data, size_t count, DType dtype, ReduceOp op, uint32_t tag) {
    if (count == 0) return;
    switch (dtype) {
      case DType::fp32:
        return allreduce_typed(static_cast<float*>(data), count, op, tag);
      case DType::int32:
        return allreduce_typed(static_cast<int32_t*>(data), count, op, tag);
      case DType::int64:
        return allreduce_typed(static_cast<int64_t*>(data), count, op, tag);
      case DType::bf16:
      case DType::fp16: {
        auto* wide = static_cast<float*>(staging(count * sizeof(float)));
        widen(data, wide, count, dtype);
        allreduce_typed(wide, count, op, tag);
        narrow(wide, data, count, dtype);
        return;
      }
    }
  }

  // The input is copied (or widened to fp32) into staging, which the ring reduces in place;
  // this rank's part of staging is then the result.
  void run_reduce_scatter(const void* input, void* output, size_t part, DType dtype, ReduceOp op,
                          uint32_t tag) {
    const size_t total = part * static_cast<size_t>(size_);
    if (total == 0) return;
    const size_t offset = part * static_cast<size_t>(rank_);
    switch (dtype) {
      case DType::fp32:
      case DType::bf16:
      case DType::fp16: {
        auto* work = static_cast<float*>(staging(total * sizeof(float)));
        widen(input, work, total, dtype);
        ring_reduce_scatter(work, part, op, tag);
        if (op == ReduceOp::avg) divide_in_place(work + offset, part, DType::fp32, size_);
        narrow(work + offset, output, part, dtype);
        return;
      }
      case DType::int32:
        return reduce_scatter_integers<int32_t>(input, output, part, op, tag);
      case DType::int64:
        return reduce_scatter_integers<int64_t>(input, output, part, op, tag);
    }
  }

  template <typename T>
  void reduce_scatter_integers(const void* input, void* output, size_t part, ReduceOp op,
                               uint32_t tag) {
    const size_t total = part * static_cast<size_t>(size_);
    auto* work = static_cast<T*>(staging(total * sizeof(T)));
    std::memcpy(work, input, total * sizeof(T));
    ring_reduce_scatter(work, part, op, tag);
    std::memcpy(output, work + part * static_cast<size_t>(rank_), part * sizeof(T));
  }

  template <typename T>
  void ring_reduce_scatter(T* work, size_t part, ReduceOp op, uint32_t tag) {
    ring_.run(*context_, reinterpret_cast<std::byte*>(work), part, sizeof(T),
              reduce_function<T>(op), tag);
  }

  OwnedComm comm_;
  int rank_;
  int size_;
  std::shared_ptr<gloo::Context> context_;
  std::vector<std::byte> staging_;  // worker thread only
  RingReduceScatter ring_;          // worker thread only
  Watchdog watchdog_;
  OrderedWorker worker_;  // last: destroyed first, so queued collectives finish while all is alive
};

}  // namespace

std::unique_ptr<Communicator> make_gloo_communicator(MPI_Comm comm, const CommOptions& options) {
  return std::make_unique<GlooCommunicator>(comm, options);
}

}  // namespace autotrain::comm_detail
