// A DeepSpeed JSON config (transformers' --deepspeed ds_config.json) read into parameters:
// docs/configuration.md's "DeepSpeed and accelerate configs" lists every key and what it maps to.
#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>

#include "file_settings.hpp"

namespace autotrain::config {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Keys that tune how DeepSpeed's engine runs, not what it computes: autotrain's engine has its
// own buckets, overlap and prefetch (docs/zero.md).
constexpr std::string_view kZeroTuning[] = {
    "overlap_comm",
    "contiguous_gradients",
    "reduce_scatter",
    "allgather_partitions",
    "allgather_bucket_size",
    "round_robin_gradients",
    "sub_group_size",
    "stage3_max_live_parameters",
    "stage3_max_reuse_distance",
    "stage3_param_persistence_threshold",
    "stage3_prefetch_bucket_size",
    "elastic_checkpoint",
    "load_from_fp32_weights",
    "ignore_unused_parameters",
    "memory_efficient_linear",
    "use_multi_rank_bucket_allreduce",
    "legacy_stage1",
};

// Top-level keys that only observe or tune the run.
constexpr std::string_view kHarmless[] = {
    "steps_per_print",
    "wall_clock_breakdown",
    "dump_state",
    "flops_profiler",
    "memory_breakdown",
    "zero_allow_untested_optimizer",
    "prescale_gradients",
    "gradient_predivide_factor",
    "communication_data_type",
    "zero_force_ds_cpu_optimizer",
    "activation_checkpointing",
    "aio",
    "checkpoint",
    "comms_logger",
    "autotuning",
    "seq_parallel_communication_data_type",
};

// Top-level features that change training and that autotrain does not have.
constexpr std::pair<std::string_view, std::string_view> kRefusedFeatures[] = {
    {"amp", "NVIDIA Apex AMP is not used: set bf16 or fp16 \"enabled\": true instead"},
    {"sparse_attention", "sparse attention is not implemented: attention is dense"},
    {"pipeline", "pipeline parallelism is not implemented: ZeRO shards the model instead"},
    {"compression_training", "compression training is not implemented"},
    {"curriculum_learning", "curriculum learning is not implemented"},
    {"data_efficiency", "data efficiency (curriculum, random-LTD) is not implemented"},
    {"elasticity",
     "elastic batch sizes are not implemented: global_batch_size keeps the batch "
     "on any world size"},
    {"sparse_gradients", "sparse gradients are not implemented"},
    {"wandb",
     "Weights & Biases is not written: metrics go to metrics.jsonl and, with log "
     "tensorboard, TensorBoard"},
    {"comet",
     "Comet is not written: metrics go to metrics.jsonl and, with log tensorboard, "
     "TensorBoard"},
    {"csv_monitor", "DeepSpeed's CSV monitor is not written: metrics go to metrics.jsonl"},
};

bool is_auto(const json& value) {
  return value.is_string() && value.get<std::string>() == "auto";
}

// A section's "enabled" (absent = false, as DeepSpeed reads it; "auto" stays "auto").
json enabled_of(const json& section) {
  if (!section.is_object() || !section.contains("enabled")) return false;
  return section["enabled"];
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

class DeepSpeedReader {
 public:
  explicit DeepSpeedReader(std::string file) : file_(std::move(file)) {}

  FileSettings read(const json& root) {
    if (!root.is_object()) {
      out_.errors.push_back(cat(file_, ": expected a DeepSpeed config (a JSON object), got ",
                                root.is_array() ? "a list" : root.dump()));
      return std::move(out_);
    }
    for (const auto& item : root.items()) top(item.key(), item.value());
    precision(root);
    return std::move(out_);
  }

 private:
  void top(const std::string& key, const json& value) {
    if (key == "train_batch_size") {
      number("global_batch_size", value, key);
    } else if (key == "train_micro_batch_size_per_gpu") {
      number("batch_size", value, key);
    } else if (key == "gradient_accumulation_steps") {
      number("gradient_accumulation", value, key);
    } else if (key == "gradient_clipping") {
      number("max_grad_norm", value, key);
    } else if (key == "zero_optimization") {
      zero(value);
    } else if (key == "optimizer") {
      optimizer(value);
    } else if (key == "scheduler") {
      scheduler(value);
    } else if (key == "bf16" || key == "fp16" || key == "bfloat16") {
      // precision() reads both together.
    } else if (key == "tensorboard") {
      if (enabled_of(value) == true) out_.set(file_, key + ".enabled", "log", "tensorboard");
    } else if (key == "data_types") {
      data_types(value);
    } else if (listed(key, kHarmless)) {
      out_.note(file_, key, "it tunes or observes DeepSpeed's engine; autotrain's has its own");
    } else {
      refused_or_unknown(key, value);
    }
  }

  void refused_or_unknown(const std::string& key, const json& value) {
    for (const auto& [name, why] : kRefusedFeatures) {
      if (key != name) continue;
      // A section switched off is harmless.
      if (value == false ||
          (value.is_object() && value.contains("enabled") && value["enabled"] == false)) {
        out_.note(file_, key, "switched off");
      } else {
        out_.refuse(file_, key, why);
      }
      return;
    }
    std::vector<std::string> known = {"train_batch_size",
                                      "train_micro_batch_size_per_gpu",
                                      "gradient_accumulation_steps",
                                      "gradient_clipping",
                                      "zero_optimization",
                                      "optimizer",
                                      "scheduler",
                                      "bf16",
                                      "fp16",
                                      "tensorboard",
                                      "data_types"};
    for (const std::string_view name : kHarmless) known.emplace_back(name);
    out_.refuse(file_, key,
                cat("not a DeepSpeed key autotrain knows", did_you_mean(key, known),
                    " (docs/configuration.md lists those it reads)"));
  }

  // A number (or "auto", left to the other sources) for parameter `name`.
  void number(const std::string& name, const json& value, const std::string& key) {
    if (is_auto(value)) return;
    if (!value.is_number()) {
      out_.refuse(file_, key, cat("expected a number or \"auto\", got ", value.dump()));
      return;
    }
    out_.set(file_, key, name, value.dump());
  }

  void zero(const json& zero) {
    if (!zero.is_object()) {
      out_.refuse(file_, "zero_optimization", cat("expected an object, got ", zero.dump()));
      return;
    }
    for (const auto& item : zero.items()) {
      const std::string& key = item.key();
      const json& value = item.value();
      const std::string at = "zero_optimization." + key;
      if (key == "stage") {
        number("zero_stage", value, at);
      } else if (key == "offload_optimizer" || key == "offload_param") {
        offload(key, value, at);
      } else if (key == "stage3_gather_16bit_weights_on_model_save" ||
                 key == "stage3_gather_fp16_weights_on_model_save") {
        if (!is_auto(value)) out_.set(file_, at, "zero3_save_16bit_model", value.dump());
      } else if (key == "reduce_bucket_size") {
        number("reduce_bucket_size", value, at);
      } else if (key == "cpu_offload") {
        if (value == true) offload("offload_optimizer", json{{"device", "cpu"}}, at);
      } else if (key == "zero_hpz_partition_size" || key == "mics_shard_size") {
        if (value.is_number() && value.get<double>() > 1) {
          out_.refuse(file_, at,
                      "ZeRO++ and MiCS partitions are not implemented: ZeRO shards "
                      "over every rank");
        }
      } else if (key == "zero_quantized_weights" || key == "zero_quantized_gradients") {
        if (value == true)
          out_.refuse(file_, at, "ZeRO++ quantized communication is not implemented");
      } else if (listed(key, kZeroTuning)) {
        out_.note(file_, at,
                  "a ZeRO tuning knob; autotrain's engine buckets and overlaps its own way");
      } else {
        out_.refuse(file_, at, "not a zero_optimization key autotrain knows");
      }
    }
  }

  // offload_optimizer / offload_param: {"device": "none|cpu|nvme", "nvme_path": ..., "pin_memory":
  // ..., tuning}: the device and the folder become parameters; the rest is DeepSpeed's tuning.
  void offload(const std::string& section, const json& value, const std::string& at) {
    if (!value.is_object()) {
      out_.refuse(file_, at, cat("expected an object, got ", value.dump()));
      return;
    }
    for (const auto& item : value.items()) {
      const std::string& key = item.key();
      const json& setting = item.value();
      const std::string where = at + "." + key;
      if (key == "device") {
        if (setting.is_string()) {
          out_.set(file_, where, section + "_device", lower(setting.get<std::string>()));
        } else if (!setting.is_null()) {
          out_.refuse(file_, where,
                      cat("expected \"none\", \"cpu\" or \"nvme\", got ", setting.dump()));
        }
      } else if (key == "nvme_path") {
        if (setting.is_string()) out_.set(file_, where, "nvme_path", setting.get<std::string>());
      } else {
        out_.note(file_, where,
                  "DeepSpeed's offload tuning; autotrain pins, buffers and overlaps its own way");
      }
    }
  }

  void optimizer(const json& section) {
    if (!section.is_object()) {
      out_.refuse(file_, "optimizer", cat("expected an object, got ", section.dump()));
      return;
    }
    const std::string type = section.value("type", std::string("AdamW"));
    if (lower(type) != "adam" && lower(type) != "adamw") {
      out_.refuse(file_, "optimizer.type",
                  cat("'", type,
                      "' is not offered: autotrain's optimizers are AdamW and SGD "
                      "(use \"AdamW\", or optimizer: sgd in the YAML)"));
      return;
    }
    out_.set(file_, "optimizer.type", "optimizer", "adamw");
    if (section.contains("params")) optimizer_params(section["params"]);
  }

  void optimizer_params(const json& params) {
    if (!params.is_object()) return;
    for (const auto& item : params.items()) {
      const std::string& key = item.key();
      const json& value = item.value();
      const std::string at = "optimizer.params." + key;
      if (key == "lr") {
        number("lr", value, at);
      } else if (key == "weight_decay") {
        number("weight_decay", value, at);
      } else if (key == "eps") {
        number("adam_epsilon", value, at);
      } else if (key == "betas") {
        if (is_auto(value)) continue;
        if (!value.is_array() || value.size() != 2 || !value[0].is_number() ||
            !value[1].is_number()) {
          out_.refuse(file_, at, cat("expected [beta1, beta2] or \"auto\", got ", value.dump()));
          continue;
        }
        out_.set(file_, at, "adam_beta1", value[0].dump());
        out_.set(file_, at, "adam_beta2", value[1].dump());
      } else if (key == "adam_w_mode" || key == "bias_correction") {
        if (value == false) {
          out_.refuse(file_, at,
                      key == "adam_w_mode"
                          ? "Adam with L2 regularisation is not offered: autotrain's "
                            "AdamW decays the weights decoupled (adam_w_mode true)"
                          : "Adam without bias correction is not offered");
        }
      } else if (key == "amsgrad") {
        if (value == true) out_.refuse(file_, at, "AMSGrad is not offered");
      } else if (key == "torch_adam" || key == "fused") {
        out_.note(file_, at, "autotrain runs its own AdamW kernels");
      } else {
        out_.refuse(file_, at,
                    "not an Adam parameter autotrain knows (lr, betas, eps, "
                    "weight_decay)");
      }
    }
  }

  void scheduler(const json& section) {
    if (!section.is_object()) {
      out_.refuse(file_, "scheduler", cat("expected an object, got ", section.dump()));
      return;
    }
    const std::string type = section.value("type", std::string());
    static const std::pair<std::string_view, std::string_view> kTypes[] = {
        {"WarmupLR", "constant_with_warmup"},
        {"WarmupDecayLR", "linear"},
        {"WarmupCosineLR", "cosine_with_min_lr"}};
    const auto known = std::find_if(std::begin(kTypes), std::end(kTypes),
                                    [&](const auto& entry) { return entry.first == type; });
    if (known == std::end(kTypes)) {
      out_.refuse(file_, "scheduler.type",
                  cat("'", type,
                      "' is not offered: WarmupLR, WarmupDecayLR and WarmupCosineLR "
                      "are (or a scheduler of transformers' in the YAML)"));
      return;
    }
    out_.set(file_, "scheduler.type", "scheduler", std::string(known->second));
    const json params = section.value("params", json::object());
    // DeepSpeed's defaults where the config does not say.
    if (!params.contains("warmup_type")) {
      out_.set(file_, "scheduler.type", "warmup_type", "log");
    }
    if (type == "WarmupCosineLR" && !params.contains("cos_min_ratio")) {
      out_.set(file_, "scheduler.type", "min_lr_rate", "0.0001");
    }
    for (const auto& item : params.items()) scheduler_param(type, item.key(), item.value());
  }

  void scheduler_param(const std::string& type, const std::string& key, const json& value) {
    const std::string at = "scheduler.params." + key;
    if (key == "warmup_max_lr") {
      number("lr", value, at);
    } else if (key == "warmup_num_steps") {
      number("warmup_steps", value, at);
    } else if (key == "total_num_steps" && type != "WarmupLR") {
      number("max_steps", value, at);
    } else if (key == "cos_min_ratio" && type == "WarmupCosineLR") {
      number("min_lr_rate", value, at);
    } else if (key == "warmup_type") {
      if (value.is_string()) out_.set(file_, at, "warmup_type", value.get<std::string>());
    } else if (key == "warmup_min_lr" || key == "warmup_min_ratio") {
      if (!is_auto(value) && !(value.is_number() && value.get<double>() == 0.0)) {
        out_.refuse(file_, at,
                    cat("expected 0 or \"auto\", got ", value.dump(),
                        ": autotrain's warmup starts from a learning rate of 0"));
      }
    } else if (key == "last_batch_iteration") {
      out_.note(file_, at, "a resumed run continues its schedule from the checkpoint's step");
    } else {
      out_.refuse(file_, at, cat("not a parameter of ", type, " autotrain knows"));
    }
  }

  // bf16 and fp16 together: one enabled picks it; both explicitly off means fp32.
  void precision(const json& root) {
    json bf16 = enabled_of(root.value("bf16", json(nullptr)));
    if (root.contains("bfloat16")) bf16 = enabled_of(root["bfloat16"]);
    const json fp16 = enabled_of(root.value("fp16", json(nullptr)));
    if (bf16 == true && fp16 == true) {
      out_.refuse(file_, "bf16.enabled", "bf16 and fp16 are both enabled: enable one");
    } else if (bf16 == true) {
      out_.set(file_, "bf16.enabled", "mixed_precision", "bf16");
    } else if (fp16 == true) {
      out_.set(file_, "fp16.enabled", "mixed_precision", "fp16");
      fp16_scaling(root["fp16"]);
    } else if ((root.contains("bf16") || root.contains("fp16")) && !is_auto(bf16) &&
               !is_auto(fp16)) {
      out_.set(file_, root.contains("bf16") ? "bf16.enabled" : "fp16.enabled", "mixed_precision",
               "no");
    }
  }

  void fp16_scaling(const json& fp16) {
    for (const auto& item : fp16.items()) {
      const std::string& key = item.key();
      if (key == "enabled" || key == "auto_cast") continue;
      const std::string at = "fp16." + key;
      if (key == "loss_scale" && item.value().is_number() && item.value().get<double>() != 0.0) {
        out_.refuse(file_, at,
                    "a static loss scale is not offered: fp16 scales the loss "
                    "dynamically (loss_scale 0)");
      } else {
        out_.note(file_, at,
                  "fp16's dynamic loss scale follows PyTorch's GradScaler (2^16, "
                  "halved on overflow, doubled after 2000 clean steps)");
      }
    }
  }

  void data_types(const json& value) {
    if (!value.is_object()) return;
    for (const auto& item : value.items()) {
      const std::string at = "data_types." + item.key();
      if (item.key() == "grad_accum_dtype" && item.value() != "fp32" && !item.value().is_null()) {
        out_.refuse(file_, at, "gradients accumulate in fp32");
      } else {
        out_.note(file_, at, "gradients accumulate in fp32");
      }
    }
  }

  std::string file_;
  FileSettings out_;
};

}  // namespace

FileSettings read_deepspeed_config(const fs::path& path) {
  std::error_code error;
  if (!fs::is_regular_file(path, error)) {
    throw Error(cat("deepspeed: '", path.string(), "': no such file (a DeepSpeed JSON config)"));
  }
  std::ifstream in(path);
  AT_CHECK(in, "deepspeed: '", path.string(), "': cannot open for reading");
  json root;
  try {
    root = json::parse(in);
  } catch (const json::exception& failure) {
    throw Error(cat(path.string(), ": not valid JSON: ", failure.what()));
  }
  return DeepSpeedReader(path.string()).read(root);
}

}  // namespace autotrain::config
