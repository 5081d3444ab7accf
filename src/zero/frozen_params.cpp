// A ZeRO engine's frozen weights on the host (frozen_params.hpp).
#include "frozen_params_impl.hpp"

namespace autotrain::zero {

template class BasicFrozenParams<HostMemory>;

}  // namespace autotrain::zero
