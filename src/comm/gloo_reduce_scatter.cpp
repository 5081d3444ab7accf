#include "gloo_reduce_scatter.hpp"

#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

namespace autotrain::comm_detail {
namespace {

// Gloo's own collectives use slot prefixes 0x01-0x08 (gloo/types.h).
constexpr uint8_t kRingReduceScatterSlotPrefix = 0x40;

}  // namespace

void RingReduceScatter::run(gloo::Context& context, std::byte* work, size_t part,
                            size_t element_bytes, ReduceFunction reduce, uint32_t tag) {
  const int n = context.size;
  const int rank = context.rank;
  const size_t part_bytes = part * element_bytes;
  if (n == 1 || part_bytes == 0) return;
  if (inbox_.size() < 2 * part_bytes) inbox_.resize(2 * part_bytes);
  const int left = (rank + n - 1) % n;
  const int right = (rank + 1) % n;
  const uint64_t slot = gloo::Slot::build(kRingReduceScatterSlotPrefix, tag);
  // Unbound buffers only name memory for the transport: cheap, and made per call because `work`
  // is the caller's.
  auto outgoing = context.createUnboundBuffer(work, part_bytes * static_cast<size_t>(n));
  auto incoming = context.createUnboundBuffer(inbox_.data(), 2 * part_bytes);
  const auto part_at = [&](int index) { return static_cast<size_t>((index + n) % n) * part_bytes; };

  // Step s sends part (rank-s-1) to the right and receives part (rank-s-2) from the left, which
  // that neighbour has already reduced over s+1 ranks, and adds this rank's own values: after
  // n-1 steps part `rank` holds all n contributions. Each rank sends n-1 parts in all.
  incoming->recv(left, slot, 0, part_bytes);
  for (int step = 0; step < n - 1; ++step) {
    outgoing->send(right, slot, part_at(rank - step - 1), part_bytes);
    const size_t inbox_at = static_cast<size_t>(step % 2) * part_bytes;
    // Post the next receive into the other slot: the left neighbour may send it while this step
    // reduces. Receives on one slot from one peer complete in the order they were posted.
    if (step + 1 < n - 1) incoming->recv(left, slot, part_bytes - inbox_at, part_bytes);
    incoming->waitRecv();
    std::byte* target = work + part_at(rank - step - 2);
    reduce(target, target, inbox_.data() + inbox_at, part);
    // The part just sent is never written again, so the send may finish later; waiting here
    // keeps at most one send in flight.
    outgoing->waitSend();
  }
}

}  // namespace autotrain::comm_detail
