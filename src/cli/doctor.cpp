// `autotrain doctor`: the preflight of a job, run with the job's own launcher line and options
// (`srun autotrain doctor --config x.yaml`): the same build and configuration on every rank, the
// launcher's topology, cores and GPUs per rank, the address Gloo would use and the master port,
// allreduce and link bandwidths, a project folder that every node shares, and the nodes'
// clocks. Rank 0 prints one table; the job exits 1 when a check fails (a warning does not).
#include <iomanip>
#include <iostream>
#include <sstream>

#include "autotrain/cli/commands.hpp"
#include "autotrain/comm/backend.hpp"
#include "autotrain/config/command_line.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/owned_comm.hpp"
#include "autotrain/launch/discover.hpp"
#include "autotrain/train/run_setup.hpp"
#include "doctor_checks.hpp"
#include "gather_json.hpp"

namespace autotrain::cli {
namespace {

std::string help_text() {
  return "autotrain doctor [train options]\n\n"
         "Checks what a training job depends on, under the job's own launcher line and options\n"
         "(srun autotrain doctor --config x.yaml; mpirun -np 8 autotrain doctor ...): the same\n"
         "build and configuration on every rank, the topology, cores and GPUs per rank, the\n"
         "network address Gloo uses and the master port, allreduce and link bandwidths, the\n"
         "project folder (shared by every node, and its write speed), and the nodes' clocks.\n"
         "Prints one table on rank 0 and exits 1 when a check fails. Takes every option of\n"
         "'autotrain train' (see 'autotrain train --help'); nothing is trained or written but a\n"
         "few probe files in the project folder, removed again.\n";
}

std::string render(const std::vector<DoctorRow>& rows) {
  std::size_t check = 5;
  std::size_t where = 5;
  for (const auto& row : rows) {
    check = std::max(check, row.check.size());
    where = std::max(where, row.where.size());
  }
  std::ostringstream out;
  out << std::left << std::setw(static_cast<int>(check) + 2) << "check"
      << std::setw(static_cast<int>(where) + 2) << "where" << std::setw(9) << "result"
      << "details and hints\n";
  for (const auto& row : rows) {
    out << std::setw(static_cast<int>(check) + 2) << row.check
        << std::setw(static_cast<int>(where) + 2) << row.where << std::setw(9)
        << verdict_name(row.verdict) << row.detail << "\n";
  }
  return out.str();
}

// The checks that need nothing but MPI come first, so a broken configuration still shows them.
std::vector<DoctorRow> run_checks(const config::TrainCommandLine& command_line) {
  DoctorContext context;
  std::vector<DoctorRow> rows;
  const int rank = comm_rank(MPI_COMM_WORLD);
  const OwnedComm node = OwnedComm::split_by_node(MPI_COMM_WORLD, rank);
  context.node = node.get();
  const int local_rank = comm_rank(context.node);
  const OwnedComm leaders =
      OwnedComm::split(MPI_COMM_WORLD, local_rank == 0 ? 0 : MPI_UNDEFINED, rank);
  context.leaders = leaders.get();
  try {
    context.topology = discover_topology(MPI_COMM_WORLD);
  } catch (const CollectiveError& error) {
    rows.push_back({"launcher", "every rank", Verdict::fail, error.what()});
    return rows;
  }
  for (const auto& host : gather_json({{"host", context.topology.hostname}}, MPI_COMM_WORLD)) {
    context.hosts.push_back(host["host"]);
  }
  rows.push_back(check_build(context));
  rows.push_back(check_launcher(context));
  try {
    context.setup.emplace(train::setup_run(command_line));
    const auto& params = context.setup->params();
    rows.push_back(
        {"config", cat(context.topology.world_size, " rank(s)"), Verdict::ok,
         cat("the same parameters on every rank: project ", params.project_name, ", ",
             comm_backend_name(context.setup->comm_backend), ", ZeRO stage ",
             context.setup->zero_stage, ", ", context.setup->threads, " thread(s) per rank")});
    context.topology = context.setup->topology;  // with master_port from the configuration
  } catch (const CollectiveError& error) {
    rows.push_back({"config", "every rank", Verdict::fail, error.what()});
  }
  rows.push_back(check_cpus(context));
  rows.push_back(check_gpus(context));
  rows.push_back(check_network(context));
  rows.push_back(check_master_port(context));
  rows.push_back(check_allreduce(context));
  for (auto& row : check_links(context)) rows.push_back(std::move(row));
  rows.push_back(check_project_folder(context));
  rows.push_back(check_base_model(context));
  rows.push_back(check_clocks(context));
  rows.push_back(check_munge(context));
  return rows;
}

// What no check can see: a rank stopped before MPI_Init returns runs nothing of autotrain's, so
// comm_timeout cannot end the job; only the launcher can.
constexpr const char* kBeforeMpiInitNote =
    "note: a rank that stops or hangs before MPI_Init returns is out of autotrain's reach "
    "(comm_timeout starts after it): give the job a time limit (sbatch --time, srun "
    "--kill-on-bad-exit=1, mpirun --timeout SECONDS); docs/launching.md, \"Hangs before "
    "autotrain starts\"\n";

}  // namespace

int run_doctor(const std::vector<std::string>& args, MpiSession& mpi) {
  config::TrainCommandLine command_line;
  try {
    command_line = config::parse_train_command_line(args);
  } catch (const Error& error) {
    throw UsageError(cat(error.what(), "\nrun 'autotrain doctor --help'"));
  }
  if (command_line.help) {
    if (mpi.rank() == 0) std::cout << help_text();
    return 0;
  }
  const std::vector<DoctorRow> rows = run_checks(command_line);
  int failed = 0;
  for (const auto& row : rows) failed += row.verdict == Verdict::fail ? 1 : 0;
  if (mpi.rank() == 0) {
    std::cout << render(rows) << kBeforeMpiInitNote
              << (failed == 0 ? "doctor: every check passed\n"
                              : cat("doctor: ", failed, " check(s) failed\n"))
              << std::flush;
  }
  // Every rank leaves with rank 0's verdict (only rank 0 evaluated the rows).
  AT_MPI_CHECK(MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD));
  return failed == 0 ? 0 : 1;
}

}  // namespace autotrain::cli
