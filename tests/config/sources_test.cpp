// Loading parameters from training_params.json, YAML and flags: precedence, provenance, the
// AutoTrain YAML layout, ${ENV}, errors, and the JSON round trip.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "autotrain/config/load.hpp"
#include "autotrain/model/folder.hpp"
#include "expect_error.hpp"
#include "test_support.hpp"

namespace autotrain::config::sources_test {
namespace {

using autotrain::testing::contains;
using autotrain::testing::error_message;
using autotrain::testing::fixture;
using autotrain::testing::TempDir;
using autotrain::testing::write_file;

ResolvedParams load_yaml(const std::filesystem::path& path) {
  return load_params(ConfigInputs{path, {}, {}}, model::folder_shape);
}

TEST(YamlConfig, ReadsAutoTrainLayoutWithColumnMappingAndDistributedBlock) {
  const auto path = fixture("config/autotrain_llm.yaml");
  const ResolvedParams resolved = load_yaml(path);
  const TrainingParams& params = resolved.params;
  // A Hub id stays as written (the cache is searched under it); its preset gives the shape.
  EXPECT_EQ(params.model, "openai-community/gpt2");
  EXPECT_EQ(params.n_embd, 768);
  EXPECT_EQ(params.project_name, "shakespeare-gpt2");
  EXPECT_EQ(params.data_path, "data/shakespeare");
  EXPECT_EQ(params.valid_split, "valid");
  EXPECT_EQ(params.text_column, "content");
  EXPECT_EQ(params.block_size, 512);
  EXPECT_EQ(params.lr, 6e-4);
  EXPECT_EQ(params.epochs, 2);
  EXPECT_EQ(params.batch_size, 8);
  EXPECT_EQ(params.warmup_ratio, 0.05);
  EXPECT_EQ(params.optimizer, "adamw");
  EXPECT_EQ(params.scheduler, "cosine");
  EXPECT_EQ(params.mixed_precision, "bf16");
  EXPECT_FALSE(params.add_eos_token);
  EXPECT_EQ(params.reduce_bucket_size, 50000000);
  EXPECT_EQ(params.zero_stage, 3);
  EXPECT_EQ(params.comm_backend, "gloo");
  EXPECT_EQ(params.num_nodes, 2);
  EXPECT_EQ(params.num_gpus_per_node, 4);
  EXPECT_EQ(params.eval_strategy, "epoch");

  const std::string file = path.string();
  EXPECT_EQ(resolved.provenance.at("lr"), file + ":params.lr");
  EXPECT_EQ(resolved.provenance.at("model"), file + ":base_model");
  EXPECT_EQ(resolved.provenance.at("text_column"), file + ":data.column_mapping.text_column");
  EXPECT_EQ(resolved.provenance.at("comm_backend"), file + ":distributed.backend");
  EXPECT_EQ(resolved.provenance.at("zero_stage"), "derived from distributed_backend (deepspeed)");
  EXPECT_EQ(resolved.provenance.at("seed"), "default");
  // backend is AutoTrain's: noted, not silently dropped; log is the parameter.
  ASSERT_EQ(resolved.notes.size(), 1u);
  EXPECT_TRUE(contains(resolved.notes[0], "backend: ignored"));
  EXPECT_EQ(params.log, "tensorboard");
  EXPECT_EQ(resolved.provenance.at("log"), file + ":log");
}

TEST(YamlConfig, SubstitutesEnvironmentVariables) {
  TempDir dir;
  ::setenv("AUTOTRAIN_TEST_SCRATCH", "/scratch/me", 1);
  ::setenv("AUTOTRAIN_TEST_LR", "1e-4", 1);
  write_file(
      dir / "x.yaml",
      "data:\n  path: ${AUTOTRAIN_TEST_SCRATCH}/corpus\nparams:\n  lr: ${AUTOTRAIN_TEST_LR}\n");
  const ResolvedParams resolved = load_yaml(dir / "x.yaml");
  EXPECT_EQ(resolved.params.data_path, "/scratch/me/corpus");
  EXPECT_EQ(resolved.params.lr, 1e-4);
}

TEST(YamlConfig, RejectsMissingEnvironmentVariableNamingIt) {
  TempDir dir;
  ::unsetenv("AUTOTRAIN_TEST_UNSET");
  write_file(dir / "x.yaml", "params:\n  data_path: ${AUTOTRAIN_TEST_UNSET}\n");
  const std::string message = error_message([&] { load_yaml(dir / "x.yaml"); });
  EXPECT_TRUE(contains(message, "params.data_path: environment variable 'AUTOTRAIN_TEST_UNSET'"));
  EXPECT_TRUE(contains(message, "is not set in " + (dir / "x.yaml").string()));
}

TEST(YamlConfig, RejectsUnknownParamWithSuggestion) {
  TempDir dir;
  write_file(dir / "x.yaml", "params:\n  batch_sise: 4\n");
  EXPECT_EQ(error_message([&] { load_yaml(dir / "x.yaml"); }),
            "params.batch_sise: unknown parameter 'batch_sise' (did you mean 'batch_size'?) in " +
                (dir / "x.yaml").string());
}

TEST(YamlConfig, RejectsUnknownTopLevelAndDataKeys) {
  TempDir dir;
  write_file(dir / "a.yaml", "paramz:\n  lr: 1\n");
  EXPECT_TRUE(contains(error_message([&] { load_yaml(dir / "a.yaml"); }),
                       "paramz: unknown key 'paramz' (did you mean 'params'?)"));
  write_file(dir / "b.yaml", "data:\n  column_mapping:\n    question_column: q\n");
  EXPECT_TRUE(contains(error_message([&] { load_yaml(dir / "b.yaml"); }),
                       "data.column_mapping.question_column: unknown column"));
}

TEST(YamlConfig, ReadsThePreferenceColumnsAndNullBoundsAsAutoTrainWritesThem) {
  TempDir dir;
  write_file(dir / "x.yaml",
             "data:\n  column_mapping:\n    prompt_text_column: question\n"
             "    text_column: better\n    rejected_text_column: worse\n"
             "params:\n  max_prompt_length: 256\n  max_completion_length: null\n");
  const ResolvedParams resolved = load_yaml(dir / "x.yaml");
  EXPECT_EQ(resolved.params.prompt_text_column, "question");
  EXPECT_EQ(resolved.params.text_column, "better");
  EXPECT_EQ(resolved.params.rejected_text_column, "worse");
  EXPECT_EQ(resolved.params.max_prompt_length, 256);
  EXPECT_EQ(resolved.params.max_completion_length, -1);
  write_file(dir / "p.json", R"({"max_completion_length": null, "max_prompt_length": 0})");
  EXPECT_TRUE(contains(error_message([&] {
                         load_params({{}, dir / "p.json", {}}, model::folder_shape);
                       }),
                       "max_prompt_length: expected -1 or"));
}

TEST(YamlConfig, PreferenceTrainersReadChosenFromTextColumnAndTellColumnsApart) {
  TempDir dir;
  write_file(dir / "dpo.yaml", "params:\n  trainer: dpo\n");
  const ResolvedParams dpo = load_yaml(dir / "dpo.yaml");
  EXPECT_EQ(dpo.params.text_column, "chosen");
  EXPECT_EQ(dpo.provenance.at("text_column"), "derived from trainer (dpo)");
  write_file(dir / "same.yaml",
             "data:\n  column_mapping:\n    text_column: answer\n    rejected_text_column: answer\n"
             "params:\n  trainer: orpo\n");
  EXPECT_TRUE(contains(error_message([&] { load_yaml(dir / "same.yaml"); }),
                       "rejected_text_column answer (from"));
}

TEST(YamlConfig, RejectsWrongTypeNamingKeyAndFile) {
  TempDir dir;
  write_file(dir / "x.yaml", "params:\n  lr: fast\n");
  EXPECT_EQ(error_message([&] { load_yaml(dir / "x.yaml"); }),
            "params.lr: expected a number, got 'fast' in " + (dir / "x.yaml").string());
  write_file(dir / "y.yaml", "params:\n  epochs: [1, 2]\n");
  EXPECT_TRUE(contains(error_message([&] { load_yaml(dir / "y.yaml"); }),
                       "params.epochs: expected an integer, got a list"));
}

TEST(YamlConfig, RejectsTasksOtherThanAutoTrainsLlmTasks) {
  TempDir dir;
  write_file(dir / "x.yaml", "task: text-classification\n");
  EXPECT_TRUE(contains(error_message([&] { load_yaml(dir / "x.yaml"); }),
                       "task: expected llm|llm-generic|llm-sft|lm|llm-dpo|llm-orpo|llm-reward"));
}

// AutoTrain's llm-dpo and llm-orpo name their trainer; params.trainer may repeat it, not
// contradict it.
TEST(YamlConfig, PreferenceTasksSetTheirTrainer) {
  TempDir dir;
  write_file(dir / "x.yaml", "task: llm-orpo\n");
  const ResolvedParams resolved = load_yaml(dir / "x.yaml");
  EXPECT_EQ(resolved.params.trainer, "orpo");
  EXPECT_TRUE(contains(resolved.provenance.at("trainer"), "task"));
  write_file(dir / "y.yaml", "task: llm-dpo\nparams:\n  trainer: dpo\n  dpo_beta: 0.2\n");
  EXPECT_EQ(load_yaml(dir / "y.yaml").params.dpo_beta, 0.2);
  write_file(dir / "z.yaml", "task: llm-dpo\nparams:\n  trainer: sft\n");
  EXPECT_TRUE(contains(error_message([&] { load_yaml(dir / "z.yaml"); }),
                       "params.trainer: trainer sft contradicts task llm-dpo"));
}

TEST(YamlConfig, QuantizationWithPeftIsQloraAndRefusesParameterOffload) {
  TempDir dir;
  write_file(dir / "x.yaml", "params:\n  peft: true\n  quantization: int4\n");
  EXPECT_EQ(load_yaml(dir / "x.yaml").params.quantization, "int4");
  write_file(dir / "y.yaml",
             "params:\n  peft: true\n  quantization: int8\n  offload_param_device: cpu\n");
  EXPECT_TRUE(contains(error_message([&] { load_yaml(dir / "y.yaml"); }),
                       "quantized frozen weights stay on the device"));
}

TEST(YamlConfig, AcceptsValuesThatLeaveAnAutoTrainFeatureOff) {
  TempDir dir;
  write_file(dir / "x.yaml",
             "data:\n  chat_template: null\nparams:\n  peft: false\n  quantization: null\n"
             "  merge_adapter: false\n  target_modules: null\n");
  const ResolvedParams resolved = load_yaml(dir / "x.yaml");
  EXPECT_TRUE(resolved.notes.empty());  // all of them are parameters
  EXPECT_EQ(resolved.params.chat_template, "none");
  EXPECT_FALSE(resolved.params.peft);
  write_file(dir / "p.json", R"({"peft": false, "quantization": null, "lr": 1e-4})");
  EXPECT_EQ(load_params({{}, dir / "p.json", {}}, model::folder_shape).params.lr, 1e-4);
}

TEST(YamlConfig, ReadsChatTemplateFromDataOrParamsOnce) {
  TempDir dir;
  write_file(dir / "y.yaml", "data:\n  chat_template: chatml\nparams:\n  trainer: sft\n");
  const ResolvedParams resolved = load_yaml(dir / "y.yaml");
  EXPECT_EQ(resolved.params.chat_template, "chatml");
  EXPECT_EQ(resolved.params.trainer, "sft");
  write_file(dir / "z.yaml", "data:\n  chat_template: chatml\nparams:\n  chat_template: zephyr\n");
  EXPECT_TRUE(contains(error_message([&] { load_yaml(dir / "z.yaml"); }),
                       "'chat_template' is already given as data.chat_template"));
  write_file(dir / "w.yaml", "params:\n  chat_template: jinja\n");
  EXPECT_TRUE(
      contains(error_message([&] { load_yaml(dir / "w.yaml"); }), "none|tokenizer|chatml|zephyr"));
  write_file(dir / "t.yaml", "params:\n  trainer: ppo\n");
  EXPECT_TRUE(
      contains(error_message([&] { load_yaml(dir / "t.yaml"); }), "default|sft|dpo|orpo|reward"));
}

TEST(YamlConfig, SuggestsOurNameForTransformersAndAutoTrainNames) {
  TempDir dir;
  write_file(dir / "x.yaml", "params:\n  save_steps: 100\n");
  EXPECT_TRUE(contains(error_message([&] { load_yaml(dir / "x.yaml"); }),
                       "unknown parameter 'save_steps' (did you mean 'checkpoint_every'?"));
  write_file(dir / "p.json", R"({"learning_rate": 1e-4})");
  EXPECT_TRUE(contains(error_message([&] {
                         load_params({{}, dir / "p.json", {}}, model::folder_shape);
                       }),
                       "(did you mean 'lr'?"));
}

TEST(YamlConfig, RejectsTheSameParameterGivenTwice) {
  TempDir dir;
  write_file(dir / "x.yaml", "project_name: a\nparams:\n  project_name: b\n");
  EXPECT_TRUE(contains(error_message([&] { load_yaml(dir / "x.yaml"); }),
                       "params.project_name: 'project_name' is already given as project_name"));
}

TEST(YamlConfig, ReportsSyntaxErrorsWithLine) {
  TempDir dir;
  write_file(dir / "x.yaml", "params:\n  lr: [1, 2\n");
  EXPECT_TRUE(contains(error_message([&] { load_yaml(dir / "x.yaml"); }), "not valid YAML"));
  EXPECT_TRUE(contains(error_message([&] { load_yaml(dir / "missing.yaml"); }),
                       "--config '" + (dir / "missing.yaml").string() + "': no such file"));
}

TEST(YamlConfig, NullMeansNoneForAutoTrainOptionalStrings) {
  TempDir dir;
  write_file(dir / "x.yaml", "data:\n  valid_split: null\nparams:\n  mixed_precision: ~\n");
  const ResolvedParams resolved = load_yaml(dir / "x.yaml");
  EXPECT_EQ(resolved.params.valid_split, "");
  EXPECT_EQ(resolved.params.mixed_precision, "no");
}

TEST(JsonConfig, RejectsUnknownKeyAndWrongTypeNamingTheFile) {
  TempDir dir;
  write_file(dir / "p.json", R"({"lr": 1e-4, "warmup_ratioo": 0.2})");
  EXPECT_EQ(error_message([&] {
              load_params({{}, dir / "p.json", {}}, model::folder_shape);
            }),
            "warmup_ratioo: unknown parameter 'warmup_ratioo' (did you mean 'warmup_ratio'?) in " +
                (dir / "p.json").string());
  write_file(dir / "q.json", R"({"batch_size": "eight"})");
  EXPECT_TRUE(contains(error_message([&] {
                         load_params({{}, dir / "q.json", {}}, model::folder_shape);
                       }),
                       "batch_size: expected an integer, got 'eight' in"));
  write_file(dir / "r.json", R"([1, 2])");
  EXPECT_TRUE(contains(error_message([&] {
                         load_params({{}, dir / "r.json", {}}, model::folder_shape);
                       }),
                       "expected a JSON object of parameters"));
}

// AutoTrain's training_params.json as it writes it: every LLMTrainingParams field, its
// defaults; loads in one run, with notes for what changes nothing here.
TEST(JsonConfig, LoadsAnAutoTrainTrainingParamsJsonInOneRun) {
  TempDir dir;
  write_file(dir / "p.json", R"({"model": "gpt2", "project_name": "project-name",
    "data_path": "data", "train_split": "train", "valid_split": null, "add_eos_token": true,
    "block_size": -1, "model_max_length": 2048, "padding": "right", "trainer": "default",
    "use_flash_attention_2": false, "log": "none", "disable_gradient_checkpointing": false,
    "logging_steps": -1, "eval_strategy": "epoch", "save_total_limit": 1,
    "auto_find_batch_size": false, "mixed_precision": null, "lr": 3e-05, "epochs": 1,
    "batch_size": 2, "warmup_ratio": 0.1, "gradient_accumulation": 4,
    "optimizer": "adamw_torch", "scheduler": "linear", "weight_decay": 0.0,
    "max_grad_norm": 1.0, "seed": 42, "chat_template": null, "quantization": "int4",
    "target_modules": "all-linear", "merge_adapter": false, "peft": false, "lora_r": 16,
    "lora_alpha": 32, "lora_dropout": 0.05, "model_ref": null, "dpo_beta": 0.1,
    "max_prompt_length": 128, "max_completion_length": null, "prompt_text_column": null,
    "text_column": "text", "rejected_text_column": null, "push_to_hub": false,
    "username": null, "token": null, "unsloth": false, "distributed_backend": null})");
  const ResolvedParams resolved = load_params({{}, dir / "p.json", {}}, model::folder_shape);
  EXPECT_EQ(resolved.params.optimizer, "adamw");
  EXPECT_EQ(resolved.params.log, "none");
  // model_max_length, padding, use_flash_attention_2, unsloth, push_to_hub, username, token,
  // quantization, ...: noted; the preference keys are parameters (null bounds = -1, none).
  EXPECT_GE(resolved.notes.size(), 8u);
  EXPECT_EQ(resolved.params.max_completion_length, -1);
  EXPECT_EQ(resolved.params.prompt_text_column, "");
}

TEST(JsonConfig, ReportsEveryProblemOfEverySourceAtOnce) {
  TempDir dir;
  write_file(dir / "p.json", R"({"lrr": 1e-4, "batch_size": "eight", "scheduler": "onecycle"})");
  write_file(dir / "c.yaml", "params:\n  epochs: many\n");
  const std::string message = error_message([&] {
    load_params({dir / "c.yaml", dir / "p.json", {{"seed", "--seed", "x"}}}, model::folder_shape);
  });
  for (const char* part : {"unknown parameter 'lrr'", "batch_size: expected an integer",
                           "scheduler", "params.epochs: expected an integer", "--seed"}) {
    EXPECT_TRUE(contains(message, part)) << part;
  }
}

TEST(Precedence, FlagBeatsYamlBeatsJsonBeatsDefault) {
  TempDir dir;
  write_file(dir / "p.json", R"({"lr": 1e-3, "epochs": 5, "seed": 7, "batch_size": 3})");
  write_file(dir / "c.yaml", "params:\n  lr: 2e-3\n  epochs: 6\n");
  const ResolvedParams resolved =
      load_params({dir / "c.yaml", dir / "p.json", {{"lr", "--lr", "3e-3"}}}, model::folder_shape);
  EXPECT_EQ(resolved.params.lr, 3e-3);
  EXPECT_EQ(resolved.params.epochs, 6);
  EXPECT_EQ(resolved.params.seed, 7);
  EXPECT_EQ(resolved.params.gradient_accumulation, 4);
  EXPECT_EQ(resolved.provenance.at("lr"), "--lr");
  EXPECT_EQ(resolved.provenance.at("epochs"), (dir / "c.yaml").string() + ":params.epochs");
  EXPECT_EQ(resolved.provenance.at("seed"), (dir / "p.json").string());
  EXPECT_EQ(resolved.provenance.at("gradient_accumulation"), "default");
}

TEST(Precedence, OverriddenSourcesAreStillChecked) {
  TempDir dir;
  write_file(dir / "c.yaml", "params:\n  lr: fast\n");
  EXPECT_TRUE(
      contains(error_message([&] {
                 load_params({dir / "c.yaml", {}, {{"lr", "--lr", "1e-3"}}}, model::folder_shape);
               }),
               "params.lr: expected a number, got 'fast'"));
}

TEST(Flags, KebabAndSnakeSpellingsSetTheSameParameter) {
  ResolvedParams kebab = default_params();
  apply_flags(kebab, {{"batch_size", "--batch-size", "8"}});
  ResolvedParams snake = default_params();
  apply_flags(snake, {{"batch_size", "--batch_size", "8"}});
  EXPECT_EQ(kebab.params.batch_size, 8);
  EXPECT_EQ(kebab.params, snake.params);
  EXPECT_EQ(snake.provenance.at("batch_size"), "--batch_size");
  ResolvedParams both = default_params();
  EXPECT_TRUE(contains(error_message([&] {
                         apply_flags(both, {{"batch_size", "--batch-size", "8"},
                                            {"batch_size", "--batch_size", "4"}});
                       }),
                       "--batch_size: already given as --batch-size"));
}

TEST(JsonRoundTrip, WrittenParamsLoadBackExactly) {
  TempDir dir;
  ResolvedParams original = default_params();
  apply_flags(original, {{"lr", "--lr", "3e-5"},
                         {"warmup_ratio", "--warmup-ratio", "0.1"},
                         {"weight_decay", "--weight-decay", "0.30000000000000004"},
                         {"max_grad_norm", "--max-grad-norm", "0.7"},
                         {"valid_split", "--valid-split", "valid"},
                         {"add_eos_token", "--add-eos-token", "false"},
                         {"distributed_backend", "--distributed-backend", "deepspeed"},
                         {"reduce_bucket_size", "--reduce-bucket-size", "1234567890"}});
  resolve_params(original, model::folder_shape);
  const auto path = dir / "run" / "training_params.json";
  write_training_params(original.params, path);

  const ResolvedParams reloaded = load_params({{}, path, {}}, model::folder_shape);
  EXPECT_EQ(reloaded.params, original.params);
  EXPECT_EQ(reloaded.params.lr, 3e-5);
  EXPECT_EQ(reloaded.params.weight_decay, 0.30000000000000004);
  EXPECT_EQ(reloaded.provenance.at("zero_stage"), path.string());
  // Writing the reloaded parameters gives the same bytes.
  write_training_params(reloaded.params, dir / "again.json");
  EXPECT_EQ(autotrain::testing::read_file(path), autotrain::testing::read_file(dir / "again.json"));
}

TEST(JsonRoundTrip, JsonHoldsEveryParameterInTableOrder) {
  const auto json = to_json(TrainingParams{});
  ASSERT_EQ(json.size(), param_specs().size());
  EXPECT_EQ(json.begin().key(), "model");
  EXPECT_EQ(json.at("lr").get<double>(), 3e-5);
  EXPECT_EQ(json.at("add_eos_token").get<bool>(), true);
}

TEST(DryRunTable, ListsEveryParameterWithValueAndSource) {
  ResolvedParams resolved = default_params();
  apply_flags(resolved, {{"lr", "--lr", "1e-4"}});
  resolve_params(resolved, model::folder_shape);
  const std::string table = render_params_table(resolved);
  EXPECT_TRUE(contains(table, "parameter"));
  const size_t lr_line = table.find("\nlr ");
  ASSERT_NE(lr_line, std::string::npos);
  const std::string line = table.substr(lr_line + 1, table.find('\n', lr_line + 1) - lr_line - 1);
  EXPECT_TRUE(contains(line, " 1e-04 "));
  EXPECT_TRUE(line.ends_with(" --lr")) << line;
  EXPECT_TRUE(contains(table, "derived from distributed_backend (none)"));
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'),
            static_cast<long>(param_specs().size() + 1));
}

}  // namespace
}  // namespace autotrain::config::sources_test

