#pragma once
// Shared by the backends inside src/comm/ (not a public header).
#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string_view>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/core/dtype.hpp"
#include "autotrain/core/owned_comm.hpp"

namespace autotrain::comm_detail {

std::unique_ptr<Communicator> make_mpi_communicator(MPI_Comm comm, const CommOptions& options);
std::unique_ptr<Communicator> make_gloo_communicator(MPI_Comm comm, const CommOptions& options);
#ifdef AUTOTRAIN_HAVE_NCCL
std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm comm, const CommOptions& options);
#endif

// avg is a float-only reduction (an integer mean would silently truncate): throws Error.
void check_reduction(std::string_view backend, std::string_view operation, DType dtype,
                     ReduceOp op);

// MPI and the backends' own bookkeeping take int counts.
int checked_int_count(size_t count, std::string_view operation);

// The most elements one MPI call moves: INT_MAX; the mpi backend splits larger buffers. Tests
// lower it with AUTOTRAIN_MPI_MAX_CALL_ELEMENTS to exercise the splitting on small buffers.
size_t max_call_elements();

// data[i] /= divisor for a host buffer of a floating-point dtype (the second half of avg).
void divide_in_place(void* data, size_t count, DType dtype, double divisor);

// fp32, bf16 or fp16 host values to fp32 and back (rounding to nearest even): the backends
// reduce 16-bit buffers in fp32 and round once.
void widen(const void* from, float* to, size_t count, DType dtype);
void narrow(const float* from, void* to, size_t count, DType dtype);

}  // namespace autotrain::comm_detail
