// The parameter table: AutoTrain's defaults, value parsing and checking, derived values.
#include "autotrain/config/training_params.hpp"

#include <gtest/gtest.h>

#include "autotrain/config/load.hpp"
#include "autotrain/model/folder.hpp"
#include "expect_error.hpp"
#include "test_support.hpp"

namespace autotrain::config::training_params_test {
namespace {

using autotrain::testing::contains;
using autotrain::testing::error_message;

TEST(TrainingParams, DefaultsMatchAutoTrainAdvanced) {
  const TrainingParams params;
  EXPECT_EQ(params.model, "gpt2");
  EXPECT_EQ(params.project_name, "project-name");
  EXPECT_EQ(params.train_split, "train");
  EXPECT_EQ(params.valid_split, "");
  EXPECT_EQ(params.text_column, "text");
  EXPECT_TRUE(params.add_eos_token);
  EXPECT_EQ(params.lr, 3e-5);
  EXPECT_EQ(params.epochs, 1);
  EXPECT_EQ(params.batch_size, 2);
  EXPECT_EQ(params.block_size, -1);
  EXPECT_EQ(params.warmup_ratio, 0.1);
  EXPECT_EQ(params.gradient_accumulation, 4);
  EXPECT_EQ(params.optimizer, "adamw");  // AutoTrain's adamw_torch
  EXPECT_EQ(params.scheduler, "linear");
  EXPECT_EQ(params.weight_decay, 0.0);
  EXPECT_EQ(params.max_grad_norm, 1.0);
  EXPECT_EQ(params.seed, 42);
  EXPECT_EQ(params.logging_steps, -1);
  EXPECT_EQ(params.eval_strategy, "epoch");
  EXPECT_EQ(params.save_total_limit, 1);
  EXPECT_EQ(params.mixed_precision, "no");
  EXPECT_EQ(params.distributed_backend, "");
}

TEST(TrainingParams, TableHasOneRowPerFieldWithUniqueNames) {
  std::set<std::string_view> names;
  for (const auto& spec : param_specs()) {
    EXPECT_TRUE(names.insert(spec.name).second) << spec.name;
    EXPECT_FALSE(spec.doc.empty()) << spec.name;
  }
  EXPECT_EQ(names.size(), param_names().size());
  EXPECT_NE(find_param("batch-size"), nullptr);
  EXPECT_EQ(find_param("batch_sise"), nullptr);
}

TEST(TrainingParams, EveryDefaultPassesItsOwnConstraint) {
  const TrainingParams defaults;
  for (const auto& spec : param_specs()) {
    const ParamValue value = get_value(defaults, spec);
    EXPECT_EQ(check_value(spec, value, Where{std::string(spec.name), ""}), value) << spec.name;
  }
}

TEST(TrainingParams, ParsesTextIntoEachType) {
  const Where where{"--x", ""};
  EXPECT_EQ(parse_text(*find_param("lr"), "3e-5", where), ParamValue(3e-5));
  EXPECT_EQ(parse_text(*find_param("batch_size"), "8", where), ParamValue(int64_t{8}));
  EXPECT_EQ(parse_text(*find_param("reduce_bucket_size"), "5e8", where),
            ParamValue(int64_t{500000000}));
  EXPECT_EQ(parse_text(*find_param("add_eos_token"), "false", where), ParamValue(false));
  EXPECT_EQ(parse_text(*find_param("add_eos_token"), "True", where), ParamValue(true));
  EXPECT_EQ(parse_text(*find_param("optimizer"), "adamw_torch", where), ParamValue("adamw"));
  EXPECT_EQ(parse_text(*find_param("mixed_precision"), "None", where), ParamValue("no"));
  EXPECT_EQ(parse_text(*find_param("model"), "openai-community/gpt2-xl", where),
            ParamValue("openai-community/gpt2-xl"));
  EXPECT_EQ(model_preset("openai-community/gpt2-xl").n_layer, 48);
  EXPECT_EQ(parse_text(*find_param("max_shard_size"), "2GiB", where), ParamValue("2GiB"));
  EXPECT_EQ(parse_byte_size("2GiB", "max_shard_size"), uint64_t{1} << 31);
  EXPECT_EQ(parse_byte_size("5GB", "max_shard_size"), uint64_t{5000000000});
  EXPECT_EQ(parse_byte_size("1.5MB", "max_shard_size"), uint64_t{1500000});
  EXPECT_THROW(parse_text(*find_param("max_shard_size"), "5 parsecs", where), Error);
}

TEST(TrainingParams, RejectsWrongTypeNamingKeyValueAndFile) {
  const std::string message = error_message([] {
    parse_text(*find_param("lr"), "fast", Where{"params.lr", "configs/x.yaml"});
  });
  EXPECT_EQ(message, "params.lr: expected a number, got 'fast' in configs/x.yaml");
  EXPECT_TRUE(contains(error_message([] {
                         parse_text(*find_param("epochs"), "2.5", Where{"--epochs", ""});
                       }),
                       "--epochs: expected an integer, got '2.5'"));
  EXPECT_TRUE(contains(error_message([] {
                         parse_text(*find_param("add_eos_token"), "maybe", Where{"--x", ""});
                       }),
                       "expected true or false, got 'maybe'"));
}

TEST(TrainingParams, RejectsOutOfRangeValuesSayingWhatIsExpected) {
  const Where where{"--v", ""};
  EXPECT_TRUE(contains(error_message([&] { parse_text(*find_param("lr"), "0", where); }),
                       "--v: expected > 0, got 0"));
  EXPECT_TRUE(contains(error_message([&] { parse_text(*find_param("batch_size"), "0", where); }),
                       "expected in [1, 2147483647], got 0"));
  EXPECT_TRUE(contains(error_message([&] { parse_text(*find_param("zero_stage"), "4", where); }),
                       "expected -1 or in [0, 3], got 4"));
  EXPECT_TRUE(
      contains(error_message([&] { parse_text(*find_param("warmup_ratio"), "1.5", where); }),
               "expected in [0, 1], got 1.5"));
  EXPECT_TRUE(contains(error_message([&] { parse_text(*find_param("block_size"), "-2", where); }),
                       "expected -1 or in [1, 2147483647], got -2"));
  EXPECT_TRUE(contains(error_message([&] { parse_text(*find_param("lr"), "inf", where); }),
                       "expected a number"));
}

TEST(TrainingParams, RejectsUnknownChoiceWithSuggestionAndTheList) {
  const std::string message = error_message([] {
    parse_text(*find_param("optimizer"), "adamww", Where{"--optimizer", ""});
  });
  EXPECT_EQ(message,
            "--optimizer: expected adamw|adamw_8bit|paged_adamw_8bit|paged_adamw_32bit|sgd, got "
            "'adamww' (did you mean 'adamw'?)");
  EXPECT_TRUE(contains(error_message([] {
                         parse_text(*find_param("scheduler"), "step", Where{"--scheduler", ""});
                       }),
                       "expected "
                       "linear|cosine|cosine_with_restarts|polynomial|constant|constant_with_"
                       "warmup|inverse_sqrt|cosine_with_min_lr|warmup_stable_decay, got 'step'"));
}

TEST(TrainingParams, ProjectNameFollowsAutoTrainRule) {
  const ParamSpec& spec = *find_param("project_name");
  const Where where{"project_name", "x.yaml"};
  EXPECT_EQ(parse_text(spec, "my-run-2", where), ParamValue("my-run-2"));
  EXPECT_TRUE(contains(error_message([&] { parse_text(spec, "my_run", where); }),
                       "letters, digits and hyphens only ('_' is not allowed)"));
  EXPECT_TRUE(contains(error_message([&] { parse_text(spec, std::string(51, 'a'), where); }),
                       "at most 50 characters (it has 51)"));
}

TEST(TrainingParams, ProjectNameMayNotStartWithAHyphen) {
  const ParamSpec& spec = *find_param("project_name");
  const Where where{"project_name", "x.yaml"};
  EXPECT_EQ(parse_text(spec, "run-1", where), ParamValue("run-1"));
  EXPECT_TRUE(contains(error_message([&] { parse_text(spec, "-rf", where); }),
                       "a name that starts with a letter or digit, not '-'"));
}

TEST(TrainingParams, FormatsDoublesSoTheyReadBackExactly) {
  EXPECT_EQ(format_value(3e-5), "3e-05");
  EXPECT_EQ(format_value(0.1), "0.1");
  EXPECT_EQ(format_value(std::string()), "\"\"");
}

TEST(ResolveParams, ModelPresetFillsShapeAndTokenizerFillsVocab) {
  ResolvedParams resolved = default_params();
  resolve_params(resolved, model::folder_shape);
  EXPECT_EQ(resolved.params.n_layer, 12);
  EXPECT_EQ(resolved.params.n_head, 12);
  EXPECT_EQ(resolved.params.n_embd, 768);
  EXPECT_EQ(resolved.params.n_positions, 1024);
  EXPECT_EQ(resolved.params.block_size, 1024);
  EXPECT_EQ(resolved.params.vocab_size, 50257);
  EXPECT_EQ(resolved.provenance["n_layer"], "derived from model (gpt2)");
  EXPECT_EQ(resolved.provenance["vocab_size"], "derived from tokenizer (gpt2)");
  EXPECT_EQ(resolved.provenance["block_size"], "derived from n_positions");
}

TEST(ResolveParams, TinyModelAndByteTokenizer) {
  ResolvedParams resolved = default_params();
  apply_flags(resolved, {{"model", "--model", "tiny"}, {"tokenizer", "--tokenizer", "byte"}});
  resolve_params(resolved, model::folder_shape);
  EXPECT_EQ(resolved.params.n_layer, 2);
  EXPECT_EQ(resolved.params.n_head, 2);
  EXPECT_EQ(resolved.params.n_embd, 64);
  EXPECT_EQ(resolved.params.block_size, 128);
  EXPECT_EQ(resolved.params.vocab_size, 256);
}

TEST(ResolveParams, ZeroStageDerivesFromDistributedBackendUnlessGiven) {
  auto stage = [](std::vector<FlagValue> flags) {
    ResolvedParams resolved = default_params();
    apply_flags(resolved, flags);
    resolve_params(resolved, model::folder_shape);
    return std::make_pair(resolved.params.zero_stage, resolved.provenance["zero_stage"]);
  };
  EXPECT_EQ(stage({}), std::make_pair(int64_t{0}, std::string("derived from distributed_backend "
                                                              "(none)")));
  EXPECT_EQ(stage({{"distributed_backend", "--distributed-backend", "ddp"}}),
            std::make_pair(int64_t{0}, std::string("derived from distributed_backend (ddp)")));
  EXPECT_EQ(stage({{"distributed_backend", "--distributed-backend", "deepspeed"}}),
            std::make_pair(int64_t{3}, std::string("derived from distributed_backend "
                                                   "(deepspeed)")));
  EXPECT_EQ(stage({{"distributed_backend", "--distributed-backend", "deepspeed"},
                   {"zero_stage", "--zero-stage", "1"}}),
            std::make_pair(int64_t{1}, std::string("--zero-stage")));
  EXPECT_EQ(stage({{"distributed_backend", "--distributed-backend", "ddp"},
                   {"zero_stage", "--zero-stage", "2"}}),
            std::make_pair(int64_t{2}, std::string("--zero-stage")));
}

TEST(ResolveParams, EvaluationNeedsAValidationSplit) {
  ResolvedParams resolved = default_params();
  resolve_params(resolved, model::folder_shape);
  EXPECT_EQ(resolved.params.eval_strategy, "no");
  EXPECT_EQ(resolved.provenance["eval_strategy"], "derived from valid_split (none)");

  ResolvedParams with_split = default_params();
  apply_flags(with_split, {{"valid_split", "--valid-split", "valid"}});
  resolve_params(with_split, model::folder_shape);
  EXPECT_EQ(with_split.params.eval_strategy, "epoch");
}

TEST(ResolveParams, RejectsWidthNotDivisibleByHeadsNamingBothSources) {
  ResolvedParams resolved = default_params();
  apply_flags(resolved, {{"n_embd", "--n-embd", "100"}});
  const std::string message = error_message([&] { resolve_params(resolved, model::folder_shape); });
  EXPECT_EQ(message,
            "n_embd 100 (from --n-embd) must be divisible by n_head 12 (derived from model "
            "(gpt2)): each head gets n_embd / n_head channels");
}

TEST(ResolveParams, RejectsBlockSizeBeyondTheModelContext) {
  ResolvedParams resolved = default_params();
  apply_flags(resolved, {{"model", "--model", "tiny"}, {"block_size", "--block-size", "256"}});
  EXPECT_TRUE(contains(error_message([&] { resolve_params(resolved, model::folder_shape); }),
                       "block_size 256 (from --block-size) exceeds the model's context: expected "
                       "at most n_positions 128"));
}

TEST(ResolveParams, RejectsVocabularySmallerThanTheTokenizer) {
  ResolvedParams resolved = default_params();
  apply_flags(resolved, {{"vocab_size", "--vocab-size", "50000"}});
  EXPECT_TRUE(contains(error_message([&] { resolve_params(resolved, model::folder_shape); }),
                       "expected at least 50257"));
}

TEST(ResolveParams, TokenizerJsonGivesItsVocabularySizeAndAnUnknownPathIsNamed) {
  testing::TempDir dir;
  testing::write_file(dir / "tokenizer.json",
                      R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 70000}, "merges": []},
                          "added_tokens": [{"id": 70001, "content": "<eos>"}]})");
  ResolvedParams resolved = default_params();
  apply_flags(resolved, {{"tokenizer", "--tokenizer", dir.path().string()}});
  resolve_params(resolved, model::folder_shape);
  EXPECT_EQ(resolved.params.vocab_size, 70002);
  resolved = default_params();
  apply_flags(resolved, {{"tokenizer", "--tokenizer", dir.path().string()},
                         {"vocab_size", "--vocab-size", "70000"}});
  EXPECT_TRUE(contains(error_message([&] { resolve_params(resolved, model::folder_shape); }),
                       "expected at least 70002"));
  resolved = default_params();
  EXPECT_TRUE(contains(error_message([&] {
                         apply_flags(resolved, {{"tokenizer", "--tokenizer", "gtp2"}});
                       }),
                       "'gtp2' does not exist (did you mean 'gpt2'?)"));
}

