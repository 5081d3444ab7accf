#include "autotrain/train/checkpointing.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "autotrain/comm/backend.hpp"
#include "autotrain/config/load.hpp"
#include "autotrain/core/deadline.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/log.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/core/timer.hpp"
#include "autotrain/train/export.hpp"
#include "autotrain/train/lora.hpp"
#include "held_state.hpp"

namespace autotrain::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// AdamW, 32-bit or 8-bit: params, m, v (the 8-bit moments dequantized); SGD: params, momentum.
int kinds_for(OptimizerKind optimizer) {
  return optimizer == OptimizerKind::sgd ? 2 : 3;
}

// The tensor of the layout that holds flat index `begin` (runs never cross a tensor).
size_t tensor_of(const model::ParamLayout& layout, size_t begin) {
  const auto& tensors = layout.tensors();
  const auto after =
      std::upper_bound(tensors.begin(), tensors.end(), begin,
                       [](size_t index, const model::ParamTensor& t) { return index < t.offset; });
  AT_CHECK(after != tensors.begin(), "checkpoint: flat index ", begin, " precedes every tensor");
  const auto t = static_cast<size_t>(after - tensors.begin()) - 1;
  AT_CHECK(begin < tensors[t].offset + tensors[t].numel, "checkpoint: flat index ", begin,
           " lies in padding, not in a tensor");
  return t;
}

// A kind of state the engine keeps out of memory, as a checkpoint stream of the run's elements.
ckpt::Stream stream_of(const zero::StateRun& run, int kind) {
  const zero::StreamedState& state = run.streamed[static_cast<size_t>(kind)];
  ckpt::Stream stream;
  stream.length = run.size();
  stream.read = [read = state.read](uint64_t at, std::span<float> out) { read(at, out); };
  stream.write = [write = state.write](uint64_t at, std::span<const float> in) { write(at, in); };
  return stream;
}

}  // namespace

std::vector<ckpt::TensorSpec> checkpoint_tensors(const model::ParamLayout& layout,
                                                 OptimizerKind optimizer) {
  static const char* const prefixes[] = {"model/", "optimizer/exp_avg/", "optimizer/exp_avg_sq/"};
  std::vector<ckpt::TensorSpec> specs;
  for (const auto& tensor : layout.tensors()) {
    std::vector<uint64_t> shape(tensor.shape.begin(), tensor.shape.end());
    for (int kind = 0; kind < kinds_for(optimizer); ++kind) {
      specs.push_back({cat(prefixes[kind], tensor.name), tensor.numel, shape});
    }
  }
  return specs;
}

std::string model_config_json(const model::ModelConfig& config) {
  return model::to_json(config).dump();
}

ckpt::CheckpointContent checkpoint_content(zero::ModelState& engine,
                                           const model::ParamLayout& layout,
                                           const ResumePoint& point,
                                           const config::TrainingParams& params) {
  ckpt::CheckpointContent content;
  content.tensors = checkpoint_tensors(layout, point.optimizer);
  const int kinds = kinds_for(point.optimizer);
  for (const auto& run : engine.shard_runs()) {
    const size_t t = tensor_of(layout, run.begin);
    const auto& tensor = layout.tensors()[t];
    for (int kind = 0; kind < kinds; ++kind) {
      AT_CHECK(run.holds(kind), "checkpoint: the ZeRO engine's shard of ", tensor.name,
               " lacks state kind ", kind);
      ckpt::Piece piece{t * static_cast<size_t>(kinds) + static_cast<size_t>(kind),
                        run.begin - tensor.offset,
                        {}};
      if (const float* data = run.data(kind)) {
        piece.data = std::span<const float>(data, run.size());
      } else {
        piece.stream = stream_of(run, kind);  // offload nvme: read a part at a time
      }
      content.pieces.push_back(std::move(piece));
    }
  }
  auto& state = content.state;
  state.step = point.step;
  state.epoch = static_cast<int64_t>(point.position.epoch);
  state.consumed_samples = point.step * point.global_batch_size;
  state.zero_stage = point.zero_stage;
  state.json["training_params"] = config::to_json(params).dump();
  state.json["model_config"] = model_config_json(layout.config());
  state.json["scheduler"] = json{
      {"kind", params.scheduler},
      {"lr", params.lr},
      {"warmup_ratio", params.warmup_ratio},
      {"total_steps",
       point.total_steps}}.dump();
  state.json["data_position"] = json{
      {"epoch", point.position.epoch},
      {"sample_in_epoch", point.position.sample_in_epoch},
      {"global_batch_size", point.global_batch_size},
      {"seed", params.seed}}.dump();
  state.json["optimizer"] =
      json{{"kind", optimizer_name(point.optimizer)}, {"steps", point.optimizer_steps}}.dump();
  state.json["base_model"] =
      json{{"weights_hash", point.base_weights}, {"folder", point.base_folder}}.dump();
  if (point.lora) {
    state.json["lora"] = json{{"r", point.lora->r},
                              {"alpha", point.lora->alpha},
                              {"target_modules", point.lora->target_modules}}
                             .dump();
  }
  state.json["loss_scaler"] = json{{"enabled", point.loss_scaler.enabled},
                                   {"scale", point.loss_scaler.scale},
                                   {"good_steps", point.loss_scaler.good_steps},
                                   {"skipped_steps", point.loss_scaler.skipped_steps}}
                                  .dump();
  return content;
}

