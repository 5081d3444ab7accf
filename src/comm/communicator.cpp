#include "autotrain/comm/communicator.hpp"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <span>

#include "autotrain/core/deadline.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/mpi.hpp"
#include "internal.hpp"

namespace autotrain {

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::avg:
      return "avg";
    case ReduceOp::max:
      return "max";
  }
  return "?";
}

ReduceOp parse_reduce_op(std::string_view text, std::string_view source) {
  if (text == "sum") return ReduceOp::sum;
  if (text == "avg") return ReduceOp::avg;
  if (text == "max") return ReduceOp::max;
  throw Error(cat(source, ": unknown reduction '", text, "' (expected sum, avg or max)"));
}

CommHandle& CommHandle::operator=(CommHandle&& other) noexcept {
  if (this != &other) {
    // The collective this handle held must finish before the handle forgets it: `previous`
    // waits for it when it goes out of scope.
    CommHandle previous(std::move(*this));
    pending_ = std::move(other.pending_);
  }
  return *this;
}

CommHandle::~CommHandle() {
  if (!pending_) return;
  try {
    pending_->wait();
  } catch (const std::exception& error) {
    log::error("a collective failed while its handle was dropped: ", error.what());
    abort_job(1);
  }
}

void CommHandle::wait() {
  if (!pending_) return;
  // Forget the collective even when it failed: it cannot be waited on twice.
  std::unique_ptr<PendingCollective> pending = std::move(pending_);
  pending->wait();
}

void CommHandle::order_before(void* stream) {
  if (pending_ && !pending_->order_before(stream)) wait();
}

std::unique_ptr<Communicator> make_communicator(CommBackend backend, MPI_Comm comm,
                                                const CommOptions& options) {
  switch (backend) {
    case CommBackend::mpi:
      return comm_detail::make_mpi_communicator(comm, options);
    case CommBackend::gloo:
      return comm_detail::make_gloo_communicator(comm, options);
    case CommBackend::nccl:
#ifdef AUTOTRAIN_HAVE_NCCL
      return comm_detail::make_nccl_communicator(comm, options);
#else
      throw Error(
          "comm_backend: 'nccl' was requested but this autotrain was built without NCCL; use "
          "comm_backend gloo or mpi on CPUs");
#endif
    case CommBackend::automatic:
      break;
  }
  throw Error(
      "make_communicator: comm_backend 'auto' must be resolved first (resolve_comm_backend)");
}

namespace comm_detail {

void check_reduction(std::string_view backend, std::string_view operation, DType dtype,
                     ReduceOp op) {
  if (op == ReduceOp::avg && (dtype == DType::int32 || dtype == DType::int64)) {
    throw Error(cat(backend, " ", operation, ": reduction 'avg' needs a floating-point dtype, got ",
                    dtype_name(dtype), " (use 'sum' and divide explicitly)"));
  }
}

int checked_int_count(size_t count, std::string_view operation) {
  AT_CHECK(count <= static_cast<size_t>(INT_MAX), operation, ": ", count,
           " elements exceed the 2^31-1 elements one call can move; split the buffer");
  return static_cast<int>(count);
}

size_t max_call_elements() {
  constexpr auto kIntMax = static_cast<size_t>(INT_MAX);
  const char* text = std::getenv("AUTOTRAIN_MPI_MAX_CALL_ELEMENTS");
  if (text == nullptr || *text == '\0') return kIntMax;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  AT_CHECK(*end == '\0' && value >= 1 && value <= kIntMax,
           "AUTOTRAIN_MPI_MAX_CALL_ELEMENTS: expected an integer in [1, ", kIntMax, "], got '",
           text, "'");
  return static_cast<size_t>(value);
}

void divide_in_place(void* data, size_t count, DType dtype, double divisor) {
  // Divide (not multiply by 1/n) so avg equals sum/n exactly rounded, as users compute it.
  const auto by = static_cast<float>(divisor);
  switch (dtype) {
    case DType::fp32: {
      std::span values(static_cast<float*>(data), count);
      for (float& value : values) value /= by;
      return;
    }
    case DType::bf16: {
      std::span values(static_cast<uint16_t*>(data), count);
      for (uint16_t& value : values) value = float_to_bf16(bf16_to_float(value) / by);
      return;
    }
    case DType::fp16: {
      std::span values(static_cast<uint16_t*>(data), count);
      for (uint16_t& value : values) value = float_to_fp16(fp16_to_float(value) / by);
      return;
    }
    case DType::int32:
    case DType::int64:
      break;
  }
  throw Error(cat("avg: cannot divide a ", dtype_name(dtype), " buffer"));
}

void widen(const void* from, float* to, size_t count, DType dtype) {
  if (dtype == DType::fp32) {
    std::memcpy(to, from, count * sizeof(float));
    return;
  }
  std::span source(static_cast<const uint16_t*>(from), count);
  for (size_t i = 0; i < count; ++i) {
    to[i] = dtype == DType::bf16 ? bf16_to_float(source[i]) : fp16_to_float(source[i]);
  }
}

void narrow(const float* from, void* to, size_t count, DType dtype) {
  if (dtype == DType::fp32) {
    std::memcpy(to, from, count * sizeof(float));
    return;
  }
  std::span target(static_cast<uint16_t*>(to), count);
  for (size_t i = 0; i < count; ++i) {
    target[i] = dtype == DType::bf16 ? float_to_bf16(from[i]) : float_to_fp16(from[i]);
  }
}

}  // namespace comm_detail
}  // namespace autotrain