TEST(ResolveParams, ValidSplitNoneMeansNoValidation) {
  ResolvedParams resolved = default_params();
  apply_flags(resolved, {{"valid_split", "--valid-split", "none"}});
  resolve_params(resolved, model::folder_shape);
  EXPECT_EQ(resolved.params.valid_split, "");
  EXPECT_EQ(resolved.params.eval_strategy, "no");
}

TEST(ResolveParams, RejectsNcclOnCpu) {
  ResolvedParams resolved = default_params();
  apply_flags(resolved,
              {{"comm_backend", "--comm-backend", "nccl"}, {"device", "--device", "cpu"}});
  EXPECT_TRUE(contains(error_message([&] { resolve_params(resolved, model::folder_shape); }),
                       "comm_backend nccl (from --comm-backend) needs GPUs"));
}

TEST(ValidateForWorld, NodesTimesGpusPerNodeMustEqualWorldSize) {
  TrainingParams params;
  params.num_nodes = 2;
  params.num_gpus_per_node = 4;
  EXPECT_NO_THROW(validate_for_world(params, 8));
  EXPECT_TRUE(contains(error_message([&] { validate_for_world(params, 6); }),
                       "num_nodes 2 x num_gpus_per_node 4 = 8 ranks, but the job has 6"));
}

