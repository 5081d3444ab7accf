#pragma once
// CUDA side of LoRA's adapter dropout (model/lora_dropout.hpp): the mask drawn from the same
// hash as the CPU's (kernels/dropout_hash.hpp), applied as the factors f of
// δ = dropout(x) − x = x ⊙ f, f = kept_factor where the element is kept and −1 where dropped.
#ifdef AUTOTRAIN_HAVE_CUDA
#include <cstddef>

#include "autotrain/core/gpu/device.hpp"
#include "autotrain/kernels/dropout_hash.hpp"

namespace autotrain::kernels::gpu {

// out = v ⊙ f over row-major [rows, columns] (or out += it with `add`), in fp32 rounded once to
// F; f(i, j) = mask.kept(mask.row_key(i), j) ? kept_factor : −1. out may alias v when !add.
template <typename F>
void dropout_factors(F* out, const F* v, std::size_t rows, std::size_t columns,
                     const DropoutHash& mask, float kept_factor, bool add, cudaStream_t stream);

}  // namespace autotrain::kernels::gpu
#endif  // AUTOTRAIN_HAVE_CUDA
