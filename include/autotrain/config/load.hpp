#pragma once
// Loading, resolving and validating TrainingParams, with the provenance of every value.
//
// Precedence (lowest to highest): defaults < training_params.json (--training-config) < YAML
// (--config) < command-line flags. Every source is checked completely, even where a higher one
// overrides it, so a typo never hides. Bad input throws autotrain::Error naming the file or
// flag, the key, the value and what was expected (callers decide whether it is collective).
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autotrain/config/base_model.hpp"
#include "autotrain/config/training_params.hpp"
#include "autotrain/launch/topology.hpp"

namespace autotrain::config {

// One parameter given on the command line.
struct FlagValue {
  std::string name;      // snake case: "batch_size"
  std::string spelling;  // as typed: "--batch-size"
  std::string text;      // "8"; "true" for a bare boolean flag
};

struct ConfigInputs {
  std::filesystem::path yaml;             // --config; empty = none
  std::filesystem::path training_params;  // --training-config; empty = none
  std::vector<FlagValue> flags;
  // What this run's model changes in a sweep or num_models > 1 (sweep.hpp): applied last.
  std::vector<FlagValue> model_changes = {};
};

// Parameter name -> where its value came from: "default", "derived from distributed_backend",
// "runs/x/training_params.json", "configs/x.yaml:params.lr", "--lr".
using Provenance = std::map<std::string, std::string, std::less<>>;

struct ResolvedParams {
  TrainingParams params;
  Provenance provenance;           // an entry for every parameter
  std::vector<std::string> notes;  // keys accepted but ignored on purpose, and why
  BaseModel base_model;            // where `model` was found (filled by resolve_params)
};

// Defaults with provenance "default".
ResolvedParams default_params();

// Each applies one source on top of `into` (later calls win) and records provenance.
void apply_json_file(ResolvedParams& into, const std::filesystem::path& path);
void apply_yaml_file(ResolvedParams& into, const std::filesystem::path& path);
void apply_flags(ResolvedParams& into, const std::vector<FlagValue>& flags);

// Locates the base model (base_model), then fills the derived values (-1 sentinels the config
// owns: model shape, vocab_size, block_size, zero_stage; the base model folder's tokenizer when
// tokenizer is not given; eval_strategy "no" without valid_split) and then validates. Pretrained
// weights that are missing are not an error here (a dry run shows it; training refuses).
// read_shape reads a model folder's shape (model::folder_shape; the families are a layer above).
void resolve_params(ResolvedParams& resolved, const FolderShapeReader& read_shape);

// Combination checks on resolved parameters (n_embd divisible by n_head, block_size within the
// model's context, ...). Messages name each value's source.
void validate_params(const ResolvedParams& resolved);

// defaults -> JSON -> YAML -> flags -> model changes -> resolve_params(). What `train` calls.
ResolvedParams load_params(const ConfigInputs& inputs, const FolderShapeReader& read_shape);

// An accelerate config's num_processes (-1 when it has none): what `autotrain llm` started
// without a launcher starts, as `accelerate launch --config_file` does. Throws Error naming the
// file when it cannot be read or the value is not a count.
int accelerate_num_processes(const std::filesystem::path& path);

// Checks against the job: num_nodes x num_gpus_per_node must equal world_size when both are
// given, and each alone must divide it.
void validate_for_world(const TrainingParams& params, int world_size);
// global_batch_size, when given, sets gradient_accumulation for this world size (provenance
// "derived from global_batch_size ..."); throws Error naming the sizes that would divide it.
void derive_for_world(ResolvedParams& resolved, int world_size);
// validate_for_world() plus num_nodes and num_gpus_per_node against what the launcher made.
void validate_for_topology(const TrainingParams& params, const Topology& topology);

// The parameters as a flat JSON object in table order (what training_params.json holds; also
// the canonical form hashed across ranks).
nlohmann::ordered_json to_json(const TrainingParams& params);

// Writes to_json(params) pretty-printed to `path` (parent folders created; written to a
// temporary name and renamed so a reader never sees half a file). Loading it back with
// --training-config reproduces `params` exactly.
// `record`: keys written after the parameters, about the run rather than settings of it
// (base_model_path, base_model_weights); reading the file back ignores them.
void write_training_params(const TrainingParams& params, const std::filesystem::path& path,
                           const nlohmann::ordered_json& record = nlohmann::ordered_json::object());

// The dry-run table: one line per parameter with its value and source.
std::string render_params_table(const ResolvedParams& resolved);

}  // namespace autotrain::config
