// The CPU engine's gradient reducers: gradients.hpp's state machine over host memory.
#include "gradients.hpp"

#include "gradients_impl.hpp"

namespace autotrain::zero {

template class ReplicatedGradients<HostMemory>;
template class PartitionedGradients<HostMemory>;

}  // namespace autotrain::zero