TEST(ValidateForWorld, EachAloneMustDivideWorldSize) {
  TrainingParams nodes_only;
  nodes_only.num_nodes = 4;
  EXPECT_NO_THROW(validate_for_world(nodes_only, 8));
  EXPECT_TRUE(contains(error_message([&] { validate_for_world(nodes_only, 6); }),
                       "cannot be spread evenly over 4 nodes"));
  TrainingParams per_node_only;
  per_node_only.num_gpus_per_node = 4;
  EXPECT_TRUE(contains(error_message([&] { validate_for_world(per_node_only, 6); }),
                       "num_gpus_per_node 4"));
  EXPECT_NO_THROW(validate_for_world(TrainingParams{}, 3));
}

TEST(ValidateForWorld, TopologyMustMatchTheConfig) {
  TrainingParams params;
  params.num_nodes = 2;
  Topology topology;
  topology.world_size = 4;
  topology.local_world_size = 4;
  topology.num_nodes = 1;
  topology.launcher = "mpirun (Open MPI)";
  EXPECT_TRUE(contains(error_message([&] { validate_for_topology(params, topology); }),
                       "num_nodes 2 is in the config, but mpirun (Open MPI) started the job on 1 "
                       "node(s)"));
  TrainingParams per_node;
  per_node.num_gpus_per_node = 2;
  topology.visible_gpus = 4;
  topology.hostname = "n1";
  EXPECT_TRUE(contains(error_message([&] { validate_for_topology(per_node, topology); }),
                       "asks for 2 rank(s) per node, but mpirun (Open MPI) started 4 rank(s) on "
                       "node 0 (n1), which sees 4 GPU(s)"));
  per_node.num_gpus_per_node = 4;
  EXPECT_NO_THROW(validate_for_topology(per_node, topology));
}

}  // namespace
}  // namespace autotrain::config::training_params_test
