#pragma once
// The rows of a Parquet file (Hugging Face datasets' format) as JSON values, column by column:
// strings, numbers and booleans, structs as objects, lists as arrays (a conversation's
// list<struct<role, content>> becomes [{"role": ..., "content": ...}, ...]), null where a value
// is missing. One level of lists; a column with lists inside lists, or a map, is an Error naming
// it.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace autotrain::data::parquet {

// Calls `row(values, number)` for every row (number from 1), with the values of `columns` in
// their order; a column the file lacks is null where `optional[i]`, else an Error naming it and
// the columns there are (`hint` ends that message).
void read_rows(const std::filesystem::path& path, const std::vector<std::string>& columns,
               const std::vector<bool>& optional, const std::vector<std::string>& hints,
               const std::function<void(std::vector<nlohmann::ordered_json>&&, std::size_t)>& row);

}  // namespace autotrain::data::parquet
