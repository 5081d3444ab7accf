// Parquet's encodings (Encodings.md): the RLE / bit-packing hybrid, PLAIN, and the delta
// encodings that writers use for pages v2 without a dictionary (arrow-rs, DuckDB).
#include "encodings.hpp"

#include <cstring>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::data::parquet {
namespace {

int bit_width_of(int max_level) {
  int w = 0;
  while ((1 << w) <= max_level) ++w;
  return w;
}

template <typename T>
T load(std::string_view in, std::size_t at) {
  T v;
  std::memcpy(&v, in.data() + at, sizeof(T));
  return v;
}

// Reads an unsigned LEB128 varint at `pos`.
std::uint64_t uvarint(std::string_view in, std::size_t& pos, const std::string& what) {
  std::uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    AT_CHECK(pos < in.size(), what, ": delta-encoded values end inside a varint");
    const auto b = static_cast<std::uint8_t>(in[pos++]);
    value |= std::uint64_t(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return value;
  }
  throw Error(cat(what, ": a varint longer than 10 bytes in delta-encoded values"));
}

// DELTA_BINARY_PACKED: a header (block size, miniblocks per block, value count, first value),
// then blocks of a minimum delta, one bit width per miniblock and the miniblocks' deltas above
// the minimum, bit-packed. Returns the values; `pos` ends after the last miniblock used.
std::vector<std::int64_t> delta_binary_packed(std::string_view in, std::size_t& pos,
                                              std::size_t count, const std::string& what) {
  const std::uint64_t block = uvarint(in, pos, what), miniblocks = uvarint(in, pos, what);
  const std::uint64_t total = uvarint(in, pos, what);
  const std::uint64_t zigzag = uvarint(in, pos, what);
  AT_CHECK(block > 0 && block % 128 == 0 && block <= (1u << 20) && miniblocks > 0 &&
               block % miniblocks == 0 && (block / miniblocks) % 32 == 0,
           what, ": a delta block of ", block, " values in ", miniblocks, " miniblocks");
  AT_CHECK(total == count, what, ": delta-encoded values count ", total, " where the page has ",
           count);
  std::vector<std::int64_t> values;
  if (count == 0) return values;
  values.reserve(count);
  std::uint64_t last = (zigzag >> 1) ^ (~(zigzag & 1) + 1);
  values.push_back(static_cast<std::int64_t>(last));
  const std::uint64_t per_miniblock = block / miniblocks;
  while (values.size() < count) {
    const std::uint64_t z = uvarint(in, pos, what);
    const std::uint64_t min_delta = (z >> 1) ^ (~(z & 1) + 1);
    AT_CHECK(miniblocks <= in.size() - pos, what, ": delta bit widths end early");
    const std::string_view widths = in.substr(pos, miniblocks);
    pos += miniblocks;
    for (std::uint64_t m = 0; m < miniblocks && values.size() < count; ++m) {
      const int width = static_cast<std::uint8_t>(widths[m]);
      AT_CHECK(width <= 64, what, ": a delta bit width of ", width);
      const std::uint64_t bytes = per_miniblock * std::uint64_t(width) / 8;
      AT_CHECK(bytes <= in.size() - pos, what, ": a delta miniblock ends early");
      for (std::uint64_t v = 0; v < per_miniblock && values.size() < count; ++v) {
        std::uint64_t delta = 0;
        for (int b = 0; b < width; ++b) {
          const std::uint64_t at = v * std::uint64_t(width) + std::uint64_t(b);
          delta |= std::uint64_t((static_cast<std::uint8_t>(in[pos + at / 8]) >> (at % 8)) & 1)
                   << b;
        }
        last += min_delta + delta;  // two's complement wrap-around, as the writers compute it
        values.push_back(static_cast<std::int64_t>(last));
      }
      pos += bytes;
    }
  }
  return values;
}

// Lengths (DELTA_BINARY_PACKED) then the bytes of `count` values, from `pos`.
std::vector<std::string_view> delta_length_strings(std::string_view in, std::size_t& pos,
                                                   std::size_t count, const std::string& what) {
  const std::vector<std::int64_t> lengths = delta_binary_packed(in, pos, count, what);
  std::vector<std::string_view> strings;
  for (const std::int64_t n : lengths) {
    AT_CHECK(n >= 0 && std::uint64_t(n) <= in.size() - pos, what, ": a delta-encoded string of ", n,
             " bytes where ", in.size() - pos, " are left");
    strings.push_back(in.substr(pos, std::size_t(n)));
    pos += std::size_t(n);
  }
  return strings;
}

}  // namespace

