// doctor's munge row: a munge socket left without its daemon slows every MPI start
// (launch/munge.hpp).
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "autotrain/core/strings.hpp"
#include "autotrain/launch/munge.hpp"
#include "doctor_checks.hpp"
#include "gather_json.hpp"

namespace autotrain::cli {

DoctorRow check_munge(const DoctorContext& context) {
  const std::string socket = kMungeSocket;
  DoctorRow row{"munge", cat(context.topology.num_nodes, " node(s)"), Verdict::ok, ""};
  nlohmann::json mine = nlohmann::json::object();
  if (is_leader(context)) {
    std::string why;
    const SocketState state = probe_unix_socket(socket, &why);
    mine["state"] = state == SocketState::answers  ? "answers"
                    : state == SocketState::absent ? "absent"
                                                   : "refuses: " + why;
  }
  const auto all = gather_json(mine, context.world);
  if (all.empty()) return row;
  std::vector<std::string> stale;
  std::set<std::string> answering, seen;
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (!all[r].contains("state") || !seen.insert(context.hosts[r]).second) continue;
    const std::string state = all[r]["state"].get<std::string>();
    if (state == "answers") answering.insert(context.hosts[r]);
    if (state.starts_with("refuses")) stale.push_back(cat(context.hosts[r], " (", state, ")"));
  }
  if (stale.empty()) {
    row.detail = answering.empty()
                     ? cat("no munged socket at ", socket, ": PMIx uses its native security")
                     : cat("munged answers at ", socket, " on ", answering.size(), " node(s)");
    return row;
  }
  row.verdict = Verdict::warn;
  row.detail = cat(socket, " is there but no munged answers on ", join(stale, ", "),
                   ": every MPI process start waits about 2 s while PMIx's munge plugin retries; "
                   "start munged (systemctl start munge), remove the stale socket, or set "
                   "PMIX_MCA_psec=native for mpirun jobs");
  return row;
}

}  // namespace autotrain::cli
