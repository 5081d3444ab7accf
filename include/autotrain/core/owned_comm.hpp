#pragma once
// An MPI communicator this process made from another (MPI_Comm_dup, MPI_Comm_split,
// MPI_Comm_split_type): freed when it goes, unless MPI is already finalized. A rank that a split
// leaves out holds MPI_COMM_NULL, which frees nothing. It lives in core, beside the deadlines,
// so that every layer that makes a communicator (core's peer probe, launch's topology discovery,
// comm's backends, the trainer's checkpoint saver and model groups, the CLI) owns it the one way.
#include <mpi.h>

#include <string_view>

namespace autotrain {

class OwnedComm {
 public:
  OwnedComm() = default;  // MPI_COMM_NULL
  // MPI_Comm_dup of `parent` under the collective timeout (MPI_Comm_idup, then wait_or_abort,
  // which names `operation` if it expires).
  static OwnedComm duplicate(MPI_Comm parent, std::string_view operation);
  // MPI_Comm_split of `parent`; MPI_COMM_NULL on the ranks whose `color` is MPI_UNDEFINED.
  static OwnedComm split(MPI_Comm parent, int color, int key);
  // MPI_Comm_split_type(MPI_COMM_TYPE_SHARED): the ranks of `parent` on this node, by `key`.
  static OwnedComm split_by_node(MPI_Comm parent, int key);

  ~OwnedComm();
  OwnedComm(OwnedComm&& other) noexcept;
  OwnedComm& operator=(OwnedComm&& other) noexcept;
  OwnedComm(const OwnedComm&) = delete;
  OwnedComm& operator=(const OwnedComm&) = delete;

  MPI_Comm get() const { return comm_; }

 private:
  explicit OwnedComm(MPI_Comm comm) : comm_(comm) {}
  void free();

  MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace autotrain
