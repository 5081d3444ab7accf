// The MPI backend: non-blocking MPI collectives on host buffers, over a duplicate of the
// caller's communicator. bf16/fp16 have no MPI type: they travel as MPI_UINT16_T with our own
// commutative MPI_Ops that add (or compare) in fp32 and round each partial result to 16 bits.
#include <mpi.h>

#include <memory>
#include <span>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/comm/watchdog.hpp"
#include "autotrain/core/error.hpp"
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

class MpiPending final : public PendingCollective {
 public:
  MpiPending(Watchdog& watchdog, uint64_t sequence, MPI_Request request)
      : watchdog_(watchdog), sequence_(sequence), request_(request) {}
  // avg: after the sum arrives, divide `count` elements of `data` by `divisor`.
  void divide_after(void* data, size_t count, DType dtype, int divisor) {
    divide_data_ = data;
    divide_count_ = count;
    divide_dtype_ = dtype;
    divisor_ = divisor;
  }
  ~MpiPending() override {
    // Reached without wait() only when starting the collective failed: nothing is in flight.
    if (!ended_) watchdog_.end(sequence_);
  }
  MPI_Request* request() { return &request_; }

  void wait() override {
    const int status = MPI_Wait(&request_, MPI_STATUS_IGNORE);
    watchdog_.end(sequence_);
    ended_ = true;
    AT_MPI_CHECK(status);
    if (divide_data_ != nullptr)
      divide_in_place(divide_data_, divide_count_, divide_dtype_, divisor_);
  }

 private:
  Watchdog& watchdog_;
  uint64_t sequence_;
  MPI_Request request_;
  void* divide_data_ = nullptr;
  size_t divide_count_ = 0;
  DType divide_dtype_ = DType::fp32;
  int divisor_ = 1;
  bool ended_ = false;
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm parent, const CommOptions& options)
      : comm_(parent),
        rank_(comm_rank(comm_.get())),
        size_(comm_size(comm_.get())),
        watchdog_("mpi", rank_, options.timeout_seconds, abort_job_on_collective_timeout) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view name() const override { return "mpi"; }

  CommHandle allreduce_async(void* data, size_t count, DType dtype, ReduceOp op) override {
    check_reduction("mpi", "allreduce", dtype, op);
    const int n = checked_int_count(count, "allreduce");
    auto pending = begin("allreduce", count * dtype_size(dtype));
    AT_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, data, n, mpi_type(dtype), mpi_op(dtype, op),
                                comm_.get(), pending->request()));
    if (op == ReduceOp::avg) pending->divide_after(data, count, dtype, size_);
    return CommHandle(std::move(pending));
  }

  CommHandle reduce_scatter_async(const void* input, void* output, size_t part, DType dtype,
                                  ReduceOp op) override {
    check_reduction("mpi", "reduce_scatter", dtype, op);
    checked_int_count(part * static_cast<size_t>(size_), "reduce_scatter");
    auto pending = begin("reduce_scatter", part * static_cast<size_t>(size_) * dtype_size(dtype));
    AT_MPI_CHECK(MPI_Ireduce_scatter_block(input, output, static_cast<int>(part), mpi_type(dtype),
                                           mpi_op(dtype, op), comm_.get(), pending->request()));
    if (op == ReduceOp::avg) pending->divide_after(output, part, dtype, size_);
    return CommHandle(std::move(pending));
  }

  CommHandle allgather_async(const void* input, void* output, size_t part, DType dtype) override {
    checked_int_count(part * static_cast<size_t>(size_), "allgather");
    const size_t bytes = part * dtype_size(dtype);
    const bool in_place =
        input == static_cast<const std::byte*>(output) + static_cast<size_t>(rank_) * bytes;
    auto pending = begin("allgather", bytes * static_cast<size_t>(size_));
    AT_MPI_CHECK(MPI_Iallgather(in_place ? MPI_IN_PLACE : input, static_cast<int>(part),
                                mpi_type(dtype), output, static_cast<int>(part), mpi_type(dtype),
                                comm_.get(), pending->request()));
    return CommHandle(std::move(pending));
  }

  CommHandle broadcast_async(void* data, size_t count, DType dtype, int root) override {
    AT_CHECK(root >= 0 && root < size_, "broadcast: root ", root, " is not a rank of a ", size_,
             "-rank communicator");
    const int n = checked_int_count(count, "broadcast");
    auto pending = begin("broadcast", count * dtype_size(dtype));
    AT_MPI_CHECK(MPI_Ibcast(data, n, mpi_type(dtype), root, comm_.get(), pending->request()));
    return CommHandle(std::move(pending));
  }

  CommHandle barrier_async() override {
    auto pending = begin("barrier", 0);
    AT_MPI_CHECK(MPI_Ibarrier(comm_.get(), pending->request()));
    return CommHandle(std::move(pending));
  }

 private:
  static int comm_rank(MPI_Comm comm) {
    int rank = 0;
    AT_MPI_CHECK(MPI_Comm_rank(comm, &rank));
    return rank;
  }
  static int comm_size(MPI_Comm comm) {
    int size = 0;
    AT_MPI_CHECK(MPI_Comm_size(comm, &size));
    return size;
  }

  // Registers the collective with the watchdog; the caller starts it into pending->request().
  std::unique_ptr<MpiPending> begin(std::string_view operation, size_t bytes) {
    const uint64_t sequence = watchdog_.begin(operation, bytes);
    return std::make_unique<MpiPending>(watchdog_, sequence, MPI_REQUEST_NULL);
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

  DuplicatedComm comm_;
  int rank_;
  int size_;
  UserOp bf16_sum_{&reduce_16bit<bf16_to_float, float_to_bf16, false>};
  UserOp bf16_max_{&reduce_16bit<bf16_to_float, float_to_bf16, true>};
  UserOp fp16_sum_{&reduce_16bit<fp16_to_float, float_to_fp16, false>};
  UserOp fp16_max_{&reduce_16bit<fp16_to_float, float_to_fp16, true>};
  Watchdog watchdog_;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(MPI_Comm comm, const CommOptions& options) {
  return std::make_unique<MpiCommunicator>(comm, options);
}

}  // namespace autotrain::comm_detail
