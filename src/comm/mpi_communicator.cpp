// The MPI backend: blocking MPI collectives on host buffers, issued in order by one
// communication thread per communicator, over a duplicate of the caller's communicator. bf16/fp16
// have no MPI type: they travel as MPI_UINT16_T with our own commutative MPI_Ops that add (or
// compare) in fp32 and round each partial result to 16 bits.
#include <mpi.h>

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <type_traits>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/watchdog.hpp"
#include "internal.hpp"

namespace autotrain::comm_detail {
namespace {

// MPI_Op_create on construction, MPI_Op_free on destruction.
class UserOp {
 public:
  explicit UserOp(MPI_User_function* function) { AT_MPI_CHECK(MPI_Op_create(function, 1, &op_)); }
  ~UserOp() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Op_free(&op_);
  }
  UserOp(const UserOp&) = delete;
  UserOp& operator=(const UserOp&) = delete;
  MPI_Op get() const { return op_; }

 private:
  MPI_Op op_ = MPI_OP_NULL;
};

// inout[i] = combine(in[i], inout[i]) in fp32, for 16-bit floats stored as uint16_t.
template <float (*to_float)(uint16_t), uint16_t (*from_float)(float), bool is_max>
void reduce_16bit(void* in, void* inout, int* length, MPI_Datatype*) {
  std::span source(static_cast<const uint16_t*>(in), static_cast<size_t>(*length));
  std::span target(static_cast<uint16_t*>(inout), static_cast<size_t>(*length));
  for (size_t i = 0; i < target.size(); ++i) {
    const float a = to_float(source[i]);
    const float b = to_float(target[i]);
    target[i] = from_float(is_max ? (a > b ? a : b) : a + b);
  }
}

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::fp32:
      return MPI_FLOAT;
    case DType::bf16:
      return MPI_UINT16_T;
    case DType::fp16:
      return MPI_UINT16_T;
    case DType::int32:
      return MPI_INT32_T;
    case DType::int64:
      return MPI_INT64_T;
  }
  return MPI_DATATYPE_NULL;
}

class MpiCommunicator;

// One collective as the communication thread runs it: the arguments of one blocking MPI call,
// and its completion. Lives in the handle; the queue only points at it (a handle waits before
// it is destroyed, so the pointer never outlives the call).
class MpiPending final : public PendingCollective {
 public:
  enum class Kind { allreduce, reduce_scatter, allgather, broadcast, barrier };
  struct Call {
    Kind kind = Kind::barrier;
    const void* input = nullptr;  // reduce_scatter, allgather (nullptr: in place)
    void* output = nullptr;       // the buffer the result lands in
    size_t count = 0;             // elements (per rank's part for reduce_scatter/allgather)
    DType dtype = DType::fp32;
    ReduceOp op = ReduceOp::sum;
    int root = 0;
  };

  MpiPending(MpiCommunicator& owner, uint64_t sequence, const Call& call)
      : owner_(owner), sequence_(sequence), call_(call) {}
  ~MpiPending() override;
  void wait() override;

  const Call& call() const { return call_; }
  uint64_t sequence() const { return sequence_; }
  // Communication thread only, under the owner's mutex.
  void finish(std::exception_ptr error) {
    error_ = std::move(error);
    done_ = true;
  }

 private:
  friend class MpiCommunicator;
  MpiCommunicator& owner_;
  uint64_t sequence_;
  Call call_;
  bool queued_ = false;
  bool done_ = false;  // guarded by the owner's mutex
  bool ended_ = false;
  std::exception_ptr error_;
};

