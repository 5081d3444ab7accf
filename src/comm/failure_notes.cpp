#include "failure_notes.hpp"

#include "autotrain/core/deadline.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"

namespace autotrain::comm_detail {
namespace {

constexpr int kNoteTag = 1;  // the notes' communicator carries nothing else

}  // namespace

FailureNotes::FailureNotes(MPI_Comm parent)
    : comm_(OwnedComm::duplicate(parent, "communicator set-up (MPI_Comm_dup)")),
      rank_(comm_rank(comm_.get())),
      size_(comm_size(comm_.get())),
      heard_(static_cast<size_t>(size_), false) {}

FailureNotes::~FailureNotes() {
  // Sends still pending here mean settle() was skipped by an error that ends the job: let them
  // complete in the background rather than leak their requests.
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (MPI_Request& send : sends_) {
    if (send != MPI_REQUEST_NULL) MPI_Request_free(&send);
  }
}

void FailureNotes::announce(const std::string& message) {
  if (announced_) return;
  announced_ = true;
  sent_ = message.substr(0, kMaxBytes);
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    sends_.push_back(MPI_REQUEST_NULL);
    AT_MPI_CHECK(MPI_Isend(sent_.data(), static_cast<int>(sent_.size()), MPI_CHAR, peer, kNoteTag,
                           comm_.get(), &sends_.back()));
  }
}

std::optional<FailureNote> FailureNotes::poll() {
  // A matched probe: the message found is the one received, whatever other threads do.
  int found = 0;
  MPI_Message message = MPI_MESSAGE_NULL;
  MPI_Status status;
  AT_MPI_CHECK(MPI_Improbe(MPI_ANY_SOURCE, kNoteTag, comm_.get(), &found, &message, &status));
  if (!found) return std::nullopt;
  int bytes = 0;
  AT_MPI_CHECK(MPI_Get_count(&status, MPI_CHAR, &bytes));
  FailureNote note{status.MPI_SOURCE, std::string(static_cast<size_t>(bytes), '\0')};
  AT_MPI_CHECK(MPI_Mrecv(note.message.data(), bytes, MPI_CHAR, &message, MPI_STATUS_IGNORE));
  heard_[static_cast<size_t>(note.rank)] = true;
  return note;
}

void FailureNotes::settle() {
  // Who announced: each rank then knows which notes are still on their way to it.
  int mine = announced_ ? 1 : 0;
  std::vector<int> announced(static_cast<size_t>(size_), 0);
  MPI_Request gather = MPI_REQUEST_NULL;
  AT_MPI_CHECK(
      MPI_Iallgather(&mine, 1, MPI_INT, announced.data(), 1, MPI_INT, comm_.get(), &gather));
  wait_or_abort(gather, "failure notes (who announced)");

  // Wait for this rank's sends (to every other rank in order) and for the unheard notes.
  std::vector<MPI_Request> requests = sends_;
  std::vector<int> peers;
  for (size_t i = 0; i < sends_.size(); ++i) {
    const int peer = static_cast<int>(i);
    peers.push_back(peer < rank_ ? peer : peer + 1);
  }
  std::vector<std::string> unheard;
  unheard.reserve(static_cast<size_t>(size_));  // the receive buffers must not move
  for (int peer = 0; peer < size_; ++peer) {
    const auto at = static_cast<size_t>(peer);
    if (peer == rank_ || announced[at] == 0 || heard_[at]) continue;
    unheard.emplace_back(static_cast<size_t>(kMaxBytes), '\0');
    requests.push_back(MPI_REQUEST_NULL);
    peers.push_back(peer);
    AT_MPI_CHECK(MPI_Irecv(unheard.back().data(), kMaxBytes, MPI_CHAR, peer, kNoteTag, comm_.get(),
                           &requests.back()));
    heard_[at] = true;
  }
  wait_or_abort(requests, peers, "failure notes (delivering them)");
  sends_.clear();
}

}  // namespace autotrain::comm_detail
