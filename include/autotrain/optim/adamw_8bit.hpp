#pragma once
// AdamW with 8-bit moments (optimizer adamw_8bit; bitsandbytes' AdamW8bit, blockwise): m and v are
// stored as optim/blockwise_8bit.hpp describes, m against the signed dynamic map and v against the
// unsigned one, in blocks of kQuantBlock elements of the optimizer's state (shard space: the
// owned ranges one after the other). 2 bytes an element plus 8 bytes a block, against 8.
//
// One step is one pass per block, the blocks in parallel (OpenMP): dequantize the block's m and v
// (map[code] * absmax), update every element in fp32 exactly as adamw_update does
// (optim/adamw_kernel.hpp: the same operations, the same roundings; the weight uses the fp32 m
// and v of this step, not their requantized values), then requantize m and v against the block's
// new absmax, the largest |value| of the updated block. So a step's result does not depend on the
// thread count; it depends on where the blocks start (the world size and stage), as the state's
// rounding does.
#include <cstddef>
#include <cstdint>
#include <span>

#include "autotrain/optim/adamw_kernel.hpp"

namespace autotrain {

// The 8-bit state of n elements: codes m[n] and v[n], absmax m_absmax[b] and v_absmax[b] for the
// quant_blocks(n) blocks.
struct Moments8bit {
  std::uint8_t* m = nullptr;
  std::uint8_t* v = nullptr;
  float* m_absmax = nullptr;
  float* v_absmax = nullptr;
  std::size_t n = 0;
};

// A run of `count` consecutive weights p and gradients g whose state starts at element `state`,
// with its weight decay.
struct StatePiece {
  float* p = nullptr;
  const float* g = nullptr;
  std::size_t state = 0;
  std::size_t count = 0;
  float weight_decay = 0;
};

// One step over `pieces`, which tile the state [0, moments.n) in order, none empty. args'
// weight_decay is ignored (each piece has its own).
void adamw_8bit_update(std::span<const StatePiece> pieces, const Moments8bit& moments,
                       const AdamWStepArgs& args);

}  // namespace autotrain
