#pragma once
// The one interface every layer above talks through to other ranks.
//
// Buffers are raw (pointer, count, DType): host memory for the mpi and gloo backends, device
// memory for nccl. Counts are elements, never bytes.
//
// Layout of reduce_scatter and allgather: EQUAL PADDED PARTS. A logical buffer of `count`
// elements is laid out as world_size parts of `part = ceil(count / world_size)` elements
// (ShardLayout below); rank r owns elements [r*part, (r+1)*part). The tail of the last parts
// beyond `count` is padding the caller keeps at zero (or ignores). So
//   reduce_scatter: input  world_size*part elements -> output part elements (rank r's part)
//   allgather:      input  part elements            -> output world_size*part elements
// This is the layout the ZeRO layer uses (every unit padded to world_size*alignment), it maps
// onto MPI_Reduce_scatter_block / MPI_Allgather / NCCL directly, and costs no extra copy.
//
// Every op has an asynchronous form returning a CommHandle; many may be in flight at once.
// Handles complete in issue order at the latest when waited on; waiting on a later handle
// first is allowed. A handle must be waited on (or destroyed, which waits) before its
// buffers are touched again and before the communicator is destroyed.
//
// Reductions: sum, avg (= sum / world_size, floating-point dtypes only) and max. bf16/fp16 are
// reduced with fp32 arithmetic on the CPU backends (see docs/communication.md for where the
// rounding to 16 bits happens in each backend).
#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "autotrain/comm/backend.hpp"
#include "autotrain/core/dtype.hpp"

namespace autotrain {

enum class ReduceOp { sum, avg, max };

std::string_view reduce_op_name(ReduceOp op);
// Parses sum|avg|max; throws Error naming `source` otherwise.
ReduceOp parse_reduce_op(std::string_view text, std::string_view source);

// The equal padded parts of a logical buffer of `count` elements over `world_size` ranks.
struct ShardLayout {
  size_t count = 0;
  int world_size = 1;

  size_t part() const {
    return (count + static_cast<size_t>(world_size) - 1) / static_cast<size_t>(world_size);
  }
  size_t padded_count() const { return part() * static_cast<size_t>(world_size); }
  size_t begin(int rank) const { return part() * static_cast<size_t>(rank); }
  // Elements of rank's part that lie inside the logical buffer (the rest is padding).
  size_t valid(int rank) const {
    const size_t start = begin(rank);
    return start >= count ? 0 : std::min(part(), count - start);
  }
};

struct CommOptions {
  double timeout_seconds = 600.0;  // comm_timeout: a collective older than this aborts the job
  int device = -1;                 // CUDA device for nccl (from the topology); -1 = CPU
};

// One collective in flight, as a backend sees it.
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  // Blocks until the collective is complete and its output is in place; throws Error.
  virtual void wait() = 0;
  // Makes work queued later on the CUDA stream `stream` run after the collective, without
  // blocking the host, and returns true; false where the backend cannot (no device streams).
  virtual bool order_before(void* /*stream*/) { return false; }
};

// Move-only handle to an asynchronous collective. Destroying a handle that was not waited on
// waits for it (a collective is never left dangling); if that wait fails the job aborts.
class CommHandle {
 public:
  CommHandle() = default;
  explicit CommHandle(std::unique_ptr<PendingCollective> pending) : pending_(std::move(pending)) {}
  CommHandle(CommHandle&&) noexcept = default;
  CommHandle& operator=(CommHandle&& other) noexcept;
  CommHandle(const CommHandle&) = delete;
  CommHandle& operator=(const CommHandle&) = delete;
  ~CommHandle();

  // Waits for completion; a second wait returns at once.
  void wait();
  // Work queued later on the CUDA stream `stream` runs after this collective. NCCL orders the
  // stream with an event and the host goes on (the handle stays pending until it is waited on
  // or dropped); the host backends wait here.
  void order_before(void* stream);
  bool pending() const { return pending_ != nullptr; }

 private:
  std::unique_ptr<PendingCollective> pending_;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string_view name() const = 0;  // "mpi", "gloo", "nccl"

  // In place: `data` holds this rank's input and receives the reduction.
  virtual CommHandle allreduce_async(void* data, size_t count, DType dtype, ReduceOp op) = 0;
  // input: size()*part elements; output: part elements (this rank's part). No overlap.
  virtual CommHandle reduce_scatter_async(const void* input, void* output, size_t part, DType dtype,
                                          ReduceOp op) = 0;
  // input: part elements; output: size()*part elements. In place when
  // input == output + rank()*part elements.
  virtual CommHandle allgather_async(const void* input, void* output, size_t part, DType dtype) = 0;
  virtual CommHandle broadcast_async(void* data, size_t count, DType dtype, int root) = 0;
  virtual CommHandle barrier_async() = 0;

  // Device backends (nccl): collectives issued after this call start only once the work queued
  // so far on `stream` (a cudaStream_t, e.g. the backward that wrote a gradient bucket) is done,
  // without blocking the host. Host backends have nothing to order: a buffer is complete when a
  // call is issued.
  virtual void wait_for_stream(void* /*stream*/) {}

  // The blocking forms: the async call, waited on at once. Virtual so that a backend can run a
  // blocking collective without handing it to another thread (the mpi backend does).
  virtual void allreduce(void* data, size_t count, DType dtype, ReduceOp op) {
    allreduce_async(data, count, dtype, op).wait();
  }
  virtual void reduce_scatter(const void* input, void* output, size_t part, DType dtype,
                              ReduceOp op) {
    reduce_scatter_async(input, output, part, dtype, op).wait();
  }
  virtual void allgather(const void* input, void* output, size_t part, DType dtype) {
    allgather_async(input, output, part, dtype).wait();
  }
  virtual void broadcast(void* data, size_t count, DType dtype, int root) {
    broadcast_async(data, count, dtype, root).wait();
  }
  virtual void barrier() { barrier_async().wait(); }

  // Typed views for the common host-memory cases.
  void allreduce(std::span<float> data, ReduceOp op) {
    allreduce(data.data(), data.size(), DType::fp32, op);
  }
  void allreduce(std::span<int64_t> data, ReduceOp op) {
    allreduce(data.data(), data.size(), DType::int64, op);
  }
  void broadcast(std::span<float> data, int root) {
    broadcast(data.data(), data.size(), DType::fp32, root);
  }
};

// Creates the communicator over a duplicate of `comm` (our traffic never mixes with the
// caller's). Collective over `comm`. `backend` must already be resolved (resolve_comm_backend);
// `automatic` is an Error here because only the topology knows whether this rank has a GPU.
std::unique_ptr<Communicator> make_communicator(CommBackend backend, MPI_Comm comm,
                                                const CommOptions& options);

}  // namespace autotrain