namespace autotrain::config::sources_test {
namespace {

// transformers' lr_scheduler_kwargs: a mapping in YAML, an object in JSON, text on the command
// line; all three hold the same JSON object.
TEST(SchedulerKwargs, MappingObjectAndTextAreTheSameKeywords) {
  using autotrain::testing::TempDir;
  using autotrain::testing::write_file;
  TempDir dir;
  write_file(dir / "c.yaml",
             "params:\n  lr_scheduler_kwargs: {num_decay_steps: 4, decay_type: linear, "
             "min_lr_ratio: 0.1, fast: true}\n");
  write_file(dir / "p.json",
             R"({"lr_scheduler_kwargs": {"num_decay_steps": 4, "decay_type": "linear",
                 "min_lr_ratio": 0.1, "fast": true}})");
  const std::string want =
      R"({"decay_type":"linear","fast":true,"min_lr_ratio":0.1,"num_decay_steps":4})";
  EXPECT_EQ(load_params({dir / "c.yaml", {}, {}}, model::folder_shape).params.lr_scheduler_kwargs,
            want);
  EXPECT_EQ(load_params({{}, dir / "p.json", {}}, model::folder_shape).params.lr_scheduler_kwargs,
            want);
  EXPECT_EQ(load_params({{}, {}, {{"lr_scheduler_kwargs", "--lr-scheduler-kwargs", want}}},
                        model::folder_shape)
                .params.lr_scheduler_kwargs,
            want);
}

}  // namespace
}  // namespace autotrain::config::sources_test
