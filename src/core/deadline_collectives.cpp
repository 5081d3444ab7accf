// The blocking collectives of set-up, agreements and checkpoint I/O as a non-blocking call and a
// wait under the collective timeout (deadline.hpp): a rank that never arrives ends the job.
#include "autotrain/core/deadline.hpp"
#include "autotrain/core/error.hpp"

namespace autotrain {

void broadcast_or_abort(void* data, int count, MPI_Datatype type, int root, MPI_Comm comm,
                        std::string_view operation) {
  MPI_Request request = MPI_REQUEST_NULL;
  AT_MPI_CHECK(MPI_Ibcast(data, count, type, root, comm, &request));
  wait_or_abort(request, operation);
}

std::string broadcast_string_or_abort(std::string text, int root, MPI_Comm comm,
                                      std::string_view operation) {
  uint64_t length = text.size();
  broadcast_or_abort(&length, 1, MPI_UINT64_T, root, comm, operation);
  text.resize(length);
  broadcast_or_abort(text.data(), static_cast<int>(length), MPI_CHAR, root, comm, operation);
  return text;
}

void allreduce_or_abort(void* data, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                        std::string_view operation) {
  MPI_Request request = MPI_REQUEST_NULL;
  AT_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, data, count, type, op, comm, &request));
  wait_or_abort(request, operation);
}

void allgather_or_abort(const void* mine, int count, MPI_Datatype type, void* all, MPI_Comm comm,
                        std::string_view operation) {
  MPI_Request request = MPI_REQUEST_NULL;
  AT_MPI_CHECK(MPI_Iallgather(mine, count, type, all, count, type, comm, &request));
  wait_or_abort(request, operation);
}

void allgatherv_or_abort(const void* mine, int count, MPI_Datatype type, void* all,
                         const int* counts, const int* displacements, MPI_Comm comm,
                         std::string_view operation) {
  MPI_Request request = MPI_REQUEST_NULL;
  AT_MPI_CHECK(
      MPI_Iallgatherv(mine, count, type, all, counts, displacements, type, comm, &request));
  wait_or_abort(request, operation);
}

}  // namespace autotrain
