// The NCCL backend (compiled when the build has CUDA and NCCL). Bootstrap over MPI: rank 0's
// ncclGetUniqueId travels by MPI_Bcast, every rank selects its device (from the topology) and
// creates its communicator with ncclCommInitRankConfig in non-blocking mode, polling
// ncclCommGetAsyncError against comm_timeout and aborting the communicator on expiry. A rank
// whose init fails tells the others at once over MPI (failure_notes.hpp), so the job ends with
// its reason in about a second instead of after comm_timeout.
// Buffers are device pointers; collectives run on a stream the communicator owns, and an async
// handle is a CUDA event recorded after the collective. NCCL_* variables pass through untouched.
#ifdef AUTOTRAIN_HAVE_NCCL
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "../failure_notes.hpp"
#include "../internal.hpp"
#include "autotrain/comm/communicator.hpp"
#include "autotrain/comm/nccl.hpp"
#include "autotrain/core/deadline.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/gpu/check.hpp"
#include "autotrain/core/gpu/device.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/timer.hpp"
#include "autotrain/core/watchdog.hpp"

namespace autotrain {
namespace {

std::string nccl_hint(ncclResult_t result) {
  switch (result) {
    case ncclInvalidUsage:
      return " (if NCCL reports 'Duplicate GPU', two ranks share one device: check the ranks per "
             "node against the GPUs per node and CUDA_VISIBLE_DEVICES)";
    case ncclSystemError:
    case ncclRemoteError:
      return " (a peer or the network failed: set NCCL_DEBUG=INFO, check NCCL_SOCKET_IFNAME names "
             "an interface every node reaches, and that no firewall blocks the ports)";
    case ncclUnhandledCudaError:
      return " (a CUDA call inside NCCL failed: check the device is healthy and not out of memory)";
    default:
      return " (set NCCL_DEBUG=INFO for details)";
  }
}

[[noreturn]] void throw_nccl_error(ncclResult_t result, const char* call, const char* file,
                                   int line) {
  throw Error(cat("NCCL call failed: ", call, " returned ", static_cast<int>(result), " (",
                  ncclGetErrorString(result), ") at ", file, ":", line, nccl_hint(result)));
}

}  // namespace
}  // namespace autotrain

// ncclInProgress is not an error: non-blocking calls return it until the work is enqueued.
#define AT_NCCL_CHECK(call)                                                      \
  do {                                                                           \
    ncclResult_t at_nccl_status_ = (call);                                       \
    if (at_nccl_status_ != ncclSuccess && at_nccl_status_ != ncclInProgress)     \
      ::autotrain::throw_nccl_error(at_nccl_status_, #call, __FILE__, __LINE__); \
  } while (0)

namespace autotrain {

ncclUniqueId broadcast_nccl_unique_id(MPI_Comm comm) {
  int rank = 0;
  AT_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  ncclUniqueId id{};
  std::string failure;
  if (rank == 0) {
    const ncclResult_t result = ncclGetUniqueId(&id);
    if (result != ncclSuccess) {
      failure = cat("ncclGetUniqueId failed: ", ncclGetErrorString(result), nccl_hint(result));
    }
  }
  agree_or_throw(failure.empty(), failure, comm);
  broadcast_or_abort(&id, sizeof id, MPI_BYTE, 0, comm, "the NCCL unique id");
  return id;
}

namespace comm_detail {
namespace {

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::fp32:
      return ncclFloat32;
    case DType::bf16:
      return ncclBfloat16;
    case DType::fp16:
      return ncclFloat16;
    case DType::int32:
      return ncclInt32;
    case DType::int64:
      return ncclInt64;
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return ncclSum;
    case ReduceOp::avg:
      return ncclAvg;
    case ReduceOp::max:
      return ncclMax;
  }
  return ncclSum;
}

// The device side of the communicator, made on its device: released however construction ends.
struct DeviceResources {
  explicit DeviceResources(int device) : device_set(set_device(device)) {}
  static bool set_device(int device) {
    AT_CUDA_CHECK(cudaSetDevice(device));
    return true;
  }
  bool device_set;
  gpu::Stream stream;
  gpu::DeviceBuffer barrier_word{sizeof(int)};  // barrier_async's one-word allreduce
  gpu::Event producer;  // wait_for_stream: the caller's stream up to the call
};

// The NCCL communicator. The watchdog thread (on a timeout) and the main thread (init or a call
// that never becomes ready) may both abort it: whichever comes first does, once. A healthy one
// is finalized and destroyed.
class NcclHandle {
 public:
  NcclHandle() = default;
  ~NcclHandle() {
    if (healthy_) {
      finalize();
    } else {
      abort();
    }
  }
  NcclHandle(const NcclHandle&) = delete;
  NcclHandle& operator=(const NcclHandle&) = delete;

  ncclComm_t* slot() { return &init_; }
  // Init returned: from now on get() and abort() see the communicator.
  void publish() { comm_.store(init_); }
  void mark_healthy() { healthy_ = true; }
  ncclComm_t get() const { return comm_.load(); }
  void abort() {
    if (ncclComm_t comm = comm_.exchange(nullptr); comm != nullptr) ncclCommAbort(comm);
  }
  void set_timeout(double seconds) { timeout_seconds_ = seconds; }

 private:
  void finalize() {
    ncclComm_t comm = comm_.exchange(nullptr);
    if (comm == nullptr) return;
    // Finalize flushes outstanding work; with a non-blocking communicator poll until done.
    ncclCommFinalize(comm);
    ncclResult_t state = ncclInProgress;
    Timer timer;
    while (ncclCommGetAsyncError(comm, &state) == ncclSuccess && state == ncclInProgress &&
           timer.seconds() < timeout_seconds_) {
      std::this_thread::yield();
    }
    ncclCommDestroy(comm);
  }

  ncclComm_t init_ = nullptr;
  std::atomic<ncclComm_t> comm_{nullptr};
  bool healthy_ = false;
  double timeout_seconds_ = 0;
};

class NcclPending final : public PendingCollective {
 public:
  NcclPending(Watchdog& watchdog, uint64_t sequence) : watchdog_(watchdog), sequence_(sequence) {}
  ~NcclPending() override {
    if (!ended_) watchdog_.end(sequence_);
  }
  cudaEvent_t event() const { return event_.get(); }
  void wait() override {
    ended_ = true;
    const cudaError_t status = cudaEventSynchronize(event_.get());
    watchdog_.end(sequence_);
    AT_CUDA_CHECK(status);
  }
  bool order_before(void* stream) override {
    AT_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), event_.get(), 0));
    return true;
  }

 private:
  Watchdog& watchdog_;
  uint64_t sequence_;
  gpu::Event event_;
  bool ended_ = false;
};

