#pragma once
// GPT-2 initialisation as a pure function of (seed, tensor name, element index): the value of an
// element does not depend on the world size, on the order of filling, or on which other elements
// are filled, so ZeRO stage 3 can initialise only the range it owns.
//   weights (wte, wpe, c_attn, c_fc)   normal(0, 0.02)
//   attn.c_proj.weight, mlp.c_proj.weight   normal(0, 0.02 / sqrt(2 · n_layer))  (residual
//   projections) biases 0; LayerNorm weight 1, bias 0; wte rows >= vocab_size 0; unit padding 0.
#include <cstddef>
#include <cstdint>
#include <span>

#include "autotrain/model/param_layout.hpp"

namespace autotrain::model {

// Fills out = flat[begin, begin + out.size()) of the layout's flat parameter buffer.
void init_params(const ParamLayout& layout, std::uint64_t seed, std::span<float> out,
                 std::size_t begin = 0);

// The standard normal value the initialiser draws for (seed, tensor, element): counter-based, so
// any element can be computed alone.
double init_normal(std::uint64_t seed, std::uint64_t tensor_key, std::uint64_t element);

}  // namespace autotrain::model