ResumePoint read_resume_point(const ckpt::CheckpointReader& reader) {
  return parse_resume_point(reader.info(), reader.path().string());
}

namespace {

std::string lora_text(const std::optional<model::LoraOptions>& lora) {
  if (!lora) return "none (every weight trains)";
  return cat("lora_r ", lora->r, ", lora_alpha ", lora->alpha, ", target_modules ",
             join(lora->target_modules, ","));
}

}  // namespace

std::vector<std::string> compatibility_problems(const ResumePoint& saved,
                                                const model::ModelConfig& config,
                                                OptimizerKind optimizer,
                                                const std::optional<model::LoraOptions>& lora) {
  std::vector<std::string> problems;
  const auto compare = [&](const char* field, auto in_checkpoint, auto in_run) {
    if (in_checkpoint != in_run) {
      problems.push_back(
          cat(field, ": ", in_checkpoint, " in the checkpoint, ", in_run, " in this run"));
    }
  };
  // Every field of the model (model::to_json): its family, shape and options.
  const json in_checkpoint = model::to_json(saved.model), in_run = model::to_json(config);
  const auto text = [](const json& value) {
    return value.is_string() ? value.get<std::string>() : value.dump();
  };
  // An option is written only where it is set (score_head, Gemma's): absent reads as unset, 0 or
  // false.
  const auto value_in = [](const json& fields_of, const json& other, const std::string& field) {
    return fields_of.contains(field) ? fields_of.at(field)
                                     : (other.at(field).is_number() ? json(0) : json(false));
  };
  json fields = in_checkpoint;
  fields.update(in_run);
  for (const auto& [field, unused] : fields.items()) {
    const json saved_value = value_in(in_checkpoint, in_run, field);
    const json run_value = value_in(in_run, in_checkpoint, field);
    if (saved_value != run_value) {
      problems.push_back(cat(field == "block_size" ? "block_size (n_positions)" : field, ": ",
                             text(saved_value), " in the checkpoint, ", text(run_value),
                             " in this run"));
    }
  }
  // AdamW's 32-bit and 8-bit moments are the same tensors (the 8-bit ones dequantized): either
  // loads into the other (plan_resume says so; the parameter change needs
  // --allow-changed-params, param_changes.cpp).
  if (!same_optimizer_state(saved.optimizer, optimizer)) {
    compare("optimizer", std::string(optimizer_name(saved.optimizer)),
            std::string(optimizer_name(optimizer)));
  }
  compare("peft (LoRA adapters)", lora_text(saved.lora), lora_text(lora));
  return problems;
}

std::vector<std::string> load_engine_state(ckpt::CheckpointReader& reader, zero::ModelState& engine,
                                           const model::ParamLayout& layout,
                                           OptimizerKind optimizer, bool optimizer_state,
                                           Communicator& comm) {
  const auto specs = checkpoint_tensors(layout, optimizer);
  const int kinds = kinds_for(optimizer);
  const int loaded = optimizer_state ? kinds : 1;
  const std::vector<zero::StateRun> held = engine.held_runs();
  // Each rank reads only its own part of every tensor (held_state.hpp); every rank then reads
  // every tensor in the same order (the reads are collective), with whatever ranges it owns.
  std::vector<std::vector<ckpt::ReadRange>> ranges(specs.size());
  for (const auto& run : held) {
    if (!owned_by(layout, run, comm.rank())) continue;
    const size_t t = tensor_of(layout, run.begin);
    const auto& tensor = layout.tensors()[t];
    for (int kind = 0; kind < loaded; ++kind) {
      if (!run.holds(kind)) continue;
      ckpt::ReadRange range{run.begin - tensor.offset, {}};
      if (float* data = run.data(kind)) {
        range.out = std::span<float>(data, run.size());
      } else {
        range.stream = stream_of(run, kind);  // offload nvme: written a part at a time
      }
      ranges[t * static_cast<size_t>(kinds) + static_cast<size_t>(kind)].push_back(
          std::move(range));
    }
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    if (static_cast<int>(i % static_cast<size_t>(kinds)) >= loaded) continue;
    reader.read(specs[i].name, ranges[i]);
  }
  // The parts cover every element once, so the partial checksums make the whole ones.
  std::vector<std::string> problems = reader.verify_reads();
  if (!problems.empty()) return problems;
  complete_held_state(held, layout, loaded, comm);
  engine.after_load();
  return {};
}

