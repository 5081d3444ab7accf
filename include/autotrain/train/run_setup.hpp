#pragma once
// Everything a run decides before it touches data: the resolved parameters (with where each
// value came from), the rank topology, the communicator, the ZeRO stage and the threads. This
// is what `autotrain train --dry-run` prints, so a batch user can check the plan before
// spending an allocation on it.
#include <mpi.h>

#include <filesystem>
#include <string>

#include "autotrain/comm/backend.hpp"
#include "autotrain/comm/communicator.hpp"
#include "autotrain/config/command_line.hpp"
#include "autotrain/config/load.hpp"
#include "autotrain/data/preference.hpp"
#include "autotrain/data/prepare.hpp"
#include "autotrain/launch/topology.hpp"
#include "autotrain/model/config.hpp"
#include "autotrain/model/recompute.hpp"
#include "autotrain/optim/schedule.hpp"
#include "autotrain/zero/engine.hpp"

namespace autotrain::train {

// Where the model runs (`device`, resolved: never `auto`) and its compute precision
// (`mixed_precision`: fp32 master weights and optimizer state in every case).
enum class Device { cpu, cuda };
enum class Precision { fp32, bf16, fp16 };
const char* precision_name(Precision precision);  // "fp32", "bf16", "fp16"

// What a node's first rank says when the node's ranks run more OpenMP threads than it has cores
// (node_ranks × threads > node_cores, threads > 1) while OpenMP threads spin as they wait
// (OMP_WAIT_POLICY unset or active; `omp_wait_policy` null when unset): the spinning threads then
// hold the cores that the other ranks' threads need (docs/benchmarks.md, "OpenMP wait policy").
// Empty when there is nothing to say.
std::string oversubscription_warning(int node_ranks, int threads, int node_cores,
                                     const char* omp_wait_policy);

// The ranks a run trains on: the whole job, or this rank's model group of it when an allocation
// trains several models (model_group.hpp).
struct RunRanks {
  MPI_Comm comm = MPI_COMM_WORLD;
  int model = -1;                 // this run's model among several (model-<k>/), or -1
  const Topology* job = nullptr;  // with a model: the whole job's topology
};

struct RunSetup {
  config::ResolvedParams resolved;
  // The ranks of this run: the world, or this rank's model group when an allocation trains
  // several models (model_group.hpp). Every collective of the run is over `comm`; `topology`
  // ranks are ranks in it.
  MPI_Comm comm = MPI_COMM_WORLD;
  int model = -1;                     // this run's model among several (model-<k>/), or -1
  std::filesystem::path project_dir;  // <project_name>/, or <project_name>/model-<k>/
  Topology topology;
  int node_ranks = 1;  // the job's ranks on this node (all models'): they share its cores
  CommBackend comm_backend = CommBackend::mpi;  // resolved: never `automatic`
  Device device = Device::cpu;
  Precision precision = Precision::fp32;
  int zero_stage = 0;
  int threads = 1;             // CPU threads of this rank
  std::string threads_source;  // "--threads", "OMP_NUM_THREADS", "CPU affinity / ranks per node"
  bool allow_changed_params = false;  // --allow-changed-params (param_changes.hpp)

  const config::TrainingParams& params() const { return resolved.params; }
};

// Collective over `ranks.comm` (the job, or one model's group): loads and validates the
// parameters on every rank (a failure on any rank is a CollectiveError on all), discovers and
// exports the topology, checks the parameters against it and across ranks, picks the
// communicator and the threads.
RunSetup setup_run(const config::TrainCommandLine& command_line, const RunRanks& ranks = {});

// What the parameters mean for the parts a run builds (the trainer and `bench train` build them
// the same way): the model (validated: the base model folder's family and options, with the
// shape keys of the parameters; GPT-2 for a preset), the communicator's options, the engine's
// options.
model::ModelConfig model_config(const config::ResolvedParams& resolved);
// The model's activation checkpointing: recompute, or where it is still auto (parameters not
// resolved) what disable_gradient_checkpointing makes of it.
model::Recompute recompute_mode(const config::TrainingParams& params);
CommOptions comm_options(const RunSetup& setup);
zero::EngineOptions engine_options(const RunSetup& setup);
// The learning-rate schedule of `params` over `total_steps` optimizer steps.
LrSchedule lr_schedule(const config::TrainingParams& params, long long total_steps);
// How the run turns data_path into token shards in the project folder.
data::PrepareOptions prepare_options(const RunSetup& setup);
// The preference pairs' options (trainers dpo, orpo and reward): prepare_options with AutoTrain's
// prompt_text_column, text_column (chosen) and rejected_text_column, max_prompt_length,
// max_completion_length and max_length = block_size; reward mode with trainer reward.
data::PreferenceOptions preference_options(const RunSetup& setup);

// The plan as rank 0 prints it: job shape, communicator, ZeRO stage, batch arithmetic, then
// every parameter with its value and source. `checks`: lines of what was checked (dry_run.hpp),
// printed after the job's shape.
std::string render_plan(const RunSetup& setup, const std::string& checks = {});

}  // namespace autotrain::train
