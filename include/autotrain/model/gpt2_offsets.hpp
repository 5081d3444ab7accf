#pragma once
// Where each GPT-2 tensor starts inside its unit (the same in every block): what the CPU and
// device GPT-2 models add to a unit's parameter or gradient pointer.
#include <cstddef>

#include "autotrain/model/param_layout.hpp"

namespace autotrain::model {

struct TensorOffsets {
  explicit TensorOffsets(const ParamLayout& layout);
  std::size_t wte, wpe;
  std::size_t ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb;
  std::size_t lnfw, lnfb;
  std::size_t head;  // the head's: wte (unit 0), or score.weight (unit L + 1) with the score head
};

}  // namespace autotrain::model
