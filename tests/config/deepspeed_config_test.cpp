// DeepSpeed JSON and accelerate configs as sources of parameters: what each key maps to, "auto",
// the precedence beneath the YAML and the flags, conflicts, notes and refusals.
#include <gtest/gtest.h>

#include "autotrain/config/load.hpp"
#include "autotrain/model/folder.hpp"
#include "expect_error.hpp"
#include "test_support.hpp"

namespace autotrain::config::deepspeed_config_test {
namespace {

using autotrain::testing::contains;
using autotrain::testing::error_message;
using autotrain::testing::TempDir;
using autotrain::testing::write_file;

constexpr const char* kDeepSpeed = R"({
  "bf16": {"enabled": true},
  "zero_optimization": {"stage": 2, "overlap_comm": true, "reduce_bucket_size": 5e5,
                        "offload_optimizer": {"device": "nvme", "nvme_path": "/local/nvme",
                                              "pin_memory": true},
                        "stage3_gather_16bit_weights_on_model_save": true},
  "optimizer": {"type": "AdamW",
                "params": {"lr": 2e-4, "betas": [0.9, 0.95], "eps": 1e-6, "weight_decay": 0.1}},
  "scheduler": {"type": "WarmupCosineLR",
                "params": {"warmup_num_steps": 7, "warmup_type": "linear", "cos_min_ratio": 0.1,
                           "total_num_steps": "auto"}},
  "gradient_accumulation_steps": 3, "gradient_clipping": 0.5,
  "train_micro_batch_size_per_gpu": 4, "train_batch_size": "auto",
  "steps_per_print": 50})";

ResolvedParams load(const std::vector<FlagValue>& flags, const std::filesystem::path& yaml = {},
                    const std::filesystem::path& json = {}) {
  return load_params({yaml, json, flags}, model::folder_shape);
}

TEST(DeepSpeedConfig, MapsEachKeyToItsParameterWithItsSource) {
  TempDir dir;
  write_file(dir / "ds.json", kDeepSpeed);
  const std::string ds = (dir / "ds.json").string();
  const ResolvedParams resolved =
      load({{"deepspeed", "--deepspeed", ds}, {"model", "--model", "tiny"}});
  const TrainingParams& p = resolved.params;
  EXPECT_EQ(p.mixed_precision, "bf16");
  EXPECT_EQ(p.zero_stage, 2);
  EXPECT_EQ(p.reduce_bucket_size, 500000);
  EXPECT_TRUE(p.zero3_save_16bit_model);
  EXPECT_EQ(p.optimizer, "adamw");
  EXPECT_EQ(p.lr, 2e-4);
  EXPECT_EQ(p.adam_beta1, 0.9);
  EXPECT_EQ(p.adam_beta2, 0.95);
  EXPECT_EQ(p.adam_epsilon, 1e-6);
  EXPECT_EQ(p.weight_decay, 0.1);
  EXPECT_EQ(p.scheduler, "cosine_with_min_lr");
  EXPECT_EQ(p.min_lr_rate, 0.1);
  EXPECT_EQ(p.warmup_steps, 7);
  EXPECT_EQ(p.warmup_type, "linear");
  EXPECT_EQ(p.gradient_accumulation, 3);
  EXPECT_EQ(p.max_grad_norm, 0.5);
  EXPECT_EQ(p.batch_size, 4);
  EXPECT_EQ(p.offload_optimizer_device, "nvme");
  EXPECT_EQ(p.offload_param_device, "none");
  EXPECT_EQ(p.nvme_path, "/local/nvme");
  // "auto": left to the other sources, as transformers fills it from the trainer's arguments.
  EXPECT_EQ(p.global_batch_size, -1);
  EXPECT_EQ(p.max_steps, -1);
  EXPECT_EQ(resolved.provenance.at("zero_stage"), ds + ":zero_optimization.stage");
  EXPECT_EQ(resolved.provenance.at("adam_beta2"), ds + ":optimizer.params.betas");
  EXPECT_EQ(resolved.provenance.at("mixed_precision"), ds + ":bf16.enabled");
  bool noted = false;
  for (const auto& note : resolved.notes) noted |= contains(note, "zero_optimization.overlap_comm");
  EXPECT_TRUE(noted);
}

TEST(DeepSpeedConfig, SchedulersTakeDeepSpeedsDefaults) {
  TempDir dir;
  write_file(dir / "ds.json", R"({"scheduler": {"type": "WarmupLR",
      "params": {"warmup_min_lr": 0, "warmup_max_lr": 1e-3, "warmup_num_steps": 10}}})");
  const ResolvedParams resolved = load({{"deepspeed", "--deepspeed", (dir / "ds.json").string()}});
  EXPECT_EQ(resolved.params.scheduler, "constant_with_warmup");
  EXPECT_EQ(resolved.params.warmup_type, "log");  // DeepSpeed's default ramp
  EXPECT_EQ(resolved.params.lr, 1e-3);
  write_file(dir / "cos.json", R"({"scheduler": {"type": "WarmupCosineLR", "params": {}}})");
  EXPECT_EQ(load({{"deepspeed", "--deepspeed", (dir / "cos.json").string()}}).params.min_lr_rate,
            0.0001);
}

