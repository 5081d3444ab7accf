#pragma once
// TrainingParams: every parameter of a run, with AutoTrain Advanced's names and defaults where
// they apply. AUTOTRAIN_TRAINING_PARAMS below is the ONE table of parameters: it declares the
// struct's fields and drives parsing (JSON, YAML, flags), validation, the --help text, the JSON
// written to <project_name>/training_params.json and docs/configuration.md. Adding a parameter
// is one line there.
//
// Sentinels: -1 means "derived" (resolve_params() fills it in, or a later layer does, as the
// doc line says); 0 means "not given" for num_nodes, num_gpus_per_node and threads.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace autotrain::config {

// The allowed values of one parameter. Numbers: an optional sentinel (e.g. -1 = derived) plus a
// range. Strings: either a closed list of choices (with aliases mapped to a choice) or a rule.
struct Constraint {
  std::optional<double> min;
  std::optional<double> max;
  bool min_exclusive = false;
  std::optional<int64_t> sentinel;
  std::vector<std::string> choices;
  std::vector<std::pair<std::string, std::string>> aliases;  // accepted spelling -> choice
  // Extra rule for free strings: returns "" when `value` is fine, else what was expected.
  std::string (*rule)(std::string_view value) = nullptr;
  std::string_view rule_text;  // what the rule expects, for docs

  // What the constraint expects, for errors and docs: "> 0", "-1 or >= 1", "gpt2|byte".
  std::string describe() const;
};

Constraint any_value();
Constraint at_least(double min);
Constraint greater_than(double min);
Constraint between(double min, double max);
// The largest model dimension (layers, heads, width, context, vocabulary, batch) the engine
// takes: its kernels index with 32-bit ints.
inline constexpr double kMaxDimension = 2147483647;
Constraint derived_or(int64_t sentinel, Constraint rest);
Constraint one_of(std::vector<std::string> choices,
                  std::vector<std::pair<std::string, std::string>> aliases = {});
Constraint with_rule(std::string (*rule)(std::string_view value), std::string_view rule_text);

// AutoTrain's rule for project_name. Returns "" when `value` follows it, else why not.
std::string project_name_rule(std::string_view value);
inline constexpr std::string_view kProjectNameRule = "letters, digits and hyphens, at most 50";
std::string tokenizer_rule(std::string_view value);
std::string model_rule(std::string_view value);
std::string byte_size_rule(std::string_view value);
inline constexpr std::string_view kByteSizeRule = "a size such as 5GB, 500MB or 2GiB";
// "5GB" -> 5e9, "2GiB" -> 2^31, "1000" -> 1000 bytes; throws Error for anything else.
uint64_t parse_byte_size(std::string_view value, std::string_view what);
inline constexpr std::string_view kModelRule =
    "a model folder, a Hub id (org/name) or a preset (gpt2, gpt2-medium, gpt2-large, gpt2-xl, "
    "tiny)";
inline constexpr std::string_view kTokenizerRule =
    "gpt2, byte, a tokenizer.json file or a folder holding one";

inline constexpr int64_t kDefaultBucketElements = int64_t{1} << 24;

