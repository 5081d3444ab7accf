#pragma once
// <output_dir>/pairs.json: what prepare_pairs made from what, and whether it can be reused
// (the approach of manifest.json, manifest.hpp).
#include <nlohmann/json.hpp>
#include <optional>

#include "autotrain/data/preference.hpp"
#include "manifest.hpp"

namespace autotrain::data {

// prepare's manifest key (inputs, tokenizer, splits, chat template) plus the pair options.
nlohmann::json pairs_manifest_key(const PreferenceOptions& options, const ResolvedInputs& inputs,
                                  const Tokenizer& tokenizer);
void write_pairs_manifest(const PreferenceOptions& options, const nlohmann::json& key,
                          const PreparedPairs& prepared);
// The recorded pairs when <output_dir>/pairs.json matches `key` and its files are intact;
// nothing otherwise (with a log line saying why).
std::optional<PreparedPairs> reusable_pairs(const PreferenceOptions& options,
                                            const nlohmann::json& key);

}  // namespace autotrain::data
