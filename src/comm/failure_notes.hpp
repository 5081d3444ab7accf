#pragma once
// Failure notes: while the ranks of a communicator wait in a phase that cannot see a peer's
// failure (NCCL's init waits in its bootstrap for a rank that gave up), a rank that fails tells
// the others at once, so they stop waiting instead of running into comm_timeout.
//
// The notes travel on their own duplicate of the communicator, so they never match other
// traffic. A failing rank announce()s; the others poll() between their checks; once every rank
// knows the phase failed (an agreement), all of them settle(), which completes every note sent
// and receives every note not yet heard, so no request or message outlives the notes. On
// success nobody announced and nothing is in flight: settle() is not needed.
#include <mpi.h>

#include <optional>
#include <string>
#include <vector>

#include "internal.hpp"

namespace autotrain::comm_detail {

struct FailureNote {
  int rank;             // in the parent communicator
  std::string message;  // what that rank reports (cut at FailureNotes::kMaxBytes)
};

class FailureNotes {
 public:
  static constexpr int kMaxBytes = 4096;  // notes stay short, so sends complete at once

  // Collective over `parent` (an MPI_Comm_dup under the collective timeout).
  explicit FailureNotes(MPI_Comm parent);
  ~FailureNotes();
  FailureNotes(const FailureNotes&) = delete;
  FailureNotes& operator=(const FailureNotes&) = delete;

  // Sends `message` to every other rank without waiting; once per rank at most.
  void announce(const std::string& message);
  // A note that has arrived from another rank, if any; never waits.
  std::optional<FailureNote> poll();
  // Collective, on every rank, once the phase is known to have failed: completes this rank's
  // sends and receives the notes it has not heard yet, all under the collective timeout.
  void settle();

 private:
  OwnedComm comm_;
  int rank_;
  int size_;
  bool announced_ = false;
  std::string sent_;                // announce()'s text, alive until its sends complete
  std::vector<MPI_Request> sends_;  // to every other rank in rank order, once announced
  std::vector<bool> heard_;         // heard_[r]: rank r's note was received
};

}  // namespace autotrain::comm_detail