std::optional<fs::path> resolve_resume(const std::string& setting, const ckpt::CheckpointDir& dir,
                                       MPI_Comm comm, TensorCheck tensors,
                                       std::span<const fs::path> refused) {
  if (setting == "none") return std::nullopt;
  const bool whole_read = tensors == TensorCheck::whole_read;
  if (setting == "auto") {
    // A run state that does not parse or is out of range is skipped like a damaged tensor.
    return dir.resolve_auto(
        comm, {}, [](const ckpt::CheckpointReader& reader) { read_resume_point(reader); },
        whole_read, refused);
  }
  const fs::path path = setting;
  std::vector<std::string> problems;
  {
    ckpt::CheckpointReader reader(path, comm);
    problems = whole_read ? reader.verify_checksums() : reader.verify_run_state();
  }
  if (!problems.empty()) throw unverified_checkpoint(path, problems);
  return path;
}

CollectiveError unverified_checkpoint(const fs::path& path,
                                      const std::vector<std::string>& problems) {
  return CollectiveError(cat("resume_from_checkpoint: ", path.string(),
                             " fails verification: ", join(problems, "; "),
                             " (use an earlier checkpoint, or resume_from_checkpoint: auto)"));
}

CheckpointSaver::CheckpointSaver(ckpt::CheckpointDir dir, const ckpt::WriteOptions& options,
                                 size_t save_total_limit, bool async, MPI_Comm comm)
    : dir_(std::move(dir)),
      options_(options),
      save_total_limit_(save_total_limit),
      async_(async),
      comm_(OwnedComm::duplicate(comm, "checkpoint saver set-up (MPI_Comm_dup)")) {}

CheckpointSaver::~CheckpointSaver() {
  try {
    wait();
  } catch (const std::exception& error) {
    log::error("checkpoint: the background save failed: ", error.what());
  }
}

void CheckpointSaver::write(const ckpt::CheckpointContent& content) {
  const Timer timer;
  const fs::path path =
      ckpt::save_checkpoint(dir_, content, options_, save_total_limit_, comm_.get());
  log::info("checkpoint: saved ", path.string(), " in ", timer.seconds(), " s",
            async_ ? " (background)" : "");
}

namespace {

size_t piece_floats(const ckpt::CheckpointContent& content) {
  size_t total = 0;
  for (const auto& piece : content.pieces) total += piece.data.size();
  return total;
}

// State kept out of memory (offload nvme) is read a part at a time during the write: a host copy
// of it would be the very memory the offload saves, so such a checkpoint is written in the
// foreground.
bool streamed(const ckpt::CheckpointContent& content) {
  return std::any_of(content.pieces.begin(), content.pieces.end(),
                     [](const ckpt::Piece& piece) { return piece.streamed(); });
}

}  // namespace

void CheckpointSaver::reserve(const ckpt::CheckpointContent& like) {
  // resize() writes every element, so the pages are faulted in now, not during the first save.
  if (async_ && !streamed(like) && host_.size() < piece_floats(like))
    host_.resize(piece_floats(like));
}

double CheckpointSaver::save(const ckpt::CheckpointContent& content) {
  const Timer stall;
  wait();
  if (async_ && streamed(content) && !said_foreground_) {
    log::info(
        "checkpoint: async_checkpoint is off for this run: the optimizer state on NVMe is "
        "written from its scratch files, a part at a time, in the foreground");
    said_foreground_ = true;
  }
  if (!async_ || streamed(content)) {
    write(content);
    return stall.seconds();
  }
  // Host copy of this rank's pieces: one buffer, reused (grown only when a save is larger).
  const size_t total = piece_floats(content);
  if (host_.size() < total) host_.resize(total);
  snapshot_.tensors = content.tensors;
  snapshot_.state = content.state;
  snapshot_.pieces.clear();
  size_t at = 0;
  for (const auto& piece : content.pieces) {
    std::memcpy(host_.data() + at, piece.data.data(), piece.data.size_bytes());
    snapshot_.pieces.push_back(
        {piece.tensor, piece.offset, std::span<const float>(host_.data() + at, piece.data.size())});
    at += piece.data.size();
  }
  thread_ = std::thread([this] {
    try {
      write(snapshot_);
    } catch (...) {
      error_ = std::current_exception();
    }
  });
  return stall.seconds();
}

void CheckpointSaver::wait() {
  if (thread_.joinable()) thread_.join();
  if (error_) {
    const std::exception_ptr error = error_;
    error_ = nullptr;
    std::rethrow_exception(error);
  }
}

}  // namespace autotrain::train
