// Resolution of derived values, combination checks, the job checks, and output of the
// resolved parameters (training_params.json and the dry-run table).
#include <unistd.h>

#include <algorithm>
#include <array>
#include <fstream>

#include "autotrain/config/load.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"
#include "file_settings.hpp"

namespace autotrain::config {

namespace {

namespace fs = std::filesystem;

// GPT-2's context, and AutoTrain's cap on block_size when it is -1.
constexpr int64_t kMaxDefaultBlockSize = 1024;

const std::string& source_of(const ResolvedParams& resolved, std::string_view name) {
  static const std::string kDefault = "default";
  const auto found = resolved.provenance.find(name);
  return found == resolved.provenance.end() ? kDefault : found->second;
}

// "n_head 3 (from --n-head)", "n_head 12 (derived from model (gpt2))": a value with its
// source, for combination errors.
std::string shown(const ResolvedParams& resolved, std::string_view name) {
  const ParamSpec& spec = *find_param(name);
  const std::string& source = source_of(resolved, name);
  const bool plain = source == "default" || source.starts_with("derived");
  return cat(name, " ", format_value(get_value(resolved.params, spec)), " (", plain ? "" : "from ",
             source, ")");
}

// Sources by precedence: defaults < training_params.json < YAML < flags.
int precedence(const std::string& source) {
  if (source == "default") return 0;
  if (source.starts_with("--")) return 3;
  return source.ends_with(".json") ? 1 : 2;
}

void derive(ResolvedParams& resolved, int64_t& field, std::string_view name, int64_t value,
            const std::string& source) {
  if (field != -1) return;
  field = value;
  resolved.provenance[std::string(name)] = source;
}

// The shape from a preset, as before base models had folders.
void derive_preset_shape(ResolvedParams& resolved) {
  TrainingParams& params = resolved.params;
  const BaseModel& base = resolved.base_model;
  const ModelPreset* preset = find_model_preset(params.model);
  if (preset == nullptr) {
    if (base.pretrained()) throw Error(base.missing_message());
    throw Error(cat("base_model ", params.model,
                    ": no such model folder, not in the Hugging Face cache and not a preset "
                    "(gpt2, gpt2-medium, gpt2-large, gpt2-xl, tiny): from_scratch takes the "
                    "architecture from one of those"));
  }
  const std::string from_model = cat("derived from model (", params.model, ")");
  derive(resolved, params.n_layer, "n_layer", preset->n_layer, from_model);
  derive(resolved, params.n_head, "n_head", preset->n_head, from_model);
  derive(resolved, params.n_embd, "n_embd", preset->n_embd, from_model);
  derive(resolved, params.n_positions, "n_positions", preset->n_positions, from_model);
  derive(resolved, params.vocab_size, "vocab_size", tokenizer_vocab_size(params.tokenizer),
         cat("derived from tokenizer (", params.tokenizer, ")"));
  derive(resolved, params.block_size, "block_size",
         std::min(kMaxDefaultBlockSize, params.n_positions), "derived from n_positions");
}

// The shape from the folder's config.json. Pretrained weights fix it: a shape key given
// otherwise is an error; from scratch, given keys win as they do over a preset.
void derive_folder_shape(ResolvedParams& resolved, const fs::path& dir,
                         const FolderShapeReader& read_shape) {
  TrainingParams& params = resolved.params;
  BaseModel& base = resolved.base_model;
  const FolderShape shape = read_shape(dir);
  base.shape = shape;
  const std::string from = cat("derived from model (", (dir / "config.json").string(), ")");
  const auto take = [&](int64_t& field, std::string_view name, int64_t value) {
    if (field != -1 && base.pretrained() && field != value) {
      throw Error(cat(shown(resolved, name), " differs from the base model's ", value, " (",
                      (dir / "config.json").string(),
                      "): pretrained weights fix the shape; drop it, or set from_scratch"));
    }
    derive(resolved, field, name, value, from);
  };
  take(params.n_layer, "n_layer", shape.n_layer);
  take(params.n_head, "n_head", shape.n_head);
  take(params.n_embd, "n_embd", shape.n_embd);
  take(params.n_positions, "n_positions", shape.n_positions);
  take(params.vocab_size, "vocab_size", shape.vocab_size);
  // The folder's tokenizer is the run's unless tokenizer says otherwise.
  std::error_code error;
  if (source_of(resolved, "tokenizer") == "default" &&
      fs::is_regular_file(dir / "tokenizer.json", error)) {
    params.tokenizer = dir.string();
    resolved.provenance["tokenizer"] = cat("derived from model (", dir.string(), ")");
  }
  // AutoTrain's block_size -1: min(model_max_length, max positions, 1024).
  const std::optional<int64_t> model_max_length = tokenizer_max_length(dir);
  const int64_t bound =
      std::min(model_max_length.value_or(kMaxDefaultBlockSize), kMaxDefaultBlockSize);
  derive(resolved, params.block_size, "block_size", std::min(bound, params.n_positions),
         model_max_length ? "derived from n_positions, model_max_length and 1024"
                          : "derived from n_positions");
}

// recompute auto follows AutoTrain's disable_gradient_checkpointing (false -> selective, true ->
// none). Where both are given and disagree (true with full or selective, false with none), the
// one from the weaker source yields with a note, a training_params.json (what a run wrote) being
// the weakest, as gradient_accumulation yields to global_batch_size; from sources as strong they
// contradict each other. The two then agree, and so does the training_params.json written.
void resolve_recompute(ResolvedParams& resolved) {
  TrainingParams& params = resolved.params;
  const std::string switch_value = params.disable_gradient_checkpointing ? "true" : "false";
  const auto follow_switch = [&] {
    params.recompute = params.disable_gradient_checkpointing ? "none" : "selective";
    resolved.provenance["recompute"] =
        cat("derived from disable_gradient_checkpointing (", switch_value, ")");
  };
  if (params.recompute == "auto") return follow_switch();
  const bool recomputes = params.recompute != "none";
  if (recomputes != params.disable_gradient_checkpointing) return;  // they agree
  // A run's own training_params.json yields to anything given beside it.
  const auto strength = [&](std::string_view name) {
    const std::string& source = source_of(resolved, name);
    return source.ends_with(".json") ? 1 : 2 * precedence(source);
  };
  const int switch_strength = strength("disable_gradient_checkpointing");
  const int recompute_strength = strength("recompute");
  if (switch_strength == recompute_strength) {
    throw Error(cat(shown(resolved, "recompute"), " contradicts ",
                    shown(resolved, "disable_gradient_checkpointing"),
                    ": disable_gradient_checkpointing true means recompute none, false means "
                    "selective or full; give only one of them"));
  }
  if (switch_strength > recompute_strength) {
    const std::string replaced = shown(resolved, "recompute");
    follow_switch();
    resolved.notes.push_back(cat(replaced, " is replaced by ", params.recompute,
                                 ", derived from disable_gradient_checkpointing (", switch_value,
                                 ")"));
    return;
  }
  if (switch_strength > 0) {
    resolved.notes.push_back(cat(shown(resolved, "disable_gradient_checkpointing"),
                                 " is replaced by ", recomputes ? "false" : "true",
                                 ", derived from recompute (", params.recompute, ")"));
  }
  params.disable_gradient_checkpointing = !recomputes;
  resolved.provenance["disable_gradient_checkpointing"] =
      cat("derived from recompute (", params.recompute, ")");
}

}  // namespace

void resolve_params(ResolvedParams& resolved, const FolderShapeReader& read_shape) {
  TrainingParams& params = resolved.params;
  resolved.base_model = locate_base_model(params.model, params.revision, params.from_scratch);
  const BaseModel& base = resolved.base_model;
  if (!base.folder.empty()) {
    derive_folder_shape(resolved, base.folder, read_shape);
  } else if (!base.known_architecture.empty()) {
    derive_folder_shape(resolved, base.known_architecture, read_shape);
  } else {
    derive_preset_shape(resolved);
  }
  resolve_recompute(resolved);
  derive(resolved, params.zero_stage, "zero_stage",
         params.distributed_backend == "deepspeed" ? 3 : 0,
         params.distributed_backend.empty()
             ? std::string("derived from distributed_backend (none)")
             : cat("derived from distributed_backend (", params.distributed_backend, ")"));
  // Stages 0-1 reduce views of the full gradient buffer: a bucket costs no memory, only sets
  // the message size. Stages 2-3 hold a bucket's gradients in working buffers until its
  // reduce-scatter: the smallest bucket (one unit) keeps that working set smallest.
  derive(resolved, params.reduce_bucket_size, "reduce_bucket_size",
         params.zero_stage >= 2 ? 1 : kDefaultBucketElements,
         cat("derived from zero_stage (", params.zero_stage, ")"));
  // "none" is how `prepare --valid-split none` and AutoTrain's null spell "no validation split".
  if (params.valid_split == "none") params.valid_split.clear();
  // AutoTrain evaluates only when there is a validation split, whatever eval_strategy says
  // (its own training_params.json holds eval_strategy "epoch" with valid_split null).
  if (params.valid_split.empty() && params.eval_strategy != "no") {
    if (source_of(resolved, "eval_strategy") != "default") {
      resolved.notes.push_back(cat(shown(resolved, "eval_strategy"),
                                   " is ignored: there is no valid_split to evaluate on"));
    }
    params.eval_strategy = "no";
    resolved.provenance["eval_strategy"] = "derived from valid_split (none)";
  }
  // AutoTrain quantizes only the frozen weights of peft; its files carry int4 either way.
  if (params.quantization != "none" && !params.peft) {
    resolved.notes.push_back(cat(shown(resolved, "quantization"),
                                 " is ignored: quantization applies to peft's frozen weights, "
                                 "and peft is false"));
  }
  // The preference trainers' chosen completion is text_column; not given, TRL's column name
  // (AutoTrain's dpo examples set text_column: chosen).
  if (is_preference_trainer(params.trainer) && source_of(resolved, "text_column") == "default") {
    params.text_column = "chosen";
    resolved.provenance["text_column"] = cat("derived from trainer (", params.trainer, ")");
  }
  // DeepSpeed's stage3_gather_16bit_weights_on_model_save: the export in the training's 16 bits.
  if (params.zero3_save_16bit_model && source_of(resolved, "export_dtype") == "default") {
    params.export_dtype = params.mixed_precision == "fp16" ? "fp16" : "bf16";
    resolved.provenance["export_dtype"] =
        cat("derived from zero3_save_16bit_model (mixed_precision ", params.mixed_precision, ")");
  }
  validate_params(resolved);
}

namespace {

// The preference trainers read three different columns (or two for reward).
void check_pair_columns(const ResolvedParams& resolved) {
  const TrainingParams& params = resolved.params;
  if (!is_preference_trainer(params.trainer)) return;
  const std::string prompt =
      params.prompt_text_column.empty() ? "prompt" : params.prompt_text_column;
  const std::string rejected =
      params.rejected_text_column.empty() ? "rejected" : params.rejected_text_column;
  if (rejected == params.text_column) {
    throw Error(
        cat(shown(resolved, "rejected_text_column"), " is text_column's column too: ",
            "text_column holds the chosen completion, rejected_text_column the rejected one"));
  }
  if (params.trainer != "reward" && (prompt == params.text_column || prompt == rejected)) {
    throw Error(cat(shown(resolved, "prompt_text_column"),
                    " is the column of a completion too: give the prompt its own column"));
  }
}

}  // namespace

void validate_params(const ResolvedParams& resolved) {
  const TrainingParams& params = resolved.params;
  // Derived values must be resolved before the combinations can be judged.
  for (const auto& spec : param_specs()) {
    if (!spec.constraint.sentinel || spec.name == "logging_steps" || spec.name == "eval_steps" ||
        spec.name == "max_steps" || spec.name == "global_batch_size") {
      continue;  // resolved by the trainer from the data, or by the job (derive_for_world)
    }
    if (spec.name == "max_prompt_length" || spec.name == "max_completion_length") {
      continue;  // -1 = no bound
    }
    AT_CHECK(std::get<int64_t>(get_value(params, spec)) != *spec.constraint.sentinel,
             "internal: ", spec.name, " was not resolved (call resolve_params first)");
  }
  const auto& architecture = resolved.base_model.shape;
  const bool own_head_dim = architecture && architecture->head_dim &&
                            architecture->n_embd == params.n_embd &&
                            architecture->n_head == params.n_head;  // config.json's head_dim
  if (!own_head_dim && params.n_embd % params.n_head != 0) {
    throw Error(cat(shown(resolved, "n_embd"), " must be divisible by ", shown(resolved, "n_head"),
                    ": each head gets n_embd / n_head channels"));
  }
  if (params.block_size > params.n_positions) {
    throw Error(cat(shown(resolved, "block_size"),
                    " exceeds the model's context: expected at most ",
                    shown(resolved, "n_positions")));
  }
  const int64_t tokenizer_vocab = tokenizer_vocab_size(params.tokenizer);
  if (params.vocab_size < tokenizer_vocab) {
    throw Error(cat(shown(resolved, "vocab_size"), " is smaller than the ", params.tokenizer,
                    " tokenizer's ", tokenizer_vocab, " tokens: expected at least ",
                    tokenizer_vocab));
  }
  if (params.peft && params.quantization != "none" && params.offload_param_device != "none") {
    throw Error(cat(shown(resolved, "quantization"), " with ",
                    shown(resolved, "offload_param_device"),
                    ": quantized frozen weights stay on the device (4 bits a weight); set one "
                    "of the two to none"));
  }
  if (params.train_on_completions_only && params.chat_template == "none") {
    throw Error(cat(shown(resolved, "train_on_completions_only"),
                    " needs conversations: set chat_template (tokenizer, chatml or zephyr) and "
                    "give text_column as lists of messages"));
  }
  if (params.trainer == "reward" && params.peft) {
    throw Error(cat(shown(resolved, "trainer"),
                    " with peft: the reward model's new score head must train in full (PEFT's "
                    "modules_to_save), which autotrain's LoRA does not do yet; set peft false"));
  }
  if (!params.model_ref.empty() && params.trainer == "dpo" && params.peft) {
    throw Error(cat(shown(resolved, "model_ref"),
                    " with peft: the reference of a LoRA run is the base model without its "
                    "adapters (no second model is needed); leave model_ref empty, as TRL asks"));
  }
  check_pair_columns(resolved);
  if (params.comm_backend == "nccl" && params.device == "cpu") {
    throw Error(cat(shown(resolved, "comm_backend"), " needs GPUs, but ", shown(resolved, "device"),
                    ": use comm_backend gloo or mpi on CPUs"));
  }
}

ResolvedParams load_params(const ConfigInputs& inputs, const FolderShapeReader& read_shape) {
  ResolvedParams resolved = default_params();
  // Every source is read even after one fails, so that one run reports all their problems.
  std::vector<std::string> problems;
  const auto apply = [&](auto&& source) {
    try {
      source();
    } catch (const Error& error) {
      problems.emplace_back(error.what());
    }
  };
  if (!inputs.training_params.empty()) {
    apply([&] { apply_json_file(resolved, inputs.training_params); });
  }
  const ResolvedParams beneath = resolved;
  if (!inputs.yaml.empty()) apply([&] { apply_yaml_file(resolved, inputs.yaml); });
  apply([&] { apply_flags(resolved, inputs.flags); });
  apply([&] { apply_flags(resolved, inputs.model_changes); });
  // DeepSpeed's and accelerate's configs, named by any source, sit beneath the YAML and flags.
  apply([&] {
    FileSettings files;
    const TrainingParams& params = resolved.params;
    if (!params.accelerate_config.empty()) files = read_accelerate_config(params.accelerate_config);
    if (!params.deepspeed.empty()) files.append(read_deepspeed_config(params.deepspeed));
    apply_file_settings(resolved, beneath, std::move(files));
  });
  if (!problems.empty()) throw Error(join(problems, "\n"));
  resolve_params(resolved, read_shape);
  return resolved;
}

void derive_for_world(ResolvedParams& resolved, int world_size) {
  TrainingParams& params = resolved.params;
  const int64_t global = params.global_batch_size;
  if (global <= 0) return;
  const int64_t world = world_size;
  if (params.auto_find_batch_size && global % (params.batch_size * world) != 0 &&
      global % world == 0) {
    // auto_find_batch_size picks batch_size among the divisors of global / world (run_setup):
    // a given batch_size that does not divide it is only its starting point.
    params.batch_size = 1;
  }
  const int64_t per_step = params.batch_size * world;
  if (global % per_step != 0) {
    // What would divide it: other batch sizes on this job, and the world sizes that fit.
    std::vector<std::string> batches;
    for (int64_t b = 1; b <= global / world && batches.size() < 6; ++b) {
      if (global % (b * world) == 0) batches.push_back(cat(b));
    }
    std::vector<std::string> worlds;
    for (int64_t w = 1; w <= 4 * world && worlds.size() < 8; ++w) {
      if (global % (params.batch_size * w) == 0) worlds.push_back(cat(w));
    }
    throw Error(cat(shown(resolved, "global_batch_size"), " is not a multiple of ",
                    shown(resolved, "batch_size"), " x ", world, " rank(s) = ", per_step,
                    ": with batch_size ", params.batch_size, " it divides on ",
                    worlds.empty() ? cat("no job of up to ", 4 * world, " ranks")
                                   : cat(join(worlds, ", "), " rank(s)"),
                    "; on ", world, " rank(s) ",
                    batches.empty() ? std::string("no batch_size divides it")
                                    : cat("batch_size ", join(batches, ", "), " would")));
  }
  const int64_t accumulation = global / per_step;
  const std::string& source = source_of(resolved, "gradient_accumulation");
  if (accumulation != params.gradient_accumulation && source != "default") {
    // One from a training_params.json (what a run on another job size wrote: its derived value)
    // or from a weaker source (a YAML under a --global-batch-size flag) yields; from as strong
    // a source, the two disagree.
    if (!source.ends_with(".json") &&
        precedence(source) >= precedence(source_of(resolved, "global_batch_size"))) {
      throw Error(cat(shown(resolved, "gradient_accumulation"), " and ",
                      shown(resolved, "global_batch_size"), " disagree: with batch_size ",
                      params.batch_size, " on ", world, " rank(s) the global batch needs ",
                      accumulation, "; give only one of them"));
    }
    resolved.notes.push_back(cat(shown(resolved, "gradient_accumulation"), " is replaced by ",
                                 accumulation, ", derived from global_batch_size"));
  }
  params.gradient_accumulation = accumulation;
  resolved.provenance["gradient_accumulation"] =
      cat("derived from global_batch_size (", global, " / batch_size ", params.batch_size, " / ",
          world, " rank(s))");
}

void validate_for_world(const TrainingParams& params, int world_size) {
  const int64_t world = world_size;
  const int64_t nodes = params.num_nodes;
  const int64_t per_node = params.num_gpus_per_node;
  if (nodes > 0 && per_node > 0 && nodes * per_node != world) {
    throw Error(cat("num_nodes ", nodes, " x num_gpus_per_node ", per_node, " = ", nodes * per_node,
                    " ranks, but the job has ", world,
                    " (mpirun -np / srun -n): make them agree or remove them from the config"));
  }
  if (nodes > 0 && world % nodes != 0) {
    throw Error(cat("num_nodes ", nodes, ": the job's ", world,
                    " ranks cannot be spread evenly over ", nodes, " nodes"));
  }
  if (per_node > 0 && world % per_node != 0) {
    throw Error(cat("num_gpus_per_node ", per_node, ": the job's ", world,
                    " ranks are not a whole number of nodes of ", per_node));
  }
}

void validate_for_topology(const TrainingParams& params, const Topology& topology) {
  // First, as it names the node's ranks and GPUs (autotrain llm --num-gpus N sets it).
  if (params.num_gpus_per_node > 0 && params.num_gpus_per_node != topology.local_world_size) {
    throw Error(cat("num_gpus_per_node ", params.num_gpus_per_node,
                    " (what autotrain llm --num-gpus sets under a launcher) asks for ",
                    params.num_gpus_per_node, " rank(s) per node, but ", topology.launcher,
                    " started ", topology.local_world_size, " rank(s) on node ", topology.node_rank,
                    " (", topology.hostname, "), which sees ", topology.visible_gpus, " GPU(s)"));
  }
  validate_for_world(params, topology.world_size);
  if (params.num_nodes > 0 && params.num_nodes != topology.num_nodes) {
    throw Error(cat("num_nodes ", params.num_nodes, " is in the config, but ", topology.launcher,
                    " started the job on ", topology.num_nodes, " node(s)"));
  }
}

nlohmann::ordered_json to_json(const TrainingParams& params) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& spec : param_specs()) {
    std::visit([&](const auto& value) { out[std::string(spec.name)] = value; },
               get_value(params, spec));
  }
  return out;
}

