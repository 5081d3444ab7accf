// Run set-up's checks of the offload settings (offload_setup.hpp).
#include "offload_setup.hpp"

#include <filesystem>
#include <string>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/optim/optimizer.hpp"
#include "autotrain/train/memory_plan.hpp"
#include "autotrain/zero/nvme_folder.hpp"

namespace autotrain::train {

void check_offload(const RunSetup& setup) {
  const auto& params = setup.params();
  const std::string& optimizer = params.offload_optimizer_device;
  const std::string& param = params.offload_param_device;
  const int64_t stage = params.zero_stage;
  if (optimizer != "none" && stage == 0) {
    throw Error(cat("offload_optimizer_device ", optimizer,
                    " offloads a rank's shard of the optimizer state: it needs zero_stage 1, 2 "
                    "or 3, got 0"));
  }
  if (param != "none" && stage != 3) {
    throw Error(cat("offload_param_device ", param,
                    " offloads a rank's shard of the parameters: it needs zero_stage 3, got ",
                    stage));
  }
  if ((optimizer == "nvme" || param == "nvme") && params.nvme_path.empty()) {
    throw Error("offload to nvme needs nvme_path, a node-local folder for the scratch files");
  }
  if (optimizer == "nvme" &&
      parse_optimizer(params.optimizer, "optimizer") != OptimizerKind::adamw) {
    throw Error(cat("offload_optimizer_device nvme keeps AdamW's 32-bit moments; optimizer is ",
                    params.optimizer,
                    parse_optimizer(params.optimizer, "optimizer") == OptimizerKind::adamw_8bit
                        ? " (8-bit moments, not built with nvme offload: its state is a quarter "
                          "of AdamW's already; use offload_optimizer_device none, or optimizer "
                          "adamw)"
                        : ""));
  }
  if (setup.device == Device::cpu) {
    if (param != "none") {
      throw Error(cat("offload_param_device ", param,
                      ": a CPU run's parameters are in host memory already; only "
                      "offload_optimizer_device nvme moves state off a CPU rank"));
    }
    if (optimizer == "cpu" && setup.topology.rank == 0) {
      log::info(
          "offload_optimizer_device cpu: a CPU run's optimizer state is in host memory "
          "already; nothing moves");
    }
    return;
  }
  if (optimizer == "cpu" &&
      parse_optimizer(params.optimizer, "optimizer") == OptimizerKind::adamw_8bit) {
    throw Error(cat("offload_optimizer_device cpu with optimizer ", params.optimizer,
                    ": the offloaded step on the host is AdamW's 32-bit one; use "
                    "offload_optimizer_device none (the 8-bit state is a quarter of AdamW's), or "
                    "optimizer adamw"));
  }
  if (param != "none" && optimizer == "none") {
    throw Error(cat("offload_param_device ", param,
                    " keeps the parameters the optimizer updates in host memory: set "
                    "offload_optimizer_device cpu too"));
  }
}

void check_nvme_folder(const RunSetup& setup) {
  const auto& params = setup.params();
  if (params.offload_optimizer_device != "nvme" && params.offload_param_device != "nvme") return;
  std::string failure;
  std::filesystem::path folder;
  try {
    folder = zero::nvme_rank_folder(params.nvme_path, setup.topology.rank);
  } catch (const Error& error) {
    failure = error.what();
  }
  agree_or_throw(failure.empty(), failure, setup.comm, "the nvme_path folders");
  const auto comm = make_communicator(CommBackend::mpi, setup.comm, CommOptions{});
  zero::check_node_local(folder, *comm);
  const model::ParamLayout layout(model_config(setup.resolved), setup.topology.world_size);
  const double needed =
      static_cast<double>(layout.num_parameters()) *
      state_bytes_per_parameter(setup, params.offload_optimizer_device, params.offload_param_device)
          .nvme;
  std::error_code error;
  const auto space = std::filesystem::space(folder, error);
  if (!error && static_cast<double>(space.available) < needed) {
    failure = cat("nvme_path ", folder.string(), ": rank ", setup.topology.rank, " needs ",
                  human_bytes(needed), " for its optimizer state but the file system has ",
                  human_bytes(static_cast<double>(space.available)), " free");
  }
  agree_or_throw(failure.empty(), failure, setup.comm, "the room under nvme_path");
}

}  // namespace autotrain::train