// Collectives run as BLOCKING MPI calls, one at a time, in issue order (the order every rank
// agrees on), on one communication thread per communicator, or on the caller's thread when it
// waits on the next call while nothing runs. Why not MPI_I* collectives: Open MPI 4.1 runs those
// through libnbc, whose schedules are slower than the tuned blocking algorithms
// (docs/benchmarks.md), and they only progress inside MPI calls, so an async allreduce barely
// moved while the caller computed. A thread in a blocking call progresses on its own:
// async ops overlap compute for real. Needs MPI_THREAD_MULTIPLE (MpiSession asks for it): the
// caller may use other communicators meanwhile.
class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm parent, const CommOptions& options)
      : comm_(OwnedComm::duplicate(parent, "communicator set-up (MPI_Comm_dup)")),
        rank_(comm_rank(comm_.get())),
        size_(comm_size(comm_.get())),
        max_call_elements_(max_call_elements()),
        watchdog_("mpi", rank_, options.timeout_seconds, abort_job_on_collective_timeout) {
    queue_.reserve(256);
    thread_ = std::thread([this] { communicate(); });
  }

  ~MpiCommunicator() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    work_ready_.notify_all();
    thread_.join();  // drains the queue first: an issued collective always runs
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view name() const override { return "mpi"; }

  CommHandle allreduce_async(void* data, size_t count, DType dtype, ReduceOp op) override {
    return issue(allreduce_request(data, count, dtype, op));
  }
  CommHandle reduce_scatter_async(const void* input, void* output, size_t part, DType dtype,
                                  ReduceOp op) override {
    return issue(reduce_scatter_request(input, output, part, dtype, op));
  }
  CommHandle allgather_async(const void* input, void* output, size_t part, DType dtype) override {
    return issue(allgather_request(input, output, part, dtype));
  }
  CommHandle broadcast_async(void* data, size_t count, DType dtype, int root) override {
    return issue(broadcast_request(data, count, dtype, root));
  }
  CommHandle barrier_async() override { return issue(barrier_request()); }

  using Communicator::allreduce;
  using Communicator::broadcast;
  void allreduce(void* data, size_t count, DType dtype, ReduceOp op) override {
    run_blocking(allreduce_request(data, count, dtype, op));
  }
  void reduce_scatter(const void* input, void* output, size_t part, DType dtype,
                      ReduceOp op) override {
    run_blocking(reduce_scatter_request(input, output, part, dtype, op));
  }
  void allgather(const void* input, void* output, size_t part, DType dtype) override {
    run_blocking(allgather_request(input, output, part, dtype));
  }
  void broadcast(void* data, size_t count, DType dtype, int root) override {
    run_blocking(broadcast_request(data, count, dtype, root));
  }
  void barrier() override { run_blocking(barrier_request()); }

 private:
  // A validated collective: what the watchdog reports, and the MPI call.
  struct Request {
    std::string_view operation;  // a string literal
    size_t bytes;
    MpiPending::Call call;
  };

  Request allreduce_request(void* data, size_t count, DType dtype, ReduceOp op) const {
    check_reduction("mpi", "allreduce", dtype, op);
    return {"allreduce",
            count * dtype_size(dtype),
            {MpiPending::Kind::allreduce, nullptr, data, count, dtype, op, 0}};
  }

  Request reduce_scatter_request(const void* input, void* output, size_t part, DType dtype,
                                 ReduceOp op) const {
    check_reduction("mpi", "reduce_scatter", dtype, op);
    return {"reduce_scatter",
            part * static_cast<size_t>(size_) * dtype_size(dtype),
            {MpiPending::Kind::reduce_scatter, input, output, part, dtype, op, 0}};
  }

  Request allgather_request(const void* input, void* output, size_t part, DType dtype) const {
    const size_t bytes = part * dtype_size(dtype);
    const bool in_place =
        input == static_cast<const std::byte*>(output) + static_cast<size_t>(rank_) * bytes;
    return {"allgather",
            bytes * static_cast<size_t>(size_),
            {MpiPending::Kind::allgather, in_place ? nullptr : input, output, part, dtype,
             ReduceOp::sum, 0}};
  }

  Request broadcast_request(void* data, size_t count, DType dtype, int root) const {
    AT_CHECK(root >= 0 && root < size_, "broadcast: root ", root, " is not a rank of a ", size_,
             "-rank communicator");
    return {"broadcast",
            count * dtype_size(dtype),
            {MpiPending::Kind::broadcast, nullptr, data, count, dtype, ReduceOp::sum, root}};
  }

  static Request barrier_request() { return {"barrier", 0, {}}; }

  friend class MpiPending;

  // Registers the collective with the watchdog (in flight from now until it completes) and
  // queues it for the communication thread.
  CommHandle issue(const Request& request) {
    auto pending = std::make_unique<MpiPending>(
        *this, watchdog_.begin(request.operation, request.bytes), request.call);
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(pending.get());
      pending->queued_ = true;
    }
    work_ready_.notify_one();
    return CommHandle(std::move(pending));
  }

  // A blocking collective runs right here when nothing is queued or running: no hand-off and
  // no wake-up of the communication thread, which on oversubscribed cores costs more than a
  // small collective. Otherwise it queues behind the others (issue order) and waits.
  void run_blocking(const Request& request) {
    {
      std::unique_lock lock(mutex_);
      if (running_ || next_ < queue_.size()) {
        lock.unlock();
        issue(request).wait();
        return;
      }
      running_ = true;  // the communication thread starts nothing until this call is done
    }
    const uint64_t sequence = watchdog_.begin(request.operation, request.bytes);
    std::exception_ptr error;
    try {
      run(request.call);
    } catch (...) {
      error = std::current_exception();
    }
    watchdog_.end(sequence);
    bool queued_meanwhile = false;  // by another thread; waking the thread needlessly is a syscall
    {
      std::lock_guard lock(mutex_);
      running_ = false;
      queued_meanwhile = next_ < queue_.size();
    }
    if (queued_meanwhile) work_ready_.notify_one();
    if (error) std::rethrow_exception(error);
  }

  // Blocks until `pending` has run. When it is next in line and nothing is running (the
  // blocking API: issue, then wait at once), the waiting thread runs it itself: the same call
  // in the same order, without the two thread wake-ups that dominate small collectives.
  void wait_for(MpiPending& pending) {
    std::unique_lock lock(mutex_);
    while (!pending.done_) {
      if (!running_ && next_ < queue_.size() && queue_[next_] == &pending) {
        run_next(lock);
        continue;
      }
      work_done_.wait(lock);
    }
  }

  void communicate() {
    std::unique_lock lock(mutex_);
    while (true) {
      work_ready_.wait(lock, [this] { return stopping_ || (!running_ && next_ < queue_.size()); });
      if (next_ == queue_.size()) return;  // stopping and drained
      run_next(lock);
    }
  }

  // Takes the next queued call and runs it with `lock` released; one call runs at a time (in
  // issue order), on whichever thread got here first.
  void run_next(std::unique_lock<std::mutex>& lock) {
    MpiPending* pending = queue_[next_++];
    if (next_ == queue_.size()) {
      // Drained: start over at the front, keeping the capacity (no allocation per call).
      queue_.clear();
      next_ = 0;
    }
    running_ = true;
    lock.unlock();
    std::exception_ptr error;
    try {
      run(pending->call());
    } catch (...) {
      error = std::current_exception();
    }
    // Complete: the watchdog stops counting now, whether or not the handle is ever waited on.
    watchdog_.end(pending->sequence_);
    lock.lock();
    running_ = false;
    pending->finish(std::move(error));
    work_done_.notify_all();
    work_ready_.notify_one();  // a caller ran this one: the thread may have more queued
  }

  // One collective as blocking MPI calls; on the communication thread or a waiting caller.
  // MPI counts are ints: a buffer of more than max_call_elements_ goes in pieces (an
  // elementwise reduction or a copy splits anywhere; an all-gather splits every rank's part).
  void run(const MpiPending::Call& call) {
    const MPI_Datatype type = mpi_type(call.dtype);
    MPI_Comm comm = comm_.get();
    switch (call.kind) {
      case MpiPending::Kind::allreduce:
        for_each_piece(call, [&](std::byte* piece, int count) {
          AT_MPI_CHECK(
              MPI_Allreduce(MPI_IN_PLACE, piece, count, type, mpi_op(call.dtype, call.op), comm));
        });
        if (call.op == ReduceOp::avg) divide_in_place(call.output, call.count, call.dtype, size_);
        return;
      case MpiPending::Kind::reduce_scatter:  // in segments of kRingSegment: any part
        switch (call.dtype) {
          case DType::int32:
            return ring_reduce_scatter<std::int32_t>(call);
          case DType::int64:
            return ring_reduce_scatter<std::int64_t>(call);
          default:
            return ring_reduce_scatter<float>(call);  // fp32, and bf16/fp16 reduced in fp32
        }
      case MpiPending::Kind::allgather:
        if (call.count * static_cast<size_t>(size_) <= max_call_elements_) {
          AT_MPI_CHECK(MPI_Allgather(call.input == nullptr ? MPI_IN_PLACE : call.input,
                                     static_cast<int>(call.count), type, call.output,
                                     static_cast<int>(call.count), type, comm));
        } else {
          allgather_in_pieces(call, type);
        }
        return;
      case MpiPending::Kind::broadcast:
        for_each_piece(call, [&](std::byte* piece, int count) {
          AT_MPI_CHECK(MPI_Bcast(piece, count, type, call.root, comm));
        });
        return;
      case MpiPending::Kind::barrier:
        AT_MPI_CHECK(MPI_Barrier(comm));
        return;
    }
  }

  // body(piece, count) over call.output in pieces of at most max_call_elements_ elements.
  template <typename Body>
  void for_each_piece(const MpiPending::Call& call, Body body) const {
    const size_t element = dtype_size(call.dtype);
    auto* data = static_cast<std::byte*>(call.output);
    for (size_t begin = 0; begin < call.count; begin += max_call_elements_) {
      const size_t count = std::min(max_call_elements_, call.count - begin);
      body(data + begin * element, static_cast<int>(count));
    }
  }

  // Piece k of every rank's part at once: each rank sends its elements [b, b + n) and receives
  // rank r's into output + r * part + b, through a datatype of n elements whose extent is a
  // whole part (so the r-th one lands at the r-th part).
  void allgather_in_pieces(const MpiPending::Call& call, MPI_Datatype type) {
    const size_t element = dtype_size(call.dtype);
    const size_t part = call.count;
    const size_t piece = std::max<size_t>(1, max_call_elements_ / static_cast<size_t>(size_));
    auto* output = static_cast<std::byte*>(call.output);
    for (size_t begin = 0; begin < part; begin += piece) {
      const size_t count = std::min(piece, part - begin);
      MPI_Datatype block = MPI_DATATYPE_NULL;
      MPI_Datatype strided = MPI_DATATYPE_NULL;
      AT_MPI_CHECK(MPI_Type_contiguous(static_cast<int>(count), type, &block));
      AT_MPI_CHECK(
          MPI_Type_create_resized(block, 0, static_cast<MPI_Aint>(part * element), &strided));
      MPI_Type_free(&block);
      AT_MPI_CHECK(MPI_Type_commit(&strided));
      const void* send = call.input == nullptr
                             ? MPI_IN_PLACE
                             : static_cast<const std::byte*>(call.input) + begin * element;
      const int status = MPI_Allgather(send, static_cast<int>(count), type,
                                       output + begin * element, 1, strided, comm_.get());
      MPI_Type_free(&strided);
      AT_MPI_CHECK(status);
    }
  }

  // Reduce-scatter as a ring of MPI_Sendrecv (Open MPI 4.1's MPI_Reduce_scatter_block ran at
  // about 1 GB/s from 1 MiB up, a tenth of its allreduce: it allocates full-size temporaries
  // every call). Step s sends chunk (rank-s-1) of the partial sums to the right neighbour and
  // receives chunk (rank-s-2) from the left, which holds s+1 contributions, and adds this
  // rank's own values: after n-1 steps chunk `rank` holds all n. Accumulates in A (fp32 for the
  // float dtypes, so 16-bit values are rounded once), in segments of at most kRingSegment
  // elements so the scratch stays small. Deterministic: a fixed order per chunk.
  template <typename A>
  void ring_reduce_scatter(const MpiPending::Call& call) {
    const auto part = static_cast<size_t>(call.count);
    const int n = size_;
    const auto* input = static_cast<const std::byte*>(call.input);
    const size_t element = dtype_size(call.dtype);
    const bool is_max = call.op == ReduceOp::max;
    // fp32 and the integers are sent and read straight from the input; bf16/fp16 go through fp32.
    const bool widened = call.dtype == DType::bf16 || call.dtype == DType::fp16;
    const size_t segment = std::min(part, kRingSegment);
    if (ring_send_.size() < segment * sizeof(A)) {
      ring_send_.resize(segment * sizeof(A));
      ring_receive_.resize(segment * sizeof(A));
    }
    auto* send = reinterpret_cast<A*>(ring_send_.data());
    auto* receive = reinterpret_cast<A*>(ring_receive_.data());
    // Elements [begin, ...) of this rank's chunk `chunk` in the input.
    const auto own = [&](int chunk, size_t begin) {
      return input + (static_cast<size_t>((chunk % n + n) % n) * part + begin) * element;
    };
    const MPI_Datatype type = std::is_same_v<A, float>          ? MPI_FLOAT
                              : std::is_same_v<A, std::int32_t> ? MPI_INT32_T
                                                                : MPI_INT64_T;
    const int left = (rank_ + n - 1) % n;
    const int right = (rank_ + 1) % n;
    for (size_t begin = 0; begin < part; begin += segment) {
      const auto count = std::min(segment, part - begin);
      const A* outgoing = reinterpret_cast<const A*>(own(rank_ - 1, begin));
      if (widened) {
        if constexpr (std::is_same_v<A, float>)
          widen(own(rank_ - 1, begin), send, count, call.dtype);
        outgoing = send;
      }
      for (int step = 0; step < n - 1; ++step) {
        AT_MPI_CHECK(MPI_Sendrecv(outgoing, static_cast<int>(count), type, right, kRingTag, receive,
                                  static_cast<int>(count), type, left, kRingTag, comm_.get(),
                                  MPI_STATUS_IGNORE));
        // send = this rank's values of the received chunk, combined with the received sums.
        const std::byte* mine = own(rank_ - step - 2, begin);
        const A* values = reinterpret_cast<const A*>(mine);
        if (widened) {
          if constexpr (std::is_same_v<A, float>) widen(mine, send, count, call.dtype);
          values = send;
        }
        for (size_t i = 0; i < count; ++i) {
          send[i] = is_max ? std::max(values[i], receive[i]) : values[i] + receive[i];
        }
        outgoing = send;
      }
      std::byte* out = static_cast<std::byte*>(call.output) + begin * element;
      if (n == 1) {
        std::memcpy(out, own(0, begin), count * element);
        continue;
      }
      if constexpr (std::is_same_v<A, float>) {
        if (call.op == ReduceOp::avg) {
          for (size_t i = 0; i < count; ++i) send[i] /= static_cast<float>(n);
        }
        narrow(send, out, count, call.dtype);
      } else {
        std::memcpy(out, send, count * sizeof(A));
      }
    }
  }

  MPI_Op mpi_op(DType dtype, ReduceOp op) const {
    const bool is_max = op == ReduceOp::max;
    switch (dtype) {
      case DType::bf16:
        return is_max ? bf16_max_.get() : bf16_sum_.get();
      case DType::fp16:
        return is_max ? fp16_max_.get() : fp16_sum_.get();
      default:
        return is_max ? MPI_MAX : MPI_SUM;
    }
  }

  static constexpr size_t kRingSegment = size_t{1} << 20;  // elements per ring pass (4 MiB fp32)
  static constexpr int kRingTag = 17;

  OwnedComm comm_;
  int rank_;
  int size_;
  size_t max_call_elements_;          // per MPI call: INT_MAX (max_call_elements())
  std::vector<std::byte> ring_send_;  // reduce_scatter scratch: one segment each, kept
  std::vector<std::byte> ring_receive_;
  UserOp bf16_sum_{&reduce_16bit<bf16_to_float, float_to_bf16, false>};
  UserOp bf16_max_{&reduce_16bit<bf16_to_float, float_to_bf16, true>};
  UserOp fp16_sum_{&reduce_16bit<fp16_to_float, float_to_fp16, false>};
  UserOp fp16_max_{&reduce_16bit<fp16_to_float, float_to_fp16, true>};
  Watchdog watchdog_;

  std::mutex mutex_;
  std::condition_variable work_ready_;  // the communication thread waits for issued calls
  std::condition_variable work_done_;   // handles wait for finished calls
  std::vector<MpiPending*> queue_;      // issue order; [next_, size) not yet started
  size_t next_ = 0;
  bool running_ = false;  // a call is between run_next's unlock and lock
  bool stopping_ = false;
  std::thread thread_;  // started last in the constructor, joined first in the destructor
};

MpiPending::~MpiPending() {
  // Reached without wait() only when queueing failed: nothing is in flight.
  if (!ended_) owner_.watchdog_.end(sequence_);
}

void MpiPending::wait() {
  if (queued_) owner_.wait_for(*this);
  owner_.watchdog_.end(sequence_);
  ended_ = true;
  if (error_) std::rethrow_exception(error_);
}

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(MPI_Comm comm, const CommOptions& options) {
  return std::make_unique<MpiCommunicator>(comm, options);
}

}  // namespace autotrain::comm_detail
