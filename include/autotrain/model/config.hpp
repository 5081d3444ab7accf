#pragma once
// The shape of a GPT-2 family model. Kept apart from the config layer's TrainingParams so the
// model can be built and tested on its own; the trainer copies the fields across.
#include <cstdint>

namespace autotrain::model {

struct ModelConfig {
  int n_layer = 12;
  int n_head = 12;
  int n_embd = 768;
  int block_size = 1024;          // maximum context T
  int vocab_size = 50257;         // V: real tokens
  int padded_vocab_size = 50304;  // Vp >= V: rows of wte, a multiple of 128 for fast gemm

  // A config with padded_vocab_size = vocab_size rounded up to a multiple of 128.
  static ModelConfig gpt2(int n_layer, int n_head, int n_embd, int block_size, int vocab_size);
  static ModelConfig gpt2_124m() { return gpt2(12, 12, 768, 1024, 50257); }

  int head_size() const { return n_embd / n_head; }

  // Throws autotrain::Error naming the first field that is out of range.
  void validate() const;
};

int round_up_vocab(int vocab_size, int multiple = 128);

}  // namespace autotrain::model
