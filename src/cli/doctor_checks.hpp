#pragma once
// The checks of `autotrain doctor` (docs/launching.md, "Preflight"). Each is collective over the
// job and returns its row on rank 0 (the other ranks' rows are empty): what was checked, on
// which nodes or ranks, the verdict and, for anything but ok, a hint. The checks measure with
// MPI directly (not a Communicator), so they work before anything else of a run is built.
#include <mpi.h>

#include <optional>
#include <string>
#include <vector>

#include "autotrain/launch/topology.hpp"
#include "autotrain/train/run_setup.hpp"

namespace autotrain::cli {

enum class Verdict { ok, warn, fail, skipped };
const char* verdict_name(Verdict verdict);  // "ok", "warn", "FAIL", "skipped"

struct DoctorRow {
  std::string check;
  std::string where;  // "4 ranks", "node1, node2"
  Verdict verdict = Verdict::ok;
  std::string detail;  // what was found, then the hint
};

// What the checks share: the job's communicators and what every rank knows of the others.
struct DoctorContext {
  MPI_Comm world = MPI_COMM_WORLD;
  MPI_Comm node = MPI_COMM_NULL;     // the ranks of this node
  MPI_Comm leaders = MPI_COMM_NULL;  // local rank 0 of every node (MPI_COMM_NULL elsewhere)
  Topology topology;
  std::optional<train::RunSetup> setup;  // empty when the configuration did not load
  std::vector<std::string> hosts;        // per rank
  double clock_warn_seconds = 0.5;
};

DoctorRow check_build(const DoctorContext& context);
DoctorRow check_launcher(const DoctorContext& context);
DoctorRow check_cpus(const DoctorContext& context);
DoctorRow check_gpus(const DoctorContext& context);
DoctorRow check_network(const DoctorContext& context);
DoctorRow check_master_port(const DoctorContext& context);
DoctorRow check_allreduce(const DoctorContext& context);
std::vector<DoctorRow> check_links(const DoctorContext& context);
// Whether this rank is its node's first (it holds context.leaders).
bool is_leader(const DoctorContext& context);
// The row of a check that needs the configuration, skipped when it did not load.
std::optional<DoctorRow> skipped_without_config(const DoctorContext& context,
                                                const std::string& check);
DoctorRow check_project_folder(const DoctorContext& context);
// Every node finds the same base model weights (a Hub cache on node-local disk would not);
// in doctor_base_model.cpp.
DoctorRow check_base_model(const DoctorContext& context);
DoctorRow check_clocks(const DoctorContext& context);
// A munge socket with no munged behind it on a node (launch/munge.hpp): a warning; in
// doctor_munge.cpp.
DoctorRow check_munge(const DoctorContext& context);

// "node1 (ranks 0-1), node2 (ranks 2-3)": where `ranks` (ascending) run.
std::string describe_ranks(const std::vector<std::string>& hosts, const std::vector<int>& ranks);

}  // namespace autotrain::cli
