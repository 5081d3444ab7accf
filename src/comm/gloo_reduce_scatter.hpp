#pragma once
// A ring reduce-scatter over a Gloo context (not a public header).
//
// Gloo 0.5 has no options-style reduce-scatter, and its ReduceScatterHalvingDoubling leaves each
// rank's part at the FRONT of the buffer (not at rank * part), registers its buffers at
// construction and allocates two buffer-sized scratch vectors per instance; an allreduce of the
// whole buffer moves twice the data a reduce-scatter needs. This ring moves (n-1)/n of it.
#include <gloo/context.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace autotrain::comm_detail {

// c[i] = a[i] (op) b[i] for n elements: gloo::sum<T> / gloo::max<T>.
using ReduceFunction = void (*)(void*, const void*, const void*, size_t);

class RingReduceScatter {
 public:
  // work: world_size parts of `part` elements of `element_bytes` each, this rank's input;
  // reduced in place, after which part `rank` of work holds the reduction over all ranks (the
  // other parts hold partial sums). `tag` must be the same on every rank and distinct from every
  // other collective in flight. Blocks; throws on a transport error or Gloo's timeout.
  void run(gloo::Context& context, std::byte* work, size_t part, size_t element_bytes,
           ReduceFunction reduce, uint32_t tag);

 private:
  // Two receive slots of one part each, so the next step's receive is posted before this step's
  // data is reduced. Grows to the largest part, then never allocates again.
  std::vector<std::byte> inbox_;
};

}  // namespace autotrain::comm_detail
