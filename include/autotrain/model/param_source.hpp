#pragma once
// Where a run's first parameter values come from: random initialisation from a seed, or a base
// model's pretrained weights (train/pretrained.hpp). Engines fill only the ranges they own, so
// a source must produce any range [begin, begin + out.size()) of the flat buffer on its own.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "autotrain/model/init.hpp"
#include "autotrain/model/param_layout.hpp"

namespace autotrain::model {

class ParamSource {
 public:
  virtual ~ParamSource() = default;
  // Fills out = flat[begin, begin + out.size()) of the layout's flat parameter buffer, padding
  // and the padded vocabulary rows zero.
  virtual void fill(const ParamLayout& layout, std::span<float> out, std::size_t begin) const = 0;
  // For logs: "random initialisation (seed 42)", "weights from /models/gpt2".
  virtual std::string describe() const = 0;
};

// init_params with a seed.
class RandomInit final : public ParamSource {
 public:
  explicit RandomInit(std::uint64_t seed) : seed_(seed) {}
  void fill(const ParamLayout& layout, std::span<float> out, std::size_t begin) const override {
    init_params(layout, seed_, out, begin);
  }
  std::string describe() const override;

 private:
  std::uint64_t seed_;
};

}  // namespace autotrain::model
