// An accelerate config (accelerate launch --config_file; `accelerate config` writes
// ~/.cache/huggingface/accelerate/default_config.yaml) read into parameters:
// docs/configuration.md's "DeepSpeed and accelerate configs" lists every key.
#include <yaml-cpp/yaml.h>

#include "file_settings.hpp"
#include "foreign_keys.hpp"

namespace autotrain::config {
namespace {

namespace fs = std::filesystem;

// Keys about where and how accelerate starts processes: the launcher (mpirun, srun) does that.
constexpr std::string_view kLauncherKeys[] = {
    "compute_environment",
    "machine_rank",
    "main_training_function",
    "same_network",
    "rdzv_backend",
    "debug",
    "enable_cpu_affinity",
    "tpu_env",
    "tpu_use_cluster",
    "tpu_use_sudo",
    "tpu_name",
    "tpu_zone",
    "commands",
    "command_file",
    "mpirun_config",
    "ipex_config",
    "main_process_ip",
    "downcast_bf16",
    "dynamo_config",
    "num_cpu_threads_per_process",
};

std::string scalar(const YAML::Node& node) {
  return node.IsScalar() ? node.Scalar() : node.IsNull() ? std::string() : "(a collection)";
}

class AccelerateReader {
 public:
  explicit AccelerateReader(fs::path file) : path_(std::move(file)), file_(path_.string()) {}

  FileSettings read(const YAML::Node& root) {
    if (!root.IsMap()) {
      out_.errors.push_back(cat(file_, ": expected an accelerate config (a mapping of keys)"));
      return std::move(out_);
    }
    for (const auto& entry : root) top(entry.first.as<std::string>(), entry.second);
    processes(root);
    if (!launcher_keys_.empty()) {
      out_.note(file_, join(launcher_keys_, ", "),
                "autotrain's ranks are started by mpirun or srun and meet over MPI");
    }
    return std::move(out_);
  }

 private:
  void top(const std::string& key, const YAML::Node& value) {
    const std::string text = scalar(value);
    if (key == "distributed_type") {
      distributed_type(text);
    } else if (key == "mixed_precision") {
      if (text == "fp8") {
        out_.refuse(file_, key, "fp8 is not offered: use bf16 or fp16");
      } else {
        out_.set(file_, key, "mixed_precision", text);
      }
    } else if (key == "main_process_port") {
      if (!text.empty()) out_.set(file_, key, "master_port", text);
    } else if (key == "use_cpu") {
      if (text == "true") out_.set(file_, key, "device", "cpu");
    } else if (key == "gpu_ids") {
      if (text != "all" && !text.empty()) {
        out_.refuse(file_, key,
                    cat("'", text,
                        "': each rank takes the GPU its local rank names among those "
                        "CUDA_VISIBLE_DEVICES shows; export CUDA_VISIBLE_DEVICES=",
                        text, " instead"));
      }
    } else if (key == "deepspeed_config") {
      deepspeed(value);
    } else if (key == "fsdp_config" || key == "megatron_lm_config") {
      if (value.IsMap() && value.size() > 0 && distributed_ != "FSDP" &&
          distributed_ != "MEGATRON_LM") {
        out_.note(file_, key, "distributed_type does not use it");
      }
    } else if (key == "num_processes" || key == "num_machines") {
      // processes() reads both together.
    } else if (listed(key, kLauncherKeys) || key.starts_with("tpu_")) {
      launcher_keys_.push_back(key);
    } else {
      out_.refuse(file_, key,
                  "not an accelerate key autotrain knows (docs/configuration.md lists those it "
                  "reads); remove it or check its spelling");
    }
  }

  void distributed_type(const std::string& type) {
    distributed_ = type;
    if (type == "DEEPSPEED") {
      out_.set(file_, "distributed_type", "distributed_backend", "deepspeed");
    } else if (type == "MULTI_GPU" || type == "NO" || type == "MULTI_CPU") {
      if (type == "MULTI_CPU") out_.set(file_, "distributed_type", "device", "cpu");
    } else if (type == "FSDP") {
      out_.refuse(file_, "distributed_type",
                  "FSDP is not offered: ZeRO stage 3 shards parameters, gradients and optimizer "
                  "state the way FSDP's FULL_SHARD does (distributed_type: DEEPSPEED with "
                  "zero_stage 3)");
    } else {
      out_.refuse(file_, "distributed_type",
                  cat("'", type, "' is not offered: NO, MULTI_GPU, MULTI_CPU and DEEPSPEED are"));
    }
  }

