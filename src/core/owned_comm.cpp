#include "autotrain/core/owned_comm.hpp"

#include <utility>

#include "autotrain/core/deadline.hpp"
#include "autotrain/core/error.hpp"

namespace autotrain {

OwnedComm OwnedComm::duplicate(MPI_Comm parent, std::string_view operation) {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Request request = MPI_REQUEST_NULL;
  AT_MPI_CHECK(MPI_Comm_idup(parent, &comm, &request));
  wait_or_abort(request, operation);
  return OwnedComm(comm);
}

OwnedComm OwnedComm::split(MPI_Comm parent, int color, int key) {
  MPI_Comm comm = MPI_COMM_NULL;
  AT_MPI_CHECK(MPI_Comm_split(parent, color, key, &comm));
  return OwnedComm(comm);
}

OwnedComm OwnedComm::split_by_node(MPI_Comm parent, int key) {
  MPI_Comm comm = MPI_COMM_NULL;
  AT_MPI_CHECK(MPI_Comm_split_type(parent, MPI_COMM_TYPE_SHARED, key, MPI_INFO_NULL, &comm));
  return OwnedComm(comm);
}

OwnedComm::~OwnedComm() {
  free();
}

OwnedComm::OwnedComm(OwnedComm&& other) noexcept
    : comm_(std::exchange(other.comm_, MPI_COMM_NULL)) {}

OwnedComm& OwnedComm::operator=(OwnedComm&& other) noexcept {
  if (this != &other) {
    free();
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
  }
  return *this;
}

// A failed free cannot be reported from a destructor, and after MPI_Finalize it must not run.
void OwnedComm::free() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  comm_ = MPI_COMM_NULL;
}

}  // namespace autotrain
