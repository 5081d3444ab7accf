#pragma once
// A resume reads each element of the checkpoint once, on the rank that owns it, and completes
// what the ZeRO stage replicates from the other ranks (docs/checkpoint-format.md, "What
// loading reads").
//
// Invariant: a rank owns, of every unit and every kind of state, its part shard(unit, rank);
// the parts of the N ranks cover every element exactly once, so N ranks reading their own
// parts read the checkpoint once between them and their partial checksums add up to the
// stored ones. A stage that keeps more than its part (the parameters at stages 0-2, the
// moments at stage 0) lists the rest in held_runs() and receives it by all-gather.
#include <span>

#include "autotrain/comm/communicator.hpp"
#include "autotrain/model/param_layout.hpp"
#include "autotrain/zero/engine.hpp"

namespace autotrain::train {

// The unit of flat index `index` (which must lie in some unit).
int unit_of(const model::ParamLayout& layout, std::size_t index);

// Whether `run` lies in `rank`'s part of its unit (runs never cross a part: tensor_pieces).
bool owned_by(const model::ParamLayout& layout, const zero::StateRun& run, int rank);

// Collective over `comm` (the engine's ranks; host memory, so the MPI communicator where the
// engine's is NCCL). Before: every run of `held` owned by this rank holds its values for the
// state kinds [0, kinds) (0 params, 1 exp_avg, 2 exp_avg_sq). After: every run of `held`
// does. One all-gather of the ranks' parts per unit and per kind that some rank holds beyond
// its part; nothing for kinds no rank replicates (stage 3), nor on one rank.
void complete_held_state(std::span<const zero::StateRun> held, const model::ParamLayout& layout,
                         int kinds, Communicator& comm);

}  // namespace autotrain::train
