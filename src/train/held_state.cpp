#include "held_state.hpp"

#include <algorithm>
#include <vector>

#include "autotrain/core/error.hpp"

namespace autotrain::train {
int unit_of(const model::ParamLayout& layout, std::size_t index) {
  const auto& units = layout.units();
  const auto after =
      std::upper_bound(units.begin(), units.end(), index,
                       [](std::size_t i, const model::ParamUnit& u) { return i < u.offset; });
  AT_CHECK(after != units.begin(), "checkpoint: flat index ", index, " precedes every unit");
  return static_cast<int>(after - units.begin()) - 1;
}

bool owned_by(const model::ParamLayout& layout, const zero::StateRun& run, int rank) {
  const model::Range part = layout.shard(unit_of(layout, run.begin), rank);
  return run.begin >= part.offset && run.end <= part.offset + part.size;
}

void complete_held_state(std::span<const zero::StateRun> held, const model::ParamLayout& layout,
                         int kinds, Communicator& comm) {
  const int rank = comm.rank();
  const auto world = static_cast<std::size_t>(comm.size());
  if (world == 1) return;
  // Which kinds some rank holds beyond its part: the same answer on every rank, so every rank
  // takes part in the same all-gathers.
  std::vector<float> replicated(static_cast<std::size_t>(kinds), 0.0f);
  std::vector<std::vector<const zero::StateRun*>> by_unit(
      static_cast<std::size_t>(layout.num_units()));
  for (const auto& run : held) {
    by_unit[static_cast<std::size_t>(unit_of(layout, run.begin))].push_back(&run);
    if (owned_by(layout, run, rank)) continue;
    for (int kind = 0; kind < kinds; ++kind) {
      if (run.holds(kind)) replicated[static_cast<std::size_t>(kind)] = 1.0f;
    }
  }
  comm.allreduce(replicated.data(), replicated.size(), DType::fp32, ReduceOp::max);
  std::size_t largest_part = 0;
  for (int u = 0; u < layout.num_units(); ++u) {
    largest_part = std::max(largest_part, layout.shard(u, rank).size);
  }
  // `mine` packs this rank's part of one unit (padding zero), `all` receives every part.
  std::vector<float> mine(largest_part);
  std::vector<float> all(largest_part * world);
  for (int kind = 0; kind < kinds; ++kind) {
    if (replicated[static_cast<std::size_t>(kind)] == 0.0f) continue;
    for (int u = 0; u < layout.num_units(); ++u) {
      const model::Range part = layout.shard(u, rank);
      const std::size_t unit_offset = layout.units()[static_cast<std::size_t>(u)].offset;
      std::fill_n(mine.begin(), part.size, 0.0f);
      const auto& runs = by_unit[static_cast<std::size_t>(u)];
      for (const zero::StateRun* run : runs) {
        if (!run->holds(kind) || !owned_by(layout, *run, rank)) continue;
        run->read(kind, 0, std::span<float>(mine).subspan(run->begin - part.offset, run->size()));
      }
      comm.allgather(mine.data(), all.data(), part.size, DType::fp32);
      for (const zero::StateRun* run : runs) {
        if (!run->holds(kind) || owned_by(layout, *run, rank)) continue;
        run->write(kind, 0,
                   std::span<const float>(all).subspan(run->begin - unit_offset, run->size()));
      }
    }
  }
}

}  // namespace autotrain::train
