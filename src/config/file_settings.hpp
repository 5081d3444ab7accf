#pragma once
// The configs users bring from DeepSpeed and accelerate (--deepspeed ds_config.json,
// --accelerate-config default_config.yaml): each key becomes a parameter's value, a note (it
// changes nothing here) or an error (it would change training in a way autotrain does not do).
// Their values sit beneath the YAML and the flags and above training_params.json (load.hpp).
#include <algorithm>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "autotrain/config/load.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::config {

// One value for parameter `name`, as text (parsed like a flag's), from `key` of `file`.
struct FileSetting {
  std::string name;
  std::string text;
  std::string file;
  std::string key;  // "zero_optimization.stage"
  std::string source() const { return cat(file, ":", key); }
};

struct FileSettings {
  std::vector<FileSetting> settings;
  std::vector<std::string> notes;
  std::vector<std::string> errors;

  void set(const std::string& file, const std::string& key, std::string name, std::string text) {
    settings.push_back({std::move(name), std::move(text), file, key});
  }
  void note(const std::string& file, const std::string& key, std::string_view why) {
    notes.push_back(Where{key, file}.message(cat("ignored: ", why)));
  }
  void refuse(const std::string& file, const std::string& key, std::string_view why) {
    errors.push_back(Where{key, file}.message(why));
  }
  void append(FileSettings&& other);
};

// Whether `key` is one of `list` (the keys a reader handles alike).
inline bool listed(std::string_view key, std::span<const std::string_view> list) {
  return std::find(list.begin(), list.end(), key) != list.end();
}

// A DeepSpeed JSON config. Its "auto" values are left to the other sources, as transformers'
// DeepSpeed integration fills them from the trainer's arguments.
FileSettings read_deepspeed_config(const std::filesystem::path& path);

// An accelerate config file (YAML or JSON); its deepspeed_config.deepspeed_config_file is read
// as read_deepspeed_config does.
FileSettings read_accelerate_config(const std::filesystem::path& path);

// `settings` over `resolved`: a parameter the YAML or a flag set since `beneath` (the state
// after training_params.json) keeps its value, noting what it overrides; two settings of one
// parameter that disagree are an error naming both. Throws Error with every problem.
void apply_file_settings(ResolvedParams& resolved, const ResolvedParams& beneath,
                         FileSettings settings);

}  // namespace autotrain::config
