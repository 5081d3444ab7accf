#pragma once
// The CUDA replica (src/train/cuda_replica.cpp): model::gpu::DeviceGpt2 over the device
// engine of zero/cuda/, in the precision setup.precision names. Builds with CUDA only.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <memory>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/train/replica.hpp"
#include "autotrain/train/run_setup.hpp"

namespace autotrain::train {

// Binds this thread to setup.topology.device and allocates every device buffer of the run.
std::unique_ptr<Replica> make_cuda_replica(const RunSetup& setup, const model::ParamLayout& layout,
                                           Communicator& comm, int B, int T);

}  // namespace autotrain::train
#endif
