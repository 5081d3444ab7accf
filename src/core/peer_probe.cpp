#include "autotrain/core/peer_probe.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>

#include "autotrain/core/deadline.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain {
namespace {

constexpr int kPing = 0x5050;  // payload: the prober's round
constexpr int kPong = 0x5051;  // payload: the round answered
constexpr int kHostChars = 64;

// The process's probe: peer_probe_report asks it while it is alive.
std::mutex installed_mutex;
PeerProbe* installed = nullptr;

std::array<char, kHostChars> this_host() {
  std::array<char, kHostChars> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0 || name[0] == '\0') {
    std::copy_n("unknown host", 12, name.data());
  }
  name.back() = '\0';
  return name;
}

}  // namespace

PeerProbe::PeerProbe(MPI_Comm comm)
    : comm_(OwnedComm::duplicate(comm, "the peer probe's set-up")),
      rank_(comm_rank(comm_.get())),
      size_(comm_size(comm_.get())) {
  // A send to a crashed peer must come back as a silent rank, not end this process.
  AT_MPI_CHECK(MPI_Comm_set_errhandler(comm_.get(), MPI_ERRORS_RETURN));
  struct Identity {
    int world_rank;
    std::array<char, kHostChars> host;
  };
  const Identity mine{world_rank(), this_host()};
  std::vector<Identity> all(static_cast<size_t>(size_));
  MPI_Request request = MPI_REQUEST_NULL;
  AT_MPI_CHECK(MPI_Iallgather(&mine, sizeof(Identity), MPI_BYTE, all.data(), sizeof(Identity),
                              MPI_BYTE, comm_.get(), &request));
  wait_or_abort(request, "the peer probe's set-up");
  for (const Identity& identity : all) {
    world_ranks_.push_back(identity.world_rank);
    hosts_.emplace_back(identity.host.data());
  }
  answerer_ = std::thread([this] { answer(); });
  std::lock_guard lock(installed_mutex);
  installed = this;
}

PeerProbe::~PeerProbe() {
  {
    std::lock_guard lock(installed_mutex);
    if (installed == this) installed = nullptr;
  }
  stopping_ = true;
  answerer_.join();
}

void PeerProbe::answer() {
  struct Pong {
    int round = 0;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  std::vector<std::unique_ptr<Pong>> sending;
  while (!stopping_) {
    int arrived = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kPing, comm_.get(), &arrived, &status) != MPI_SUCCESS)
      arrived = 0;
    if (arrived) {
      auto pong = std::make_unique<Pong>();
      MPI_Recv(&pong->round, 1, MPI_INT, status.MPI_SOURCE, kPing, comm_.get(), MPI_STATUS_IGNORE);
      if (MPI_Isend(&pong->round, 1, MPI_INT, status.MPI_SOURCE, kPong, comm_.get(),
                    &pong->request) == MPI_SUCCESS) {
        sending.push_back(std::move(pong));
      }
      continue;  // answer a burst of probes at once
    }
    std::erase_if(sending, [](const std::unique_ptr<Pong>& pong) {
      int done = 0;
      return MPI_Test(&pong->request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // Answers still on their way to a peer that stopped: their buffers stay (a few bytes, and
  // only when the job is failing anyway).
  for (auto& pong : sending) {
    int done = 0;
    if (MPI_Test(&pong->request, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done) {
      pong.release();
    }
  }
}

std::vector<int> PeerProbe::silent_ranks(double grace_seconds) {
  static std::mutex probing;  // one round at a time (two watchdogs may expire together)
  static int next_round = 1;
  std::lock_guard lock(probing);
  // The pings' payload outlives this call when a ping to a stopped peer never leaves.
  auto* round = new int(next_round++);
  const auto peers = static_cast<size_t>(size_);
  std::vector<int> answers(peers, 0);
  std::vector<MPI_Request> receives(peers, MPI_REQUEST_NULL);
  std::vector<MPI_Request> pings(peers, MPI_REQUEST_NULL);
  std::vector<bool> answered(peers, false);
  answered[static_cast<size_t>(rank_)] = true;
  for (int peer = 0; peer < size_; ++peer) {
    const auto p = static_cast<size_t>(peer);
    if (peer == rank_) continue;
    MPI_Irecv(&answers[p], 1, MPI_INT, peer, kPong, comm_.get(), &receives[p]);
    MPI_Isend(round, 1, MPI_INT, peer, kPing, comm_.get(), &pings[p]);
  }
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(grace_seconds));
  auto waiting = [&] { return std::count(answered.begin(), answered.end(), false); };
  while (waiting() > 0 && Clock::now() < deadline) {
    for (size_t p = 0; p < peers; ++p) {
      if (answered[p] || receives[p] == MPI_REQUEST_NULL) continue;
      int done = 0;
      if (MPI_Test(&receives[p], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || !done) continue;
      if (answers[p] == *round) {
        answered[p] = true;
      } else {  // an answer to an earlier round: wait for this one's
        MPI_Irecv(&answers[p], 1, MPI_INT, static_cast<int>(p), kPong, comm_.get(), &receives[p]);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::vector<int> silent;
  for (size_t p = 0; p < peers; ++p) {
    if (answered[p]) continue;
    silent.push_back(world_ranks_[p]);
    if (receives[p] != MPI_REQUEST_NULL) {
      MPI_Cancel(&receives[p]);
      MPI_Wait(&receives[p], MPI_STATUS_IGNORE);
    }
  }
  int sent = 0;
  MPI_Testall(size_, pings.data(), &sent, MPI_STATUSES_IGNORE);
  if (sent) delete round;
  std::sort(silent.begin(), silent.end());
  return silent;
}

std::string PeerProbe::report(double grace_seconds) {
  if (size_ == 1) return {};
  const std::vector<int> silent = silent_ranks(grace_seconds);
  const std::string grace = cat(grace_seconds, " s");
  if (silent.empty()) {
    return cat("; every rank answered a probe within ", grace,
               ", so none is stopped or cut off: one is slow or waits in another collective");
  }
  std::set<std::string> hosts;
  for (size_t p = 0; p < world_ranks_.size(); ++p) {
    if (std::binary_search(silent.begin(), silent.end(), world_ranks_[p])) hosts.insert(hosts_[p]);
  }
  std::string on;
  for (const std::string& host : hosts) on += cat(on.empty() ? "" : ", ", host);
  return cat("; ", rank_list(silent), " (on ", on, ") did not answer a probe within ", grace,
             ": stopped, crashed or cut off from the network");
}

std::string peer_probe_report(double timeout_seconds) {
  std::lock_guard lock(installed_mutex);
  if (installed == nullptr) return {};
  return installed->report(std::clamp(timeout_seconds / 4, 1.0, 5.0));
}

}  // namespace autotrain
