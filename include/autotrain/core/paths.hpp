#pragma once
// Where autotrain finds its own files, and facts about this build.
#include <filesystem>
#include <string>

namespace autotrain {

// The folder of embedded default data (the demo corpus, the GPT-2 vocabulary). Searched in
// order: $AUTOTRAIN_DATA_DIR, <prefix>/share/autotrain/data next to an installed binary, the
// source tree this binary was built from. Throws Error listing the places it looked.
std::filesystem::path data_dir();

// Absolute path of the running executable (/proc/self/exe).
std::filesystem::path executable_path();

std::string version();  // "0.1.0"

// What tells this build from another: the version and the executable's GNU build id (a hash
// the linker writes over the code, read from memory: no file I/O), e.g.
// "0.1.0+5ccf150ef3b812c7a6503f7aa45f55531690fd41"; the version alone without one.
std::string build_id();

// Writes `text` to `path` through a temporary file beside it and a rename, so a reader never
// sees half a file. Throws Error naming the file.
void write_file_atomically(const std::filesystem::path& path, const std::string& text);

}  // namespace autotrain
