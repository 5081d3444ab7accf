// The raw-mpi reference of `bench comm`: each call is one blocking MPI collective, so it is
// complete when it returns and its handles are empty.
#include "comm_raw_mpi.hpp"

#include <climits>
#include <string_view>

#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/owned_comm.hpp"

namespace autotrain::cli {
namespace {

// MPI counts are int: a larger count is refused, never truncated.
int mpi_count(std::size_t count, std::string_view operation) {
  if (count > static_cast<std::size_t>(INT_MAX)) {
    throw CollectiveError(cat("bench comm: raw-mpi ", operation, " of ", count,
                              " elements: MPI counts at most ", INT_MAX,
                              " elements per call; lower --max-bytes"));
  }
  return static_cast<int>(count);
}

MPI_Datatype mpi_type(DType dtype) {
  return dtype == DType::fp32 ? MPI_FLOAT : dtype == DType::int32 ? MPI_INT32_T : MPI_INT64_T;
}

MPI_Op mpi_op(ReduceOp op) {
  return op == ReduceOp::max ? MPI_MAX : MPI_SUM;
}

class RawMpiCommunicator final : public Communicator {
 public:
  explicit RawMpiCommunicator(MPI_Comm parent)
      : comm_(OwnedComm::duplicate(parent, "bench comm set-up (MPI_Comm_dup)")),
        rank_(comm_rank(comm_.get())),
        size_(comm_size(comm_.get())) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view name() const override { return "raw-mpi"; }

  CommHandle allreduce_async(void* data, size_t count, DType dtype, ReduceOp op) override {
    AT_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, mpi_count(count, "allreduce"), mpi_type(dtype),
                               mpi_op(op), comm_.get()));
    return {};
  }
  CommHandle reduce_scatter_async(const void* input, void* output, size_t part, DType dtype,
                                  ReduceOp op) override {
    AT_MPI_CHECK(MPI_Reduce_scatter_block(input, output, mpi_count(part, "reduce_scatter"),
                                          mpi_type(dtype), mpi_op(op), comm_.get()));
    return {};
  }
  // In place (input == output + rank*part) is MPI_IN_PLACE: MPI forbids aliased buffers.
  CommHandle allgather_async(const void* input, void* output, size_t part, DType dtype) override {
    const int count = mpi_count(part, "allgather");
    const bool in_place = input == static_cast<const std::byte*>(output) +
                                       static_cast<size_t>(rank_) * part * dtype_size(dtype);
    AT_MPI_CHECK(MPI_Allgather(in_place ? MPI_IN_PLACE : input, count, mpi_type(dtype), output,
                               count, mpi_type(dtype), comm_.get()));
    return {};
  }
  CommHandle broadcast_async(void* data, size_t count, DType dtype, int root) override {
    AT_MPI_CHECK(
        MPI_Bcast(data, mpi_count(count, "broadcast"), mpi_type(dtype), root, comm_.get()));
    return {};
  }
  CommHandle barrier_async() override {
    AT_MPI_CHECK(MPI_Barrier(comm_.get()));
    return {};
  }

 private:
  OwnedComm comm_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace

void check_raw_mpi_supports(DType dtype, ReduceOp op, std::size_t max_count) {
  if (dtype == DType::bf16 || dtype == DType::fp16) {
    throw CollectiveError(cat("bench comm: raw-mpi has no ", dtype_name(dtype),
                              " type (MPI lacks 16-bit floats); use --dtype fp32, int32 or int64"));
  }
  if (op == ReduceOp::avg)
    throw CollectiveError("bench comm: raw-mpi has no avg; use --redop sum or max");
  if (max_count > static_cast<std::size_t>(INT_MAX)) {
    throw CollectiveError(cat("bench comm: raw-mpi cannot pass ", max_count, " ", dtype_name(dtype),
                              " elements in one MPI call (MPI counts are int, at most ", INT_MAX,
                              "); lower --max-bytes"));
  }
}

std::unique_ptr<Communicator> make_raw_mpi_communicator(MPI_Comm parent) {
  return std::make_unique<RawMpiCommunicator>(parent);
}

}  // namespace autotrain::cli
