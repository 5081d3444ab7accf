// Applying the settings of DeepSpeed and accelerate configs beneath the YAML and the flags.
#include "file_settings.hpp"

#include <map>

namespace autotrain::config {

void FileSettings::append(FileSettings&& other) {
  settings.insert(settings.end(), other.settings.begin(), other.settings.end());
  notes.insert(notes.end(), other.notes.begin(), other.notes.end());
  errors.insert(errors.end(), other.errors.begin(), other.errors.end());
}

void apply_file_settings(ResolvedParams& resolved, const ResolvedParams& beneath,
                         FileSettings settings) {
  std::vector<std::string>& errors = settings.errors;
  std::map<std::string, std::pair<ParamValue, std::string>> chosen;  // name -> value, source
  for (const FileSetting& setting : settings.settings) {
    const ParamSpec* spec = find_param(setting.name);
    AT_CHECK(spec != nullptr, "internal: no parameter ", setting.name);
    ParamValue value;
    try {
      value = parse_text(*spec, setting.text, Where{setting.key, setting.file});
    } catch (const Error& error) {
      errors.emplace_back(cat(error.what(), " (", setting.name, ")"));
      continue;
    }
    const auto [earlier, first] = chosen.try_emplace(setting.name, value, setting.source());
    if (!first && earlier->second.first != value) {
      errors.push_back(cat(setting.name, ": ", setting.source(), " gives ", format_value(value),
                           " but ", earlier->second.second, " gives ",
                           format_value(earlier->second.first), "; make them agree"));
    }
  }
  if (!errors.empty()) throw Error(join(errors, "\n"));
  for (const auto& [name, choice] : chosen) {
    const ParamSpec& spec = *find_param(name);
    const std::string& now = resolved.provenance[name];
    if (now == beneath.provenance.at(name)) {
      set_value(resolved.params, spec, choice.first);
      resolved.provenance[name] = choice.second;
    } else if (get_value(resolved.params, spec) != choice.first) {
      resolved.notes.push_back(cat(name, " ", format_value(get_value(resolved.params, spec)),
                                   " from ", now, " overrides ", format_value(choice.first),
                                   " from ", choice.second));
    }
  }
  resolved.notes.insert(resolved.notes.end(), settings.notes.begin(), settings.notes.end());
}

}  // namespace autotrain::config