// A peer's init failed (its note arrived): that peer reports the failure itself.
class PeerInitFailed : public Error {
 public:
  using Error::Error;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(MPI_Comm parent, const CommOptions& options)
      : comm_(OwnedComm::duplicate(parent, "communicator set-up (MPI_Comm_dup)")),
        rank_(comm_rank(comm_.get())),
        size_(comm_size(comm_.get())),
        timeout_seconds_(options.timeout_seconds) {
    nccl_.set_timeout(timeout_seconds_);
    std::string failure;
    try {
      AT_CHECK(
          options.device >= 0, "nccl: rank ", rank_,
          " has no CUDA device (CommOptions.device = -1); use comm_backend gloo or mpi on CPUs");
      device_.emplace(options.device);
    } catch (const std::exception& error) {
      failure = error.what();
    }
    agree_or_throw(failure.empty(), failure, comm_.get());
    init_communicator(broadcast_nccl_unique_id(comm_.get()));
    watchdog_ = std::make_unique<Watchdog>("nccl", rank_, timeout_seconds_,
                                           [this](const std::string& message) {
                                             // Unblocks the host and the stream before the job goes
                                             // down.
                                             nccl_.abort();
                                             abort_job_on_collective_timeout(message);
                                           });
    nccl_.mark_healthy();
  }

