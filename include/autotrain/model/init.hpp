#pragma once
// Random initialisation as a pure function of (seed, tensor name, element index): the value of an
// element does not depend on the world size, on the order of filling, or on which other elements
// are filled, so ZeRO stage 3 can initialise only the range it owns. Each tensor follows its
// family's rule (ParamTensor::init: zero, one, normal with a std, or uniform within a bound);
// padded vocabulary rows and unit padding are 0.
#include <cstddef>
#include <cstdint>
#include <span>

#include "autotrain/model/param_layout.hpp"

namespace autotrain::model {

// Fills out = flat[begin, begin + out.size()) of the layout's flat parameter buffer.
void init_params(const ParamLayout& layout, std::uint64_t seed, std::span<float> out,
                 std::size_t begin = 0);

// The part of `tensor` inside out = flat[begin, begin + out.size()), drawn by `rule` (the
// tensor's own, or another: a base model's initializer_range for a head it lacks); the rest of
// out is left as it is.
void init_tensor(const ParamTensor& tensor, const InitRule& rule, std::uint64_t seed,
                 std::span<float> out, std::size_t begin);

// The standard normal value the initialiser draws for (seed, tensor, element): counter-based, so
// any element can be computed alone.
double init_normal(std::uint64_t seed, std::uint64_t tensor_key, std::uint64_t element);
// The same counter's uniform value in (-1, 1].
double init_uniform(std::uint64_t seed, std::uint64_t tensor_key, std::uint64_t element);

}  // namespace autotrain::model