// X(type, name, default, constraint, doc)
// clang-format off
#define AUTOTRAIN_TRAINING_PARAMS(X) \
  X(std::string, model, "gpt2", with_rule(model_rule, kModelRule), "Base model: a Hugging Face model folder (GPT-2, the Llama family: Llama, Mistral, Qwen2, Qwen3, Phi-3: Phi-3-mini, Phi-4-mini, or Gemma, Gemma 2 and Gemma 3), a Hub id in the offline Hub cache (org/name, or GPT-2's bare names), or with from_scratch a preset (gpt2, gpt2-medium, gpt2-large, gpt2-xl; tiny = 2 layers, 2 heads, 64 wide, for tests) or a known architecture (data/models). Its architecture fills n_layer, n_head, n_embd and n_positions that are not given. YAML: base_model.") \
  X(bool, from_scratch, false, any_value(), "Random initialisation in the base model's architecture (its config.json, or the preset) instead of its pretrained weights.") \
  X(std::string, revision, "main", any_value(), "Hub cache snapshot of a Hub id: a branch or tag under refs/, or a 40-digit commit.") \
  X(std::string, project_name, "project-name", with_rule(project_name_rule, kProjectNameRule), "Output folder of the run (alphanumeric and hyphens, at most 50 characters).") \
  X(std::string, data_path, "", any_value(), "Folder with <train_split>.csv|.jsonl|.txt|.parquet (or Hugging Face datasets' Parquet layouts), one such file, or a Hub dataset id in the offline Hugging Face cache (docs/data.md); empty = the embedded demo corpus. YAML: data.path.") \
  X(std::string, train_split, "train", any_value(), "Name of the training split. YAML: data.train_split.") \
  X(std::string, valid_split, "", any_value(), "Name of the validation split; empty or none = no validation (then eval_strategy resolves to no). YAML: data.valid_split.") \
  X(std::string, text_column, "text", any_value(), "Column holding the text, or with chat_template the conversations; for trainers dpo, orpo and reward the chosen completion (not given: chosen). YAML: data.column_mapping.text_column.") \
  X(std::string, prompt_text_column, "prompt", any_value(), "Column holding the prompt of each preference pair (trainers dpo and orpo; with chat_template the prompt is chosen's conversation but its last message, as AutoTrain renders it, after a prompt column of messages when there is one); empty or null = prompt. YAML: data.column_mapping.prompt_text_column.") \
  X(std::string, rejected_text_column, "rejected", any_value(), "Column holding the rejected completion of each preference pair (trainers dpo, orpo and reward; text_column holds the chosen one); empty or null = rejected. YAML: data.column_mapping.rejected_text_column.") \
  X(int64_t, max_prompt_length, 128, derived_or(-1, between(1, kMaxDimension)), "Preference pairs: tokens kept of each prompt, from its end (TRL's max_prompt_length); -1 = no bound.") \
  X(int64_t, max_completion_length, -1, derived_or(-1, between(1, kMaxDimension)), "Preference pairs: tokens kept of each completion (its EOS included), from its start (TRL's max_completion_length); -1 or null = no bound but block_size, which bounds prompt + completion.") \
  X(std::string, trainer, "default", one_of({"default", "sft", "dpo", "orpo", "reward"}, {{"generic", "default"}}), "AutoTrain's LLM trainer: default or sft, both causal language modelling on text_column (sft is the usual choice with chat_template); dpo and orpo, preference tuning on pairs of completions (prompt_text_column, text_column = chosen, rejected_text_column; docs/training.md, Preference tuning); reward, a reward model scoring them.") \
  X(double, dpo_beta, 0.1, greater_than(0), "Trainers dpo and orpo: beta, how far the policy may move from the reference (dpo) or the weight of the odds-ratio term (orpo).") \
  X(std::string, model_ref, "", any_value(), "Trainer dpo: the reference model (a folder or Hub id of the base model's architecture and shape); empty = the base model itself (with peft: the base without its adapters).") \
  X(std::string, chat_template, "none", one_of({"none", "tokenizer", "chatml", "zephyr"}, {{"", "none"}, {"None", "none"}, {"null", "none"}}), "How conversations in text_column (JSON lists of {role, content} messages) become text: tokenizer = the model's own template (its tokenizer_config.json), chatml or zephyr = AutoTrain's formats; none = text_column is plain text. YAML: data.chat_template or params.chat_template.") \
  X(bool, train_on_completions_only, false, any_value(), "With chat_template: only the assistant turns (and the token ending each) carry loss; false = every token, as AutoTrain.") \
  X(bool, peft, false, any_value(), "LoRA: train low-rank adapters on target_modules while the base weights stay frozen (CPU or GPU). The adapters, their optimizer state and the checkpoints are small; export writes a PEFT adapter folder (and with merge_adapter the merged model).") \
  X(std::string, quantization, "none", one_of({"none", "int4", "int8"}, {{"", "none"}, {"None", "none"}, {"null", "none"}}), "QLoRA, with peft: the frozen blocks' linear weights stored in 4 bits (int4 = bitsandbytes' NF4, blocks of 64 with an absmax each) or 8 bits (int8, per-row absmax) and dequantized unit by unit at each use; embeddings, norms and the head stay in the compute dtype. Without peft it applies to nothing (AutoTrain's rule) and is noted. Unlike AutoTrain (int4 by default), peft without it keeps the frozen weights in the compute dtype.") \
  X(bool, bnb_4bit_use_double_quant, false, any_value(), "With quantization int4: the blocks' absmax values themselves stored in 8 bits (blocks of 256, bitsandbytes' double quantization): about 0.37 bits a weight less.") \
  X(int64_t, lora_r, 16, between(1, 65536), "LoRA rank r: each adapted weight W [out, in] trains as W + lora_alpha / lora_r · B · A with A [r, in], B [out, r].") \
  X(double, lora_alpha, 32, greater_than(0), "LoRA scaling: the adapters' product is multiplied by lora_alpha / lora_r.") \
  X(double, lora_dropout, 0.05, between(0, 1), "PEFT's dropout on each adapted module's input, in training only (evaluation and generate never drop): the adapters see x · mask / (1 - lora_dropout), the frozen weights x. Each sample's masks depend on the seed, the step and its place in the global batch, so any world size and ZeRO stage draws them alike; 0 = none. CPUs and GPUs draw the same masks. Written into adapter_config.json.") \
  X(std::string, target_modules, "all-linear", any_value(), "Weights LoRA adapts: all-linear (every linear layer of the blocks, not the embeddings or the LM head), or module names separated by commas, matched as PEFT matches them (q_proj,v_proj for the Llama family; qkv_proj, gate_up_proj for Phi-3; c_attn, c_proj, mlp.c_fc for GPT-2).") \
  X(bool, merge_adapter, false, any_value(), "With peft: export the merged model (base + adapters) into <project_name>/ and the adapter folder into <project_name>/adapter/; false = <project_name>/ is the adapter folder.") \
  X(bool, add_eos_token, true, any_value(), "End-of-text token between documents: before each for gpt2 and byte (llm.c), after each for a tokenizer.json (AutoTrain).") \
  X(std::string, tokenizer, "gpt2", with_rule(tokenizer_rule, kTokenizerRule), "gpt2 = GPT-2 byte-level BPE (50257 tokens); byte = raw bytes (256); or a Hugging Face tokenizer.json, or a model folder holding one.") \
  X(bool, parse_special_tokens, true, any_value(), "Special tokens written in the text (<|endoftext|>, <s>) become their ids, as in Hugging Face; false = ordinary text.") \
  X(double, lr, 3e-5, greater_than(0), "Peak learning rate.") \
  X(int64_t, epochs, 1, at_least(1), "Passes over the training data (max_steps wins when given).") \
  X(int64_t, batch_size, 2, between(1, kMaxDimension), "Sequences per rank per micro-step; global batch = batch_size x gradient_accumulation x world size.") \
  X(int64_t, block_size, -1, derived_or(-1, between(1, kMaxDimension)), "Tokens per sequence; -1 = min(1024, n_positions).") \
  X(double, warmup_ratio, 0.1, between(0, 1), "Fraction of the optimizer steps spent warming the learning rate up from 0.") \
  X(int64_t, warmup_steps, -1, at_least(-1), "Optimizer steps of warmup (transformers' warmup_steps, DeepSpeed's warmup_num_steps); -1 = ceil(warmup_ratio x the run's steps).") \
  X(std::string, warmup_type, "linear", one_of({"linear", "log"}), "Shape of the warmup: linear (transformers), or log as DeepSpeed's WarmupLR, WarmupDecayLR and WarmupCosineLR default to (lr x log(step + 2) / log(warmup_steps + 1), one step ahead as the linear ramp).") \
  X(int64_t, gradient_accumulation, 4, at_least(1), "Micro-steps per optimizer step.") \
  X(int64_t, global_batch_size, -1, derived_or(-1, between(1, kMaxDimension)), "Sequences per optimizer step over all ranks; when given, gradient_accumulation = global_batch_size / (batch_size x world size), so a run resumed on fewer or more ranks keeps its curve; -1 = batch_size x gradient_accumulation x world size.") \
  X(bool, auto_find_batch_size, false, any_value(), "Pick batch_size from the memory plan: the largest divisor of batch_size x gradient_accumulation (the per-rank sequences of an optimizer step, after global_batch_size) whose parameters, gradients, optimizer state and activations fit within 90% of the rank's memory (its GPU's, or on the CPU its share of the node or ulimit -v); gradient_accumulation takes the rest, so the global batch and the losses stay those of the given values. The same on every rank (the smallest rank decides).") \
  X(std::string, optimizer, "adamw", one_of({"adamw", "adamw_8bit", "paged_adamw_8bit", "paged_adamw_32bit", "sgd"}, {{"adamw_torch", "adamw"}, {"adamw_hf", "adamw"}, {"adamw_torch_fused", "adamw"}, {"adamw_apex_fused", "adamw"}, {"adamw_bnb_8bit", "adamw_8bit"}}), "Optimizer; transformers' adamw_torch, adamw_hf, adamw_torch_fused and adamw_apex_fused mean adamw (one fused AdamW on every device). adamw_8bit (adamw_bnb_8bit) keeps AdamW's moments in 8 bits, blockwise as bitsandbytes does (2 bytes a parameter instead of 8; not with offload_optimizer_device); paged_adamw_8bit and paged_adamw_32bit are adamw_8bit and adamw (no unified memory to page).") \
  X(std::string, scheduler, "linear", one_of({"linear", "cosine", "cosine_with_restarts", "polynomial", "constant", "constant_with_warmup", "inverse_sqrt", "cosine_with_min_lr", "warmup_stable_decay"}), "Learning-rate schedule, as transformers' get_scheduler defines it: linear warmup (warmup_ratio; none for constant), then linear to 0, cosine to 0, cosine_with_restarts (one cycle), polynomial (to 1e-7, power 1), constant, constant_with_warmup, inverse_sqrt (timescale = the warmup steps), cosine_with_min_lr (to min_lr_rate x lr) or warmup_stable_decay (its lr_scheduler_kwargs).") \
  X(double, min_lr_rate, 0.0, between(0, 1), "cosine_with_min_lr's floor as a fraction of lr (transformers' lr_scheduler_kwargs min_lr_rate).") \
  X(std::string, lr_scheduler_kwargs, "", any_value(), "transformers' lr_scheduler_kwargs, a JSON object (a mapping in YAML): warmup_stable_decay's num_decay_steps (required), num_stable_steps (default: the steps warmup and decay leave), warmup_type and decay_type (linear, cosine or 1-sqrt; default linear and cosine), min_lr_ratio (0) and num_cycles (0.5); empty = none.") \
  X(double, weight_decay, 0.0, at_least(0), "Decoupled weight decay (matrices only, not biases or norms).") \
  X(double, adam_beta1, 0.9, between(0, 0.999999), "AdamW's first-moment decay (transformers' adam_beta1; DeepSpeed's optimizer.params.betas[0]).") \
  X(double, adam_beta2, 0.999, between(0, 0.999999), "AdamW's second-moment decay (transformers' adam_beta2; DeepSpeed's optimizer.params.betas[1]).") \
  X(double, adam_epsilon, 1e-8, between(1e-30, 1), "AdamW's epsilon (transformers' adam_epsilon; DeepSpeed's optimizer.params.eps).") \
  X(double, max_grad_norm, 1.0, at_least(0), "Clip the global gradient norm to this; 0 = no clipping.") \
  X(int64_t, seed, 42, at_least(0), "Seed of the weights' initialisation and of the data order.") \
  X(int64_t, logging_steps, -1, derived_or(-1, at_least(1)), "Optimizer steps between metric lines; -1 = 20% of the steps per epoch, clamped to 1..25.") \
  X(std::string, eval_strategy, "epoch", one_of({"epoch", "steps", "no"}), "When to evaluate on valid_split.") \
  X(int64_t, eval_steps, -1, derived_or(-1, at_least(1)), "Optimizer steps between evaluations with eval_strategy steps; -1 = logging_steps.") \
  X(int64_t, save_total_limit, 1, at_least(1), "Checkpoints kept on disk; older ones are deleted.") \
  X(std::string, mixed_precision, "no", one_of({"no", "fp16", "bf16"}, {{"", "no"}, {"none", "no"}, {"None", "no"}}), "Compute precision of forward and backward (master weights stay fp32). On GPUs fp16 adds dynamic loss scaling; on CPUs bf16 runs the matrix products in bf16 where the CPU has AVX512-BF16 or AMX-BF16 and fp32 elsewhere, and fp16 computes in fp32.") \
  X(bool, disable_gradient_checkpointing, false, any_value(), "AutoTrain's switch of activation checkpointing: true keeps every block's activations for backward (recompute none); false (the default, as AutoTrain) checkpoints them (recompute selective unless recompute says otherwise). Results are the same to the bit either way, on the CPU and on GPUs.") \
  X(std::string, recompute, "auto", one_of({"auto", "full", "selective", "none"}, {{"", "auto"}}), "What backward recomputes of each block (docs/training.md, Activation checkpointing): selective keeps the costly activations (the residual stream, the QKV projection, the attention's output and softmax statistics, the MLP's first projection) and recomputes the norms and the GELU/SwiGLU output, elementwise work and no matrix product; full keeps only each block's input and reruns its forward (about one more forward of compute, the least memory); none keeps everything. auto = from disable_gradient_checkpointing: false -> selective, true -> none. The same results to the bit in every mode.") \
  X(std::string, distributed_backend, "", one_of({"", "ddp", "deepspeed"}, {{"none", ""}, {"None", ""}}), "AutoTrain's switch: ddp = ZeRO stage 0, deepspeed = ZeRO stage 3 (unless zero_stage is given); empty = none.") \
  X(int64_t, zero_stage, -1, derived_or(-1, between(0, 3)), "ZeRO stage 0..3; -1 = from distributed_backend (deepspeed -> 3, otherwise 0).") \
  X(std::string, deepspeed, "", any_value(), "A DeepSpeed JSON config (transformers' --deepspeed ds_config.json): its ZeRO stage, precision, batch sizes, clipping, optimizer and scheduler become parameters beneath the YAML and the flags (docs/configuration.md lists each key); empty = none.") \
  X(std::string, accelerate_config, "", any_value(), "An accelerate config (accelerate launch --config_file): num_processes, num_machines, mixed_precision, main_process_port and its deepspeed_config become parameters beneath the YAML and the flags; empty = none.") \
  X(std::string, comm_backend, "auto", one_of({"auto", "nccl", "gloo", "mpi"}), "Communicator; auto = NCCL on GPUs, MPI on CPUs. YAML: distributed.backend.") \
  X(int64_t, max_steps, -1, derived_or(-1, at_least(1)), "Optimizer steps to run; -1 = from epochs.") \
  X(int64_t, checkpoint_every, 0, at_least(0), "Optimizer steps between checkpoints; 0 = only at the end.") \
  X(std::string, resume_from_checkpoint, "auto", any_value(), "auto = resume from the newest valid checkpoint in <project_name>/checkpoints (falling back past damaged ones), or start fresh when there is none; none = start fresh; or a checkpoint path.") \
  X(int64_t, comm_timeout, 600, at_least(1), "Seconds a collective may take before the job aborts naming it.") \
  X(int64_t, master_port, 29500, between(1, 65535), "TCP port of rank 0 for the Gloo and NCCL rendezvous.") \
  X(int64_t, num_nodes, 0, at_least(0), "Nodes the job is expected to span; 0 = not given. Checked against the launcher. YAML: distributed.num_nodes.") \
  X(int64_t, num_gpus_per_node, 0, at_least(0), "Ranks per node expected; 0 = not given. Checked against the launcher. YAML: distributed.num_gpus_per_node.") \
  X(int64_t, num_models, 0, at_least(0), "Models trained at once in one allocation: the ranks split into this many equal groups of consecutive ranks, each training its own model into <project_name>/model-<k>/; 0 = the size of the YAML's sweep block, or 1. Without a sweep, model k trains with seed + k.") \
  X(int64_t, n_layer, -1, derived_or(-1, between(1, kMaxDimension)), "Transformer blocks; -1 = from model.") \
  X(int64_t, n_head, -1, derived_or(-1, between(1, kMaxDimension)), "Attention heads; -1 = from model.") \
  X(int64_t, n_embd, -1, derived_or(-1, between(1, kMaxDimension)), "Hidden width (divisible by n_head); -1 = from model.") \
  X(int64_t, n_positions, -1, derived_or(-1, between(1, kMaxDimension)), "Model context length; -1 = from model (1024 for GPT-2, 128 for tiny).") \
  X(int64_t, vocab_size, -1, derived_or(-1, between(1, kMaxDimension)), "Embedding rows (>= the tokenizer's); -1 = from tokenizer (50257 gpt2, 256 byte, a tokenizer.json's largest id + 1).") \
  X(int64_t, threads, 0, at_least(0), "CPU threads per rank; 0 = cores per node / ranks per node.") \
  X(std::string, device, "auto", one_of({"auto", "cpu", "cuda"}), "auto = the rank's GPU when the build has CUDA and the rank has one, else CPU (docs/gpu.md).") \
  X(int64_t, reduce_bucket_size, -1, derived_or(-1, between(1, kMaxDimension)), "Gradient elements per reduce bucket; -1 = 16Mi (64 MiB fp32) for stages 0-1, one unit per bucket for stages 2-3.") \
  X(int64_t, stage3_prefetch, 1, at_least(0), "ZeRO-3: units gathered ahead of the one being computed.") \
  X(std::string, offload_optimizer_device, "none", one_of({"none", "cpu", "nvme"}, {{"", "none"}, {"None", "none"}, {"null", "none"}}), "ZeRO-Offload (zero_stage 1-3): cpu keeps the fp32 master weights and AdamW moments of a GPU rank's shard in pinned host memory and runs the AdamW step on the CPU, the gradients copied out and the updated weights copied back in the compute dtype. nvme keeps that state in a scratch file per rank under nvme_path instead, streamed block by block through the step. On a CPU run cpu changes nothing, and nvme keeps AdamW's moments under nvme_path. none = the state stays with the parameters.") \
  X(std::string, offload_param_device, "none", one_of({"none", "cpu", "nvme"}, {{"", "none"}, {"None", "none"}, {"null", "none"}}), "ZeRO-Infinity (zero_stage 3, GPUs, with offload_optimizer_device): cpu keeps each rank's parameter shard (the compute dtype) in pinned host memory, copied to the device unit by unit just before its all-gather, so a GPU holds only the units in use; nvme keeps it in a file under nvme_path, read unit by unit before the gather. none = the shard stays on the device.") \
  X(std::string, nvme_path, "", any_value(), "Folder for the NVMe offload's scratch files (one per rank, removed at the end), on a node-local disk: a folder every rank sees through a shared file system is refused. DeepSpeed's offload_optimizer.nvme_path and accelerate's offload_optimizer_nvme_path set it.") \
  X(std::string, checkpoint_layout, "shared", one_of({"shared", "per-rank"}), "shared = one HDF5 file written collectively; per-rank = one file per rank.") \
  X(bool, async_checkpoint, false, any_value(), "Persist checkpoints in the background from a host copy.") \
  X(std::string, export_dtype, "fp32", one_of({"fp32", "bf16", "fp16"}), "Precision of the exported model.safetensors.") \
  X(bool, zero3_save_16bit_model, false, any_value(), "DeepSpeed's switch (AutoTrain passes it with distributed_backend deepspeed): export model.safetensors in the training's 16-bit dtype (mixed_precision fp16, else bf16) unless export_dtype is given. The export is gathered a unit at a time at any stage, never whole on one rank.") \
  X(std::string, max_shard_size, "5GB", with_rule(byte_size_rule, kByteSizeRule), "Largest exported weight file, as transformers' save_pretrained: above it model-0000i-of-0000N.safetensors with model.safetensors.index.json (5GB = 5e9 bytes; KB, MB, GB and KiB, MiB, GiB).") \
  X(std::string, log, "none", one_of({"none", "tensorboard"}, {{"", "none"}, {"None", "none"}, {"null", "none"}}), "Metrics beside metrics.jsonl: tensorboard = TensorBoard event files in <project_name>/runs/ (train/loss, train/learning_rate, train/grad_norm, train/tokens_per_s, eval/loss at metrics.jsonl's steps); none = metrics.jsonl only. AutoTrain's wandb is not offered (it needs its Python client and the network). YAML: log.") \
  X(std::string, log_level, "info", one_of({"debug", "info", "warning", "error"}, {{"warn", "warning"}}), "Logging threshold (AUTOTRAIN_LOG_LEVEL applies when this is not given).")