TEST(DeepSpeedConfig, FlagsAndYamlOverrideItWithANote) {
  TempDir dir;
  write_file(dir / "ds.json", kDeepSpeed);
  write_file(dir / "c.yaml", "deepspeed: " + (dir / "ds.json").string() +
                                 "\nparams:\n  gradient_accumulation: 5\n");
  write_file(dir / "p.json", R"({"batch_size": 9, "seed": 3})");
  const ResolvedParams resolved = load({{"lr", "--lr", "1e-3"}}, dir / "c.yaml", dir / "p.json");
  EXPECT_EQ(resolved.params.lr, 1e-3);
  EXPECT_EQ(resolved.params.gradient_accumulation, 5);
  EXPECT_EQ(resolved.params.batch_size, 4);  // the DeepSpeed config beats training_params.json
  EXPECT_EQ(resolved.params.seed, 3);
  EXPECT_EQ(resolved.provenance.at("deepspeed"), (dir / "c.yaml").string() + ":deepspeed");
  bool noted = false;
  for (const auto& note : resolved.notes) {
    noted |= contains(note, "lr 0.001 from --lr overrides 2e-04 from");
  }
  EXPECT_TRUE(noted);
}

TEST(DeepSpeedConfig, ReportsEveryRefusedKeyAtOnce) {
  TempDir dir;
  write_file(dir / "ds.json", R"({"zero_optimization": {"stage": 3,
      "offload_optimizer": "cpu", "stage3_magic": 1},
      "optimizer": {"type": "Lamb"}, "scheduler": {"type": "OneCycle"},
      "fp16": {"enabled": true, "loss_scale": 128}, "pipeline": {"stages": 2},
      "train_micro_batch_size_per_gpu": "four", "zero_optimisation": {},
      "bf16": {"enabled": false}})");
  const std::string message = error_message([&] {
    load({{"deepspeed", "--deepspeed", (dir / "ds.json").string()}});
  });
  for (const char* part :
       {"zero_optimization.offload_optimizer: expected an object", "stage3_magic",
        "optimizer.type: 'Lamb'", "scheduler.type: 'OneCycle'", "fp16.loss_scale",
        "pipeline:", "train_micro_batch_size_per_gpu: expected a number",
        "zero_optimisation: not a DeepSpeed key autotrain knows (did you mean "
        "'zero_optimization'?)",
        "ds.json"}) {
    EXPECT_TRUE(contains(message, part)) << part;
  }
  EXPECT_TRUE(contains(error_message([&] {
                         load({{"deepspeed", "--deepspeed", "/no/ds.json"}});
                       }),
                       "'/no/ds.json': no such file"));
}

constexpr const char* kAccelerate = R"(compute_environment: LOCAL_MACHINE
debug: false
deepspeed_config:
  gradient_accumulation_steps: 2
  offload_optimizer_device: none
  offload_param_device: none
  zero3_init_flag: true
  zero3_save_16bit_model: true
  zero_stage: 3
distributed_type: DEEPSPEED
downcast_bf16: 'no'
machine_rank: 0
main_process_port: 29611
main_training_function: main
mixed_precision: fp16
num_machines: 2
num_processes: 8
rdzv_backend: static
same_network: true
use_cpu: false
)";

TEST(AccelerateConfig, MapsItsKeysAndItsDeepSpeedBlock) {
  TempDir dir;
  write_file(dir / "acc.yaml", kAccelerate);
  const std::string acc = (dir / "acc.yaml").string();
  const ResolvedParams resolved = load({{"accelerate_config", "--accelerate-config", acc}});
  const TrainingParams& p = resolved.params;
  EXPECT_EQ(p.distributed_backend, "deepspeed");
  EXPECT_EQ(p.zero_stage, 3);
  EXPECT_EQ(p.gradient_accumulation, 2);
  EXPECT_TRUE(p.zero3_save_16bit_model);
  EXPECT_EQ(p.mixed_precision, "fp16");
  EXPECT_EQ(p.master_port, 29611);
  EXPECT_EQ(p.num_nodes, 2);
  EXPECT_EQ(p.num_gpus_per_node, 4);
  EXPECT_EQ(resolved.provenance.at("num_gpus_per_node"), acc + ":num_processes");
  EXPECT_EQ(resolved.provenance.at("zero_stage"), acc + ":deepspeed_config.zero_stage");
}

TEST(AccelerateConfig, ConflictsWithTheDeepSpeedJsonNameBoth) {
  TempDir dir;
  write_file(dir / "acc.yaml", kAccelerate);
  write_file(dir / "ds.json", kDeepSpeed);  // stage 2, accumulation 3, bf16
  const std::string message = error_message([&] {
    load({{"accelerate_config", "--accelerate-config", (dir / "acc.yaml").string()},
          {"deepspeed", "--deepspeed", (dir / "ds.json").string()}});
  });
  EXPECT_TRUE(contains(message, "zero_stage: "));
  EXPECT_TRUE(contains(message, "ds.json:zero_optimization.stage gives 2 but"));
  EXPECT_TRUE(contains(message, "acc.yaml:deepspeed_config.zero_stage gives 3"));
  EXPECT_TRUE(contains(message, "mixed_precision: "));
}

TEST(AccelerateConfig, RefusesWhatItCannotDo) {
  TempDir dir;
  write_file(dir / "acc.yaml", R"(distributed_type: FSDP
mixed_precision: fp8
gpu_ids: 0,1
num_machines: 3
num_processes: 8
deepspeed_config:
  deepspeed_multinode_launcher: pdsh
  deepspeed_hostfile: /etc/hosts
distributd_type: NO
)");
  const std::string message = error_message([&] {
    load({{"accelerate_config", "--accelerate-config", (dir / "acc.yaml").string()}});
  });
  for (const char* part :
       {"distributed_type: FSDP is not offered", "mixed_precision: fp8", "CUDA_VISIBLE_DEVICES=0,1",
        "num_processes: expected a count of ranks that num_machines (3) divides",
        "deepspeed_config.deepspeed_multinode_launcher: 'pdsh'", "deepspeed_hostfile",
        "distributd_type: not an accelerate key"}) {
    EXPECT_TRUE(contains(message, part)) << part;
  }
}

}  // namespace
}  // namespace autotrain::config::deepspeed_config_test
