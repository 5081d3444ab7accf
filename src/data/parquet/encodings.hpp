#pragma once
// The value and level encodings of Parquet's specification (Encodings.md), decoding untrusted
// bytes: every count and length is checked against the bytes there are.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "file_meta.hpp"

namespace autotrain::data::parquet {

// The RLE / bit-packing hybrid: appends `count` values of `bit_width` bits to `out`.
void decode_hybrid(std::string_view in, int bit_width, std::size_t count,
                   std::vector<std::uint32_t>& out, const std::string& what);
// Levels: the hybrid with the bit width of `max_level`, appended to `out`. v1 pages prefix them
// with their length in 4 bytes (`prefixed`; `in` is advanced past them).
void decode_levels(std::string_view& in, int max_level, std::size_t count, bool prefixed,
                   std::vector<std::uint8_t>& out, const std::string& what);

// `count` PLAIN values of `type`, appended to `out` as JSON.
void plain_values(std::string_view in, Physical type, std::size_t count,
                  std::vector<nlohmann::ordered_json>& out, const std::string& what);

// DELTA_BINARY_PACKED (INT32, INT64), DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY (BYTE_ARRAY):
// `count` values appended to `out`. `encoding` is parquet.thrift's number (5, 6 or 7).
void delta_values(int encoding, std::string_view in, Physical type, std::size_t count,
                  std::vector<nlohmann::ordered_json>& out, const std::string& what);

}  // namespace autotrain::data::parquet
