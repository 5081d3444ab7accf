#pragma once
// The CUDA replica (src/train/gpu/replica.cpp): the layout's family's device model
// (model::gpu::DeviceGpt2 or DeviceLlama, model/gpu/causal_lm.hpp) over the device engine of
// zero/gpu/, in the precision setup.precision names, with the activation checkpointing of
// `recompute` (train::recompute_mode); with LoRA (lora not null) the model is the base's, over
// model::gpu::DeviceLoraAccess between it and the engine, which then trains the adapters and
// holds the frozen base in the compute type. Builds with CUDA only.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <memory>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/train/lora.hpp"
#include "autotrain/train/replica.hpp"
#include "autotrain/train/run_setup.hpp"

namespace autotrain::train {

// Binds this thread to setup.topology.device and allocates every device buffer of the run.
std::unique_ptr<Replica> make_gpu_replica(const RunSetup& setup, const model::ParamLayout& layout,
                                          Communicator& comm, int B, int T, const LoraModel* lora);

}  // namespace autotrain::train
#endif
