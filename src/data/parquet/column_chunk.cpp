// Pages of a column chunk (parquet.thrift's PageHeader, DataPageHeader, DataPageHeaderV2 and
// DictionaryPageHeader), the RLE / bit-packing hybrid of levels and dictionary indices, and PLAIN
// values. Sizes come from an untrusted file: each is checked against the bytes there are before
// anything is allocated or read.
#include "column_chunk.hpp"

#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"
#include "thrift_compact.hpp"

namespace autotrain::data::parquet {
namespace {

constexpr std::int64_t kMaxPageBytes = std::int64_t(1) << 30;
constexpr std::int64_t kMaxPageValues = std::int64_t(1) << 27;

enum Encoding : int { kPlain = 0, kPlainDictionary = 2, kRle = 3, kRleDictionary = 8 };
constexpr std::string_view kEncodingNames[] = {
    "PLAIN",          "GROUP_VAR_INT",       "PLAIN_DICTIONARY",        "RLE",
    "BIT_PACKED",     "DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
    "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};

std::string encoding_name(int encoding) {
  return encoding >= 0 && encoding < 10 ? std::string(kEncodingNames[encoding]) : cat(encoding);
}

struct PageHeader {
  int type = -1;  // DATA_PAGE 0, INDEX_PAGE 1, DICTIONARY_PAGE 2, DATA_PAGE_V2 3
  std::int64_t uncompressed = -1, compressed = -1;
  std::int64_t num_values = -1;
  int encoding = kPlain;
  std::int64_t rep_bytes = 0, def_bytes = 0;  // v2
  bool values_compressed = true;              // v2
};

void read_page_subheader(CompactReader& r, PageHeader& h, bool v2) {
  r.begin_struct();
  std::int16_t id = 0;
  ThriftType t{};
  while (r.next_field(id, t)) {
    if (id == 1 && t == ThriftType::i32) {
      h.num_values = r.read_i32();
    } else if (id == (v2 ? 4 : 2) && t == ThriftType::i32) {
      h.encoding = r.read_i32();
    } else if (v2 && id == 5 && t == ThriftType::i32) {
      h.def_bytes = r.read_i32();
    } else if (v2 && id == 6 && t == ThriftType::i32) {
      h.rep_bytes = r.read_i32();
    } else if (v2 && id == 7 && (t == ThriftType::boolean_true || t == ThriftType::boolean_false)) {
      h.values_compressed = r.read_bool(t);
    } else {
      r.skip(t);
    }
  }
  r.end_struct();
}

PageHeader read_page_header(CompactReader& r) {
  PageHeader h;
  r.begin_struct();
  std::int16_t id = 0;
  ThriftType t{};
  while (r.next_field(id, t)) {
    if (id == 1 && t == ThriftType::i32) {
      h.type = r.read_i32();
    } else if (id == 2 && t == ThriftType::i32) {
      h.uncompressed = r.read_i32();
    } else if (id == 3 && t == ThriftType::i32) {
      h.compressed = r.read_i32();
    } else if ((id == 5 || id == 7 || id == 8) && t == ThriftType::structure) {
      read_page_subheader(r, h, id == 8);
    } else {
      r.skip(t);
    }
  }
  r.end_struct();
  return h;
}

std::string decompress(Codec codec, std::string_view in, std::int64_t size,
                       const std::string& what) {
  AT_CHECK(size >= 0 && size <= kMaxPageBytes, what, ": a Parquet page of ", size,
           " bytes uncompressed (at most ", kMaxPageBytes, ")");
  if (codec == Codec::uncompressed) {
    AT_CHECK(std::int64_t(in.size()) == size, what, ": an uncompressed Parquet page of ", in.size(),
             " bytes says it holds ", size);
    return std::string(in);
  }
  std::string out(std::size_t(size), '\0');
  bool ok = false;
  if (codec == Codec::snappy) {
    std::size_t n = 0;
    ok = snappy_uncompressed_length(in.data(), in.size(), &n) == SNAPPY_OK && n == out.size() &&
         snappy_uncompress(in.data(), in.size(), out.data(), &n) == SNAPPY_OK;
  } else if (codec == Codec::zstd) {
    const std::size_t n = ZSTD_decompress(out.data(), out.size(), in.data(), in.size());
    ok = !ZSTD_isError(n) && n == out.size();
  } else if (codec == Codec::gzip) {
    z_stream z{};
    if (inflateInit2(&z, 15 + 32) == Z_OK) {  // a gzip or zlib header
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
      z.avail_in = static_cast<uInt>(in.size());
      z.next_out = reinterpret_cast<Bytef*>(out.data());
      z.avail_out = static_cast<uInt>(out.size());
      ok = inflate(&z, Z_FINISH) == Z_STREAM_END && z.total_out == out.size();
      inflateEnd(&z);
    }
  } else {
    throw Error(cat(what, ": Parquet compression ", codec_name(codec),
                    " is not supported (expected UNCOMPRESSED, SNAPPY, GZIP or ZSTD)"));
  }
  AT_CHECK(ok, what, ": a ", codec_name(codec), " Parquet page does not decompress to the ", size,
           " bytes its header gives");
  return out;
}

// Reads the RLE / bit-packed hybrid: `count` values of `bit_width` bits into `out`.
template <typename T>
void decode_hybrid(std::string_view in, int bit_width, std::size_t count, std::vector<T>& out,
                   const std::string& what) {
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
        out[start + n] = static_cast<T>(value);
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
        out[start + n] = static_cast<T>(value);
    }
  }
}

int bit_width_of(int max_level) {
  int w = 0;
  while ((1 << w) <= max_level) ++w;
  return w;
}

// Levels of a v1 page: a 4-byte length, then the hybrid runs; advances `page`.
void levels_v1(std::string_view& page, int max_level, std::size_t count,
               std::vector<std::uint8_t>& out, const std::string& what) {
  AT_CHECK(page.size() >= 4, what, ": a Parquet data page ends before its levels");
  std::uint32_t length = 0;
  std::memcpy(&length, page.data(), 4);
  AT_CHECK(length <= page.size() - 4, what, ": levels of ", length, " bytes in a page of ",
           page.size());
  decode_hybrid(page.substr(4, length), bit_width_of(max_level), count, out, what);
  page.remove_prefix(4 + std::size_t(length));
}

template <typename T>
T load(std::string_view in, std::size_t at) {
  T v;
  std::memcpy(&v, in.data() + at, sizeof(T));
  return v;
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

class ChunkDecoder {
 public:
  ChunkDecoder(const ChunkMeta& chunk, const SchemaNode& leaf, const std::string& what)
      : chunk_(chunk), leaf_(leaf), what_(what) {}

  void dictionary_page(const PageHeader& h, std::string_view body) {
    AT_CHECK(h.encoding == kPlain || h.encoding == kPlainDictionary, what_,
             ": a dictionary page encoded ", encoding_name(h.encoding), " (expected PLAIN)");
    AT_CHECK(h.num_values >= 0 && h.num_values <= kMaxPageValues, what_, ": a dictionary of ",
             h.num_values, " values");
    const std::string bytes = decompress(chunk_.codec, body, h.uncompressed, what_);
    dictionary_.clear();
    plain_values(bytes, chunk_.type, std::size_t(h.num_values), dictionary_, what_);
  }

  void data_page(const PageHeader& h, std::string_view body, bool v2) {
    AT_CHECK(h.num_values >= 0 && h.num_values <= kMaxPageValues, what_, ": a data page of ",
             h.num_values, " values");
    const auto count = std::size_t(h.num_values);
    std::string bytes;
    std::string_view values;
    if (!v2) {
      bytes = decompress(chunk_.codec, body, h.uncompressed, what_);
      values = bytes;
      if (leaf_.max_rep > 0) levels_v1(values, leaf_.max_rep, count, out_.rep, what_);
      if (leaf_.max_def > 0) levels_v1(values, leaf_.max_def, count, out_.def, what_);
    } else {
      AT_CHECK(h.rep_bytes >= 0 && h.def_bytes >= 0 &&
                   h.rep_bytes + h.def_bytes <= std::int64_t(body.size()),
               what_, ": a data page v2 whose levels (", h.rep_bytes, " + ", h.def_bytes,
               " bytes) exceed its ", body.size(), " bytes");
      const auto rep = std::size_t(h.rep_bytes), def = std::size_t(h.def_bytes);
      if (leaf_.max_rep > 0)
        decode_hybrid(body.substr(0, rep), bit_width_of(leaf_.max_rep), count, out_.rep, what_);
      if (leaf_.max_def > 0)
        decode_hybrid(body.substr(rep, def), bit_width_of(leaf_.max_def), count, out_.def, what_);
      const std::string_view rest = body.substr(rep + def);
      if (h.values_compressed) {
        bytes = decompress(chunk_.codec, rest, h.uncompressed - h.rep_bytes - h.def_bytes, what_);
        values = bytes;
      } else {
        values = rest;
      }
    }
    std::size_t defined = count;
    if (leaf_.max_def > 0) {
      defined = 0;
      for (std::size_t i = out_.def.size() - count; i < out_.def.size(); ++i) {
        AT_CHECK(out_.def[i] <= leaf_.max_def, what_, ": definition level ", int(out_.def[i]),
                 " above the column's ", leaf_.max_def);
        defined += out_.def[i] == leaf_.max_def;
      }
    }
    decode_values(h.encoding, values, defined);
    out_.entries += count;
  }

  LeafEntries take() { return std::move(out_); }

 private:
  void decode_values(int encoding, std::string_view values, std::size_t defined) {
    if (encoding == kPlain) {
      plain_values(values, chunk_.type, defined, out_.values, what_);
    } else if (encoding == kPlainDictionary || encoding == kRleDictionary) {
      if (defined == 0) return;
      AT_CHECK(!values.empty(), what_, ": dictionary indices without their bit width");
      std::vector<std::uint32_t> indices;
      decode_hybrid(values.substr(1), static_cast<std::uint8_t>(values[0]), defined, indices,
                    what_);
      for (const std::uint32_t i : indices) {
        AT_CHECK(i < dictionary_.size(), what_, ": dictionary index ", i, " of a dictionary of ",
                 dictionary_.size());
        out_.values.push_back(dictionary_[i]);
      }
    } else if (encoding == kRle && chunk_.type == Physical::boolean) {
      std::vector<std::uint8_t> bits;
      levels_v1(values, 1, defined, bits, what_);
      for (const std::uint8_t b : bits) out_.values.emplace_back(b != 0);
    } else {
      throw Error(cat(what_, ": Parquet encoding ", encoding_name(encoding),
                      " is not supported (expected PLAIN or dictionary encoding, pyarrow's "
                      "defaults)"));
    }
  }

  const ChunkMeta& chunk_;
  const SchemaNode& leaf_;
  const std::string& what_;
  std::vector<nlohmann::ordered_json> dictionary_;
  LeafEntries out_;
};

}  // namespace

LeafEntries read_column_chunk(std::string_view file, const ChunkMeta& chunk, const SchemaNode& leaf,
                              const std::string& what) {
  AT_CHECK(!chunk.external, what, ": the column chunk is in another file (file_path)");
  AT_CHECK(chunk.type == leaf.type, what, ": the column chunk's type ", int(chunk.type),
           " is not the schema's ", int(leaf.type));
  std::int64_t start = chunk.data_page_offset;
  if (chunk.dictionary_page_offset > 0 && chunk.dictionary_page_offset < start)
    start = chunk.dictionary_page_offset;
  const auto size = std::int64_t(file.size());
  AT_CHECK(start >= 4 && chunk.total_compressed_size >= 0 && start <= size &&
               chunk.total_compressed_size <= size - start,
           what, ": the column chunk (offset ", start, ", ", chunk.total_compressed_size,
           " bytes) lies outside the file's ", size, " bytes");
  const std::string_view bytes =
      file.substr(std::size_t(start), std::size_t(chunk.total_compressed_size));
  ChunkDecoder decoder(chunk, leaf, what);
  std::size_t pos = 0;
  std::int64_t values = 0;
  while (values < chunk.num_values) {
    AT_CHECK(pos < bytes.size(), what, ": the column chunk ends after ", values, " of its ",
             chunk.num_values, " values");
    CompactReader r(bytes.substr(pos), what);
    const PageHeader h = read_page_header(r);
    pos += r.offset();
    AT_CHECK(h.compressed >= 0 && h.compressed <= std::int64_t(bytes.size() - pos), what,
             ": a page of ", h.compressed, " bytes where the chunk has ", bytes.size() - pos,
             " left");
    const std::string_view body = bytes.substr(pos, std::size_t(h.compressed));
    pos += std::size_t(h.compressed);
    if (h.type == 2) {
      decoder.dictionary_page(h, body);
    } else if (h.type == 0 || h.type == 3) {
      decoder.data_page(h, body, h.type == 3);
      values += h.num_values;
    } else {
      AT_CHECK(h.type == 1, what, ": page type ", h.type);
    }
  }
  AT_CHECK(values == chunk.num_values, what, ": the pages hold ", values, " values, the chunk ",
           chunk.num_values);
  return decoder.take();
}

}  // namespace autotrain::data::parquet