void write_training_params(const TrainingParams& params, const fs::path& path,
                           const nlohmann::ordered_json& record) {
  if (path.has_parent_path()) {
    std::error_code error;
    fs::create_directories(path.parent_path(), error);
    AT_CHECK(!error, "cannot create folder '", path.parent_path().string(), "' for ",
             path.filename().string(), ": ", error.message());
  }
  // The pid keeps concurrent writers (ranks sharing a folder by mistake) off each other's file.
  const fs::path temporary = path.string() + cat(".tmp.", ::getpid());
  {
    std::ofstream out(temporary);
    AT_CHECK(out, "cannot write '", temporary.string(), "'");
    nlohmann::ordered_json json = to_json(params);
    for (const auto& [key, value] : record.items()) json[key] = value;
    out << json.dump(2) << '\n';
    out.close();
    if (!out) {
      std::error_code ignored;
      fs::remove(temporary, ignored);  // no empty leftover; the previous file stays as it was
      throw Error(cat("cannot write '", temporary.string(), "' (disk full?); '",
                      path.filename().string(), "' is unchanged"));
    }
  }
  std::error_code error;
  fs::rename(temporary, path, error);
  AT_CHECK(!error, "cannot rename '", temporary.string(), "' to '", path.string(),
           "': ", error.message());
}

std::string render_params_table(const ResolvedParams& resolved) {
  std::vector<std::array<std::string, 3>> rows = {{"parameter", "value", "source"}};
  for (const auto& spec : param_specs()) {
    rows.push_back({std::string(spec.name), format_value(get_value(resolved.params, spec)),
                    source_of(resolved, spec.name)});
  }
  size_t name_width = 0;
  size_t value_width = 0;
  for (const auto& row : rows) {
    name_width = std::max(name_width, row[0].size());
    value_width = std::max(value_width, row[1].size());
  }
  std::string out;
  for (const auto& row : rows) {
    out += row[0] + std::string(name_width - row[0].size() + 2, ' ');
    out += row[1] + std::string(value_width - row[1].size() + 2, ' ');
    out += row[2] + '\n';
  }
  return out;
}

}  // namespace autotrain::config