// clang-format on

// AutoTrain's trainers that learn from preference pairs (data/preference.hpp).
inline bool is_preference_trainer(std::string_view trainer) {
  return trainer == "dpo" || trainer == "orpo" || trainer == "reward";
}

struct TrainingParams {
#define AUTOTRAIN_DECLARE_FIELD(type, name, default_value, constraint, doc) \
  type name = default_value;
  AUTOTRAIN_TRAINING_PARAMS(AUTOTRAIN_DECLARE_FIELD)
#undef AUTOTRAIN_DECLARE_FIELD

  bool operator==(const TrainingParams&) const = default;
};

using ParamMember = std::variant<int64_t TrainingParams::*, double TrainingParams::*,
                                 bool TrainingParams::*, std::string TrainingParams::*>;
using ParamValue = std::variant<int64_t, double, bool, std::string>;

// In the order of ParamMember's alternatives: ParamSpec::type() is the variant's index.
enum class ParamType { integer, number, boolean, string };
static_assert(
    std::is_same_v<std::variant_alternative_t<3, ParamMember>, std::string TrainingParams::*>);

struct ParamSpec {
  std::string_view name;  // snake_case, as in JSON and YAML; flags are --kebab-case too
  ParamMember member;
  Constraint constraint;
  std::string_view doc;

