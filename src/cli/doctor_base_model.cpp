// doctor's base model row: every node finds the same base weights.
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/train/pretrained.hpp"
#include "doctor_checks.hpp"
#include "gather_json.hpp"

namespace autotrain::cli {

using nlohmann::json;

DoctorRow check_base_model(const DoctorContext& context) {
  DoctorRow row{"base model", cat(context.topology.num_nodes, " node(s)"), Verdict::ok, ""};
  if (auto skipped = skipped_without_config(context, row.check)) return *skipped;
  const config::BaseModel& base = context.setup->resolved.base_model;
  if (base.from_scratch) {
    row.detail = cat(base.name, ": from scratch, ", base.describe(context.setup->params().seed));
    return row;
  }
  // Each node resolved the model itself (its own HF_HOME and cache): compare what they found.
  json mine = json::object();
  if (is_leader(context)) {
    mine["folder"] = base.folder.string();
    try {
      if (!base.folder.empty()) mine["hash"] = train::weights_hash(base.folder, MPI_COMM_SELF);
    } catch (const Error& error) {
      mine["error"] = error.what();
    }
  }
  const auto all = gather_json(mine, context.world);
  if (all.empty()) return row;
  std::vector<std::string> problems;
  std::set<std::string> seen;
  const std::string reference = all[0].value("hash", "");
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (!seen.insert(context.hosts[r]).second) continue;
    const std::string host = context.hosts[r];
    if (all[r].contains("error")) {
      problems.push_back(cat(host, ": ", all[r]["error"].get<std::string>()));
    } else if (all[r].value("folder", "").empty()) {
      problems.push_back(cat(host, ": not found"));
    } else if (all[r].value("hash", "") != reference) {
      problems.push_back(cat(host, ": other weights in ", all[r].value("folder", "")));
    }
  }
  if (problems.empty()) {
    row.detail = cat(base.name, ": ", base.folder.string(), " (", reference, ") on every node");
    return row;
  }
  row.verdict = Verdict::fail;
  row.detail =
      cat(join(problems, "; "), base.folder.empty() ? cat(" (", base.missing_message(), ")") : "");
  return row;
}

}  // namespace autotrain::cli
