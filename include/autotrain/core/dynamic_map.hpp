#pragma once
// bitsandbytes' dynamic 8-bit quantization maps (create_dynamic_map(signed, max_exponent_bits 7,
// total_bits 8)), which its 8-bit optimizers keep their moments on (optim/blockwise_8bit.hpp) and
// its double quantization stores NF4's block scales on (kernels/quantize.hpp): for each exponent
// i = 0..6, the means of neighbouring points of torch.linspace(0.1, 1, k_i + 1) times 10^(i - 6),
// with k_i = 2^i for the signed map (each mean also negated) and 2^(i + 1) for the unsigned one
// (the sign bit spent on twice the fraction); then 0 and 1; sorted. 256 entries each:
//   signed:    127 negatives, 0, 127 positives, 1 (map[k] = -map[254 - k] for k < 127);
//   unsigned:  0, 254 positives, 1.
// Each entry is what bitsandbytes' own construction gives in fp32, with torch.linspace computed
// as PyTorch's CPU kernel computes it (src/core/dynamic_map.cpp), checked bit for bit against
// torch by tests/kernels/torch_quantize.py and tests/optim/torch_adamw_8bit.py.
#include <array>

namespace autotrain {

using DynamicMap = std::array<float, 256>;

DynamicMap create_dynamic_map(bool is_signed);
// The two maps, built once.
const DynamicMap& signed_dynamic_map();
const DynamicMap& unsigned_dynamic_map();

}  // namespace autotrain
