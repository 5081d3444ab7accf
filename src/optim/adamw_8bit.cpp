// The 8-bit AdamW step (optim/adamw_8bit.hpp): per block of kQuantBlock state elements, three
// loops over a block that stays in the L1 cache: dequantize m and v into fp32 scratch (table
// look-ups), the AdamW update in fp32 (adamw_math.hpp's element, vectorised by the compiler: this
// file is compiled with -ffp-contract=off, so it fuses exactly the multiply-adds adamw_update
// fuses), then requantize (optim/blockwise_8bit.hpp). Nothing is allocated: the scratch is on
// each thread's stack.
#include "autotrain/optim/adamw_8bit.hpp"

#include <algorithm>

#include "adamw_math.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/optim/blockwise_8bit.hpp"

namespace autotrain {
namespace {

// Below this many blocks a parallel region costs more than it saves.
constexpr std::size_t kMinParallelBlocks = 4;

// Elements [begin, begin + count) of one piece: m_new and v_new hold the dequantized moments of
// those elements on entry and the updated ones on exit.
void update_run(const AdamWConstants& k, float* p, const float* g, float* m_new, float* v_new,
                std::size_t count) {
#pragma omp simd
  for (std::size_t i = 0; i < count; ++i) p[i] = adamw_element(k, p[i], g[i], m_new[i], v_new[i]);
}

}  // namespace

void adamw_8bit_update(std::span<const StatePiece> pieces, const Moments8bit& moments,
                       const AdamWStepArgs& args) {
  if (moments.n == 0) return;
  AT_CHECK(!pieces.empty() && pieces.front().state == 0 &&
               pieces.back().state + pieces.back().count == moments.n,
           "adamw_8bit_update: the pieces do not tile the state of ", moments.n, " elements");
  const DynamicMap& m_map = signed_dynamic_map();
  const DynamicMap& v_map = unsigned_dynamic_map();
  const AdamWConstants constants(args);
  const std::size_t blocks = quant_blocks(moments.n);
#pragma omp parallel for schedule(static) if (blocks >= kMinParallelBlocks)
  for (std::size_t b = 0; b < blocks; ++b) {
    alignas(64) float m_new[kQuantBlock];
    alignas(64) float v_new[kQuantBlock];
    const std::size_t begin = b * kQuantBlock;
    const std::size_t end = std::min(moments.n, begin + kQuantBlock);
    const float m_scale = moments.m_absmax[b], v_scale = moments.v_absmax[b];
#pragma omp simd
    for (std::size_t i = begin; i < end; ++i) {
      m_new[i - begin] = m_map[moments.m[i]] * m_scale;
      v_new[i - begin] = v_map[moments.v[i]] * v_scale;
    }
    // The last piece that starts at or before the block, then on through the block.
    auto piece = std::upper_bound(pieces.begin(), pieces.end(), begin,
                                  [](std::size_t at, const StatePiece& p) { return at < p.state; });
    --piece;
    for (std::size_t at = begin; at < end; ++piece) {
      const std::size_t into = at - piece->state;
      const std::size_t count = std::min(end, piece->state + piece->count) - at;
      AdamWConstants k = constants;
      k.weight_decay = piece->weight_decay;
      update_run(k, piece->p + into, piece->g + into, m_new + (at - begin), v_new + (at - begin),
                 count);
      at += count;
    }
    moments.m_absmax[b] = quantize_block(m_new, end - begin, m_map, moments.m + begin);
    moments.v_absmax[b] = quantize_block(v_new, end - begin, v_map, moments.v + begin);
  }
}

}  // namespace autotrain
