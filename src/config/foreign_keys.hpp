#pragma once
// AutoTrain's keys that autotrain has no parameter for (the LLM trainer's, and the DeepSpeed
// switches AutoTrain passes): each says why, and whether a value is harmless here (noted and
// skipped) or would change what the user expects (an error). Read by sources.cpp for files and
// flags; config/training_params.hpp's foreign_key_names() lists them for the command line.
#include <string>
#include <string_view>

namespace autotrain::config {

struct ForeignKey {
  std::string_view name;
  bool ignored;                    // harmless whatever its value
  std::string_view why;            // the note, or the error's reason
  std::string_view harmless = {};  // a value that is harmless besides those that switch it off
  // Whether `value` (as written) changes nothing here: the key is ignored, the value leaves the
  // feature off (false, null, none, empty), or it is the harmless one.
  bool harmless_with(std::string value) const;
};

// nullptr when `name` (snake case) is not one of them.
const ForeignKey* find_foreign_key(std::string_view name);

}  // namespace autotrain::config