  ParamType type() const { return static_cast<ParamType>(member.index()); }
};

// The table, in declaration order.
const std::vector<ParamSpec>& param_specs();
// nullptr when there is no such parameter (`name` in snake or kebab case).
const ParamSpec* find_param(std::string_view name);
// Every parameter name (snake case), for did-you-mean suggestions.
const std::vector<std::string>& param_names();
// " (did you mean 'checkpoint_every'? ...)" when `name` (a key, or a flag with its dashes) is
// what transformers or AutoTrain call one of our parameters (save_steps); "" otherwise.
std::string foreign_name_hint(std::string_view name);

// AutoTrain's keys that autotrain has no parameter for (src/config/sources.cpp): each is noted as
// changing nothing here, or refused with the reason, in a file or as a flag.
std::vector<std::string_view> foreign_key_names();

std::string_view type_name(ParamType type);  // "integer", "number", "boolean", "string"

ParamValue get_value(const TrainingParams& params, const ParamSpec& spec);
void set_value(TrainingParams& params, const ParamSpec& spec, const ParamValue& value);
// The value as a user writes it: 3e-05, true, gpt2, "" for an empty string.
std::string format_value(const ParamValue& value);

// Where a value was written, for error messages: key "params.lr" in file "configs/x.yaml", or
// key "--lr" with no file.
struct Where {
  std::string key;
  std::string file;
  // "params.lr: <what> in configs/x.yaml" or "--lr: <what>".
  std::string message(std::string_view what) const;
};

// Checks `value` against the spec's constraint and returns the canonical value (aliases mapped
// to their choice). Throws Error "<key>: expected <constraint>, got <value> in <file>".
ParamValue check_value(const ParamSpec& spec, ParamValue value, const Where& where);

// Converts text (a flag value or a YAML scalar) to the parameter's type, then check_value().
// Throws Error "<key>: expected a number, got 'fast' in <file>".
ParamValue parse_text(const ParamSpec& spec, std::string_view text, const Where& where);

// Model presets: the GPT-2 family and a tiny model for tests.
struct ModelPreset {
  std::string_view name;
  int64_t n_layer;
  int64_t n_head;
  int64_t n_embd;
  int64_t n_positions;
};
// nullptr when `model` names no preset (openai-community/gpt2 names gpt2's).
const ModelPreset* find_model_preset(std::string_view model);
const ModelPreset& model_preset(std::string_view model);

// Vocabulary size of a tokenizer: 50257 for gpt2, 256 for byte; for a tokenizer.json one past
// the largest id of its vocabulary and added tokens.
int64_t tokenizer_vocab_size(std::string_view tokenizer);

}  // namespace autotrain::config