  // num_processes counts every rank; num_machines the nodes.
  void processes(const YAML::Node& root) {
    const std::string machines = root["num_machines"] ? scalar(root["num_machines"]) : "";
    if (!machines.empty()) out_.set(file_, "num_machines", "num_nodes", machines);
    if (!root["num_processes"]) return;
    const std::string total = scalar(root["num_processes"]);
    const long long processes = std::atoll(total.c_str());
    const long long nodes = machines.empty() ? 1 : std::atoll(machines.c_str());
    if (processes <= 0 || nodes <= 0 || processes % nodes != 0) {
      out_.refuse(file_, "num_processes",
                  cat("expected a count of ranks that num_machines (",
                      machines.empty() ? "1" : machines, ") divides, got '", total, "'"));
      return;
    }
    out_.set(file_, "num_processes", "num_gpus_per_node", cat(processes / nodes));
  }

  void deepspeed(const YAML::Node& section) {
    if (!section.IsMap()) return;
    for (const auto& entry : section) {
      const std::string key = entry.first.as<std::string>();
      const std::string text = scalar(entry.second);
      const std::string at = "deepspeed_config." + key;
      if (key == "deepspeed_config_file") {
        out_.append(read_deepspeed_config(text));
      } else if (key == "zero_stage") {
        out_.set(file_, at, "zero_stage", text);
      } else if (key == "gradient_accumulation_steps") {
        out_.set(file_, at, "gradient_accumulation", text);
      } else if (key == "gradient_clipping") {
        out_.set(file_, at, "max_grad_norm", text);
      } else if (key == "zero3_save_16bit_model") {
        out_.set(file_, at, "zero3_save_16bit_model", text);
      } else if (key == "offload_optimizer_device" || key == "offload_param_device") {
        out_.set(file_, at, key, text);
      } else if (key == "offload_optimizer_nvme_path" || key == "offload_param_nvme_path") {
        out_.set(file_, at, "nvme_path", text);
      } else if (key == "zero3_init_flag" || key == "deepspeed_multinode_launcher") {
        foreign(key, text, at);
      } else if (key == "deepspeed_hostfile" || key == "deepspeed_inclusion_filter" ||
                 key == "deepspeed_exclusion_filter") {
        out_.refuse(file_, at,
                    "the nodes are those of the Slurm allocation or mpirun's "
                    "--hostfile (autotrain launch)");
      } else {
        out_.refuse(file_, at, "not a deepspeed_config key autotrain knows");
      }
    }
  }

  // AutoTrain's DeepSpeed switches, judged as in a YAML (foreign_keys.cpp).
  void foreign(const std::string& key, const std::string& text, const std::string& at) {
    const ForeignKey& switch_ = *find_foreign_key(key);
    if (switch_.harmless_with(text)) {
      const bool off = !switch_.ignored && text != switch_.harmless;
      out_.note(file_, at, off ? cat("'", text, "' switches it off") : std::string(switch_.why));
    } else {
      out_.refuse(file_, at, cat("'", text, "': ", switch_.why));
    }
  }

  fs::path path_;
  std::string file_;
  std::string distributed_;
  std::vector<std::string> launcher_keys_;
  FileSettings out_;
};

YAML::Node load_accelerate_file(const fs::path& path) {
  std::error_code error;
  if (!fs::is_regular_file(path, error)) {
    throw Error(cat("accelerate_config: '", path.string(),
                    "': no such file (an accelerate config, e.g. "
                    "~/.cache/huggingface/accelerate/default_config.yaml)"));
  }
  try {
    return YAML::LoadFile(path.string());
  } catch (const YAML::Exception& failure) {
    throw Error(cat(path.string(), ":", failure.mark.line + 1, ": not valid YAML: ", failure.msg));
  }
}

}  // namespace

int accelerate_num_processes(const fs::path& path) {
  const YAML::Node root = load_accelerate_file(path);
  if (!root.IsMap() || !root["num_processes"]) return -1;
  const std::string text = scalar(root["num_processes"]);
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  AT_CHECK(!text.empty() && *end == '\0' && value >= 1 && value <= 1 << 20, path.string(),
           ": num_processes: expected a count of ranks (1 or more), got '", text, "'");
  return static_cast<int>(value);
}

FileSettings read_accelerate_config(const fs::path& path) {
  const YAML::Node root = load_accelerate_file(path);
  try {
    return AccelerateReader(path).read(root);
  } catch (const YAML::Exception& failure) {
    throw Error(cat(path.string(), ":", failure.mark.line + 1, ": ", failure.msg));
  }
}

}  // namespace autotrain::config
