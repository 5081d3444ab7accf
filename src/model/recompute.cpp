// Activation checkpointing's modes (model/recompute.hpp).
#include "autotrain/model/recompute.hpp"

#include "autotrain/core/error.hpp"

namespace autotrain::model {

Recompute parse_recompute(std::string_view value) {
  if (value == "none") return Recompute::none;
  if (value == "selective") return Recompute::selective;
  if (value == "full") return Recompute::full;
  throw Error(cat("recompute '", value, "': expected full, selective or none"));
}

const char* recompute_name(Recompute mode) {
  switch (mode) {
    case Recompute::none:
      return "none";
    case Recompute::selective:
      return "selective";
    case Recompute::full:
      return "full";
  }
  return "?";
}

}  // namespace autotrain::model
