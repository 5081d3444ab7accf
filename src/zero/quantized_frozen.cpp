// A ZeRO engine's quantized frozen weights on the host (quantized_frozen.hpp).
#include "quantized_frozen_impl.hpp"

namespace autotrain::zero {

template class BasicQuantizedFrozen<HostMemory>;

}  // namespace autotrain::zero
