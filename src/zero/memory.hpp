#pragma once
// Where a ZeRO engine's working buffers live, as the gradient reducers (gradients.hpp) and the
// stage-3 parameter gatherer (param_gatherer.hpp) see it: one policy type per device, so one
// state machine serves the CPU engine and the device engine. A policy has
//   Element, Buffer, kDType           the element type, an owning buffer of them, its DType;
//   Wide, wide()                      the policy of the buffers gradients are reduced and
//                                     accumulated in (its Element R, fp32) on the same order:
//                                     the policy itself where Element is fp32;
//   widen(r, p, n), add_widened(r, p, n)  r[i] = R(p[i]); r[i] += R(p[i]) (p widened exactly,
//                                     the sum rounded to R once): only where Element is not R;
//   allocate(n), data(b), bytes(b)    a zeroed buffer of n elements, its elements, its bytes;
//   zero(p, n), add_into(p, q, n)     p[0, n) = 0; p[i] += q[i] (ordered like the device's work);
//   upload(p, floats, n)              p[0, n) = n host floats, converted; done when it returns;
//   upload_host(p, floats, n)         p[0, n) = n host floats rounded to Element, p in host
//                                     memory (an offloaded shard's values, offloaded_shard.hpp);
//   upload_bytes(p, bytes, n)         n bytes from the host into p (p of any type); done when it
//                                     returns;
//   copy_bytes(p, q, n)               p[0, n) = the n elements whose bits are at q, which this
//                                     memory holds (ordered like the device's work);
//   dequantize(record, q, tables, p)  p = the quantized tensor whose record is at q, which this
//                                     memory holds (kernels/quantize.hpp; `tables`: the NF4
//                                     levels then the dynamic map, 272 floats where this memory
//                                     reads them);
//   before_collective(comm)           a collective issued next sees the work queued so far;
//   before_use(handle, clock)         work queued next sees the collective's result;
//   consumer_stream()                 the CUDA stream of the model's kernels (nullptr: the host).
// HostMemory is the CPU's; gpu/memory.hpp has DeviceMemory<F>.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/core/dtype.hpp"
#include "autotrain/core/zeroed_floats.hpp"
#include "autotrain/kernels/quantize.hpp"
#include "wait_clock.hpp"

namespace autotrain::zero {

// The CPU engine's memory: fp32 host vectors; a received part is used after the host waited.
struct HostMemory {
  using Element = float;
  using Buffer = ZeroedFloats;  // resident once written: what is never used costs no memory
  static constexpr DType kDType = DType::fp32;
  using Wide = HostMemory;
  static HostMemory wide() { return {}; }
  static Buffer allocate(std::size_t elements) { return Buffer(elements); }
  static float* data(Buffer& buffer) { return buffer.data(); }
  static std::size_t bytes(const Buffer& buffer) { return buffer.size() * sizeof(float); }
  static void zero(float* data, std::size_t count);
  static void add_into(float* into, const float* part, std::size_t count);
  static void upload(float* into, const float* values, std::size_t count) {
    std::copy_n(values, count, into);
  }
  static void upload_host(float* into, const float* values, std::size_t count) {
    std::copy_n(values, count, into);
  }
  static void upload_bytes(void* into, const void* bytes, std::size_t count) {
    std::memcpy(into, bytes, count);
  }
  static void copy_bytes(float* into, const std::byte* bits, std::size_t count) {
    std::memcpy(into, bits, count * sizeof(float));
  }
  static void dequantize(const kernels::QuantizedTensor& record, const std::byte* bytes,
                         const float* /*tables*/, float* into) {
    kernels::dequantize(record, bytes, into);
  }
  static void before_collective(Communicator& /*comm*/) {}
  static void before_use(CommHandle& handle, WaitClock& clock) { clock.wait(handle); }
  static void* consumer_stream() { return nullptr; }
};

}  // namespace autotrain::zero