  // The watchdog stops first (it may abort the communicator); then the communicator is
  // finalized (or aborted) before the device resources it used are released.
  ~NcclCommunicator() override { watchdog_.reset(); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view name() const override { return "nccl"; }

  CommHandle allreduce_async(void* data, size_t count, DType dtype, ReduceOp op) override {
    check_reduction("nccl", "allreduce", dtype, op);
    return issue("allreduce", count * dtype_size(dtype), [&] {
      return ncclAllReduce(data, data, count, nccl_type(dtype), nccl_op(op), nccl_.get(), stream());
    });
  }

  CommHandle reduce_scatter_async(const void* input, void* output, size_t part, DType dtype,
                                  ReduceOp op) override {
    check_reduction("nccl", "reduce_scatter", dtype, op);
    return issue("reduce_scatter", part * static_cast<size_t>(size_) * dtype_size(dtype), [&] {
      return ncclReduceScatter(input, output, part, nccl_type(dtype), nccl_op(op), nccl_.get(),
                               stream());
    });
  }

  CommHandle allgather_async(const void* input, void* output, size_t part, DType dtype) override {
    return issue("allgather", part * static_cast<size_t>(size_) * dtype_size(dtype), [&] {
      return ncclAllGather(input, output, part, nccl_type(dtype), nccl_.get(), stream());
    });
  }

  CommHandle broadcast_async(void* data, size_t count, DType dtype, int root) override {
    AT_CHECK(root >= 0 && root < size_, "broadcast: root ", root, " is not a rank of a ", size_,
             "-rank communicator");
    return issue("broadcast", count * dtype_size(dtype), [&] {
      return ncclBroadcast(data, data, count, nccl_type(dtype), root, nccl_.get(), stream());
    });
  }

  void wait_for_stream(void* stream) override {
    AT_CUDA_CHECK(cudaEventRecord(device_->producer.get(), static_cast<cudaStream_t>(stream)));
    AT_CUDA_CHECK(cudaStreamWaitEvent(this->stream(), device_->producer.get(), 0));
  }

  CommHandle barrier_async() override {
    // NCCL has no barrier: a one-word allreduce synchronises every rank's stream.
    return issue("barrier", 0, [&] {
      int* word = device_->barrier_word.as<int>();
      return ncclAllReduce(word, word, 1, ncclInt32, ncclSum, nccl_.get(), stream());
    });
  }

 private:
  cudaStream_t stream() const { return device_->stream.get(); }

  // Creates the NCCL communicator on every rank, or throws the same CollectiveError on every
  // rank. A rank whose init fails (at the call or soon after) tells the others at once through
  // the failure notes: their NCCL would otherwise wait in its bootstrap for that rank until
  // comm_timeout. They abort their communicator and vote ok, so the agreement reports the
  // lowest failing rank's own message, which names its rank and NCCL's reason.
  void init_communicator(const ncclUniqueId& id) {
    FailureNotes notes(comm_.get());
    std::string failure;
    try {
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = 0;
      const ncclResult_t started = ncclCommInitRankConfig(nccl_.slot(), size_, id, rank_, &config);
      nccl_.publish();
      if (started != ncclSuccess && started != ncclInProgress) throw init_error(started);
      wait_until_ready("ncclCommInitRankConfig", &notes);
    } catch (const PeerInitFailed&) {
      // The failing rank reports it in the agreement below.
    } catch (const std::exception& error) {
      failure = error.what();
      notes.announce(failure);
    }
    try {
      agree_or_throw(failure.empty(), failure, comm_.get(), "the NCCL communicator's creation");
    } catch (const CollectiveError&) {
      notes.settle();
      throw;
    }
  }

  Error init_error(ncclResult_t result) const {
    return Error(cat("nccl: ncclCommInitRankConfig failed on rank ", rank_, ": ",
                     ncclGetErrorString(result), " (", ncclGetLastError(nccl_.get()), ")",
                     nccl_hint(result)));
  }

  // Non-blocking NCCL returns ncclInProgress until the call is done; give up after comm_timeout,
  // or at once when a peer's note says it failed (`notes`, during init).
  void wait_until_ready(const char* what, FailureNotes* notes = nullptr) {
    Timer timer;
    ncclResult_t state = ncclInProgress;
    while (true) {
      const ncclComm_t comm = nccl_.get();
      AT_CHECK(comm != nullptr, "nccl: ", what, " on rank ", rank_,
               ": the communicator was aborted (comm_timeout)");
      AT_NCCL_CHECK(ncclCommGetAsyncError(comm, &state));
      if (state != ncclInProgress) break;
      if (notes != nullptr) stop_if_a_peer_failed(*notes, what);
      if (timer.seconds() > timeout_seconds_) {
        nccl_.abort();
        throw Error(cat("nccl: ", what, " did not finish within comm_timeout = ", timeout_seconds_,
                        " s on rank ", rank_,
                        "; the ranks cannot reach each other: set NCCL_SOCKET_IFNAME to an "
                        "interface every node reaches, check firewalls, and rerun with "
                        "NCCL_DEBUG=INFO"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (state != ncclSuccess) {
      throw Error(cat("nccl: ", what, " failed on rank ", rank_, ": ", ncclGetErrorString(state),
                      " (", ncclGetLastError(nccl_.get()), ")", nccl_hint(state)));
    }
  }

  // On a peer's failure note: abort this rank's communicator (NCCL would keep waiting for that
  // peer) and throw PeerInitFailed.
  void stop_if_a_peer_failed(FailureNotes& notes, const char* what) {
    const std::optional<FailureNote> note = notes.poll();
    if (!note) return;
    nccl_.abort();
    throw PeerInitFailed(cat("nccl: ", what, " stopped on rank ", rank_, ": rank ", note->rank,
                             " failed: ", note->message));
  }

  template <typename Call>
  CommHandle issue(std::string_view operation, size_t bytes, Call call) {
    const uint64_t sequence = watchdog_->begin(operation, bytes);
    auto pending = std::make_unique<NcclPending>(*watchdog_, sequence);
    AT_NCCL_CHECK(call());
    wait_until_ready(operation.data());
    AT_CUDA_CHECK(cudaEventRecord(pending->event(), stream()));
    return CommHandle(std::move(pending));
  }

  // Destroyed bottom up: the watchdog, the NCCL communicator, the device resources it used, the
  // MPI communicator.
  OwnedComm comm_;
  int rank_;
  int size_;
  double timeout_seconds_;
  std::optional<DeviceResources> device_;
  NcclHandle nccl_;
  std::unique_ptr<Watchdog> watchdog_;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm comm, const CommOptions& options) {
  return std::make_unique<NcclCommunicator>(comm, options);
}

}  // namespace comm_detail
}  // namespace autotrain
#endif  // AUTOTRAIN_HAVE_NCCL