// Reads the RLE / bit-packed hybrid: `count` values of `bit_width` bits into `out`.
void decode_hybrid(std::string_view in, int bit_width, std::size_t count,
                   std::vector<std::uint32_t>& out, const std::string& what) {
  AT_CHECK(bit_width >= 0 && bit_width <= 32, what, ": a bit width of ", bit_width);
  const std::size_t start = out.size();
  out.resize(start + count);
  std::size_t pos = 0, n = 0;
  const auto fail = [&] {
    throw Error(cat(what, ": a run of levels or dictionary indices ends early (", n, " of ", count,
                    " values)"));
  };
  const std::size_t value_bytes = std::size_t(bit_width + 7) / 8;
  while (n < count) {
    std::uint64_t header = 0;
    for (int shift = 0;; shift += 7) {
      if (pos >= in.size() || shift > 35) fail();
      const auto b = static_cast<std::uint8_t>(in[pos++]);
      header |= std::uint64_t(b & 0x7f) << shift;
      if ((b & 0x80) == 0) break;
    }
    if (header & 1) {  // bit-packed: groups of 8 values, least significant bit first
      const std::uint64_t values = (header >> 1) * 8;
      const std::uint64_t bytes = (header >> 1) * std::uint64_t(bit_width);
      if (bytes > in.size() - pos) fail();
      for (std::uint64_t v = 0; v < values && n < count; ++v, ++n) {
        std::uint64_t value = 0;
        const std::uint64_t bit = v * std::uint64_t(bit_width);
        for (int b = 0; b < bit_width; ++b) {
          const std::uint64_t at = bit + std::uint64_t(b);
          value |= std::uint64_t((static_cast<std::uint8_t>(in[pos + at / 8]) >> (at % 8)) & 1)
                   << b;
        }
        out[start + n] = static_cast<std::uint32_t>(value);
      }
      pos += bytes;
    } else {  // a run of one value
      const std::uint64_t run = header >> 1;
      if (value_bytes > in.size() - pos) fail();
      std::uint64_t value = 0;
      for (std::size_t b = 0; b < value_bytes; ++b)
        value |= std::uint64_t(static_cast<std::uint8_t>(in[pos + b])) << (8 * b);
      pos += value_bytes;
      for (std::uint64_t v = 0; v < run && n < count; ++v, ++n)
        out[start + n] = static_cast<std::uint32_t>(value);
    }
  }
}

void decode_levels(std::string_view& in, int max_level, std::size_t count, bool prefixed,
                   std::vector<std::uint8_t>& out, const std::string& what) {
  std::string_view runs = in;
  if (prefixed) {
    AT_CHECK(in.size() >= 4, what, ": a Parquet data page ends before its levels");
    std::uint32_t length = 0;
    std::memcpy(&length, in.data(), 4);
    AT_CHECK(length <= in.size() - 4, what, ": levels of ", length, " bytes in a page of ",
             in.size());
    runs = in.substr(4, length);
    in.remove_prefix(4 + std::size_t(length));
  }
  std::vector<std::uint32_t> levels;
  decode_hybrid(runs, bit_width_of(max_level), count, levels, what);
  for (const std::uint32_t level : levels) {
    AT_CHECK(level <= std::uint32_t(max_level), what, ": level ", level, " above the column's ",
             max_level);
    out.push_back(static_cast<std::uint8_t>(level));
  }
}

// `count` PLAIN values of `type` from `in`.
void plain_values(std::string_view in, Physical type, std::size_t count,
                  std::vector<nlohmann::ordered_json>& out, const std::string& what) {
  std::size_t pos = 0;
  const auto need = [&](std::size_t bytes) {
    AT_CHECK(bytes <= in.size() - pos, what, ": PLAIN values end early (", out.size(), " read)");
  };
  for (std::size_t i = 0; i < count; ++i) {
    switch (type) {
      case Physical::byte_array: {
        need(4);
        const auto n = load<std::uint32_t>(in, pos);
        pos += 4;
        need(n);
        out.emplace_back(std::string(in.substr(pos, n)));
        pos += n;
        break;
      }
      case Physical::int32:
        need(4);
        out.emplace_back(load<std::int32_t>(in, pos));
        pos += 4;
        break;
      case Physical::int64:
        need(8);
        out.emplace_back(load<std::int64_t>(in, pos));
        pos += 8;
        break;
      case Physical::float32:
        need(4);
        out.emplace_back(double(load<float>(in, pos)));
        pos += 4;
        break;
      case Physical::float64:
        need(8);
        out.emplace_back(load<double>(in, pos));
        pos += 8;
        break;
      case Physical::boolean:
        AT_CHECK(i / 8 < in.size(), what, ": PLAIN booleans end early");
        out.emplace_back(((static_cast<std::uint8_t>(in[i / 8]) >> (i % 8)) & 1) != 0);
        break;
      default:
        throw Error(cat(what, ": Parquet physical type ", static_cast<int>(type),
                        " (INT96 or FIXED_LEN_BYTE_ARRAY) is not supported"));
    }
  }
}

void delta_values(int encoding, std::string_view in, Physical type, std::size_t count,
                  std::vector<nlohmann::ordered_json>& out, const std::string& what) {
  std::size_t pos = 0;
  if (encoding == 5) {
    AT_CHECK(type == Physical::int32 || type == Physical::int64, what,
             ": DELTA_BINARY_PACKED values of a column that is not INT32 or INT64");
    for (const std::int64_t v : delta_binary_packed(in, pos, count, what)) {
      out.emplace_back(type == Physical::int32 ? std::int64_t(static_cast<std::int32_t>(v)) : v);
    }
    return;
  }
  AT_CHECK(type == Physical::byte_array, what, ": ",
           encoding == 6 ? "DELTA_LENGTH_BYTE_ARRAY" : "DELTA_BYTE_ARRAY",
           " values of a column that is not BYTE_ARRAY");
  if (encoding == 6) {
    for (const std::string_view s : delta_length_strings(in, pos, count, what))
      out.emplace_back(std::string(s));
    return;
  }
  // DELTA_BYTE_ARRAY: each value is a prefix of the one before and a suffix of its own.
  const std::vector<std::int64_t> prefixes = delta_binary_packed(in, pos, count, what);
  const std::vector<std::string_view> suffixes = delta_length_strings(in, pos, count, what);
  std::string last;
  for (std::size_t i = 0; i < count; ++i) {
    AT_CHECK(prefixes[i] >= 0 && std::uint64_t(prefixes[i]) <= last.size(), what,
             ": a shared prefix of ", prefixes[i], " bytes after a value of ", last.size());
    last.resize(std::size_t(prefixes[i]));
    last += suffixes[i];
    out.emplace_back(last);
  }
}

}  // namespace autotrain::data::parquet
