#pragma once
// Run set-up's checks of ZeRO-Offload's settings (run_setup.cpp calls them): the stage and
// device each offload setting needs, and the NVMe folders.
#include "autotrain/train/run_setup.hpp"

namespace autotrain::train {

// offload_optimizer_device and offload_param_device against the stage, the device and each other
// (DeepSpeed's rules): an Error naming the setting and what it needs.
void check_offload(const RunSetup& setup);

// Offload to nvme: every rank's folder (nvme_path, "%r" = the rank) node-local, writable and with
// room for the rank's file, checked on every rank before any engine creates one. Collective.
void check_nvme_folder(const RunSetup& setup);

}  // namespace autotrain::train
