#pragma once
// One column chunk of a row group decoded: its pages (dictionary, data page v1 and v2) read and
// decompressed (SNAPPY, GZIP, ZSTD or none), the repetition and definition levels expanded from
// their RLE/bit-packed runs, and the values (PLAIN or dictionary encoded) as JSON.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "file_meta.hpp"

namespace autotrain::data::parquet {

struct LeafEntries {
  std::vector<std::uint8_t> rep, def;  // one per entry; empty where the leaf's max level is 0
  std::vector<nlohmann::ordered_json> values;  // one per entry whose def is the leaf's max_def
  std::size_t entries = 0;
};

// `file`: the whole file; `what`: the file and the column, for errors.
LeafEntries read_column_chunk(std::string_view file, const ChunkMeta& chunk, const SchemaNode& leaf,
                              const std::string& what);

}  // namespace autotrain::data::parquet
