// Pages of a column chunk (parquet.thrift's PageHeader, DataPageHeader, DataPageHeaderV2 and
// DictionaryPageHeader), the RLE / bit-packing hybrid of levels and dictionary indices, and PLAIN
// values. Sizes come from an untrusted file: each is checked against the bytes there are before
// anything is allocated or read.
#include "column_chunk.hpp"

#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"
#include "encodings.hpp"
#include "thrift_compact.hpp"

namespace autotrain::data::parquet {
namespace {

// Limits that no writer's defaults come near (pages of about 1 MiB and 20000 values), so that a
// hostile header cannot make one page, or a dictionary repeated by RLE runs, take the memory.
constexpr std::int64_t kMaxPageBytes = std::int64_t(256) << 20;
constexpr std::int64_t kMaxPageValues = std::int64_t(1) << 24;
constexpr std::size_t kMaxChunkValueBytes = std::size_t(1) << 30;  // decoded, per column chunk

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
  r.read_struct([&](std::int16_t id, ThriftType t) {
    const bool boolean = t == ThriftType::boolean_true || t == ThriftType::boolean_false;
    if (id == 1 && t == ThriftType::i32) {
      h.num_values = r.read_i32();
    } else if (id == (v2 ? 4 : 2) && t == ThriftType::i32) {
      h.encoding = r.read_i32();
    } else if (v2 && id == 5 && t == ThriftType::i32) {
      h.def_bytes = r.read_i32();
    } else if (v2 && id == 6 && t == ThriftType::i32) {
      h.rep_bytes = r.read_i32();
    } else if (v2 && id == 7 && boolean) {
      h.values_compressed = r.read_bool(t);
    } else {
      return false;
    }
    return true;
  });
}

PageHeader read_page_header(CompactReader& r) {
  PageHeader h;
  r.read_struct([&](std::int16_t id, ThriftType t) {
    if (id == 1 && t == ThriftType::i32) {
      h.type = r.read_i32();
    } else if (id == 2 && t == ThriftType::i32) {
      h.uncompressed = r.read_i32();
    } else if (id == 3 && t == ThriftType::i32) {
      h.compressed = r.read_i32();
    } else if ((id == 5 || id == 7 || id == 8) && t == ThriftType::structure) {
      read_page_subheader(r, h, id == 8);
    } else {
      return false;
    }
    return true;
  });
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
  // The size a compressed page declares must match the header's before anything is allocated.
  if (codec == Codec::snappy) {
    std::size_t n = 0;
    AT_CHECK(snappy_uncompressed_length(in.data(), in.size(), &n) == SNAPPY_OK &&
                 std::int64_t(n) == size,
             what, ": a SNAPPY Parquet page that does not declare the ", size,
             " bytes its header gives");
  } else if (codec == Codec::zstd) {
    const unsigned long long n = ZSTD_getFrameContentSize(in.data(), in.size());
    AT_CHECK(n == ZSTD_CONTENTSIZE_UNKNOWN || n == static_cast<unsigned long long>(size), what,
             ": a ZSTD Parquet page that does not declare the ", size, " bytes its header gives");
  } else if (codec == Codec::gzip) {
    AT_CHECK(size <= std::int64_t(in.size()) * 1032 + 1024, what, ": a GZIP Parquet page of ",
             in.size(), " bytes cannot hold the ", size, " its header gives");
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
    spend(count * kEntryBytes, 0);
    std::string bytes;
    std::string_view values;
    if (!v2) {
      bytes = decompress(chunk_.codec, body, h.uncompressed, what_);
      values = bytes;
      if (leaf_.max_rep > 0) decode_levels(values, leaf_.max_rep, count, true, out_.rep, what_);
      if (leaf_.max_def > 0) decode_levels(values, leaf_.max_def, count, true, out_.def, what_);
    } else {
      AT_CHECK(h.rep_bytes >= 0 && h.def_bytes >= 0 &&
                   h.rep_bytes + h.def_bytes <= std::int64_t(body.size()),
               what_, ": a data page v2 whose levels (", h.rep_bytes, " + ", h.def_bytes,
               " bytes) exceed its ", body.size(), " bytes");
      const auto rep = std::size_t(h.rep_bytes), def = std::size_t(h.def_bytes);
      std::string_view rep_runs = body.substr(0, rep), def_runs = body.substr(rep, def);
      if (leaf_.max_rep > 0) decode_levels(rep_runs, leaf_.max_rep, count, false, out_.rep, what_);
      if (leaf_.max_def > 0) decode_levels(def_runs, leaf_.max_def, count, false, out_.def, what_);
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
      defined = std::size_t(std::count(out_.def.end() - std::ptrdiff_t(count), out_.def.end(),
                                       std::uint8_t(leaf_.max_def)));
    }
    const std::size_t before = out_.values.size();
    decode_values(h.encoding, values, defined);
    if (h.encoding != kPlainDictionary && h.encoding != kRleDictionary) {
      for (std::size_t i = before; i < out_.values.size(); ++i) {
        const auto& value = out_.values[i];
        spend(value.is_string() ? value.get_ref<const std::string&>().size() : 0);
      }
    }
    out_.entries += count;
  }

  LeafEntries take() { return std::move(out_); }

 private:
  // What an entry costs in memory: its levels here, and the row assembly's indexes.
  static constexpr std::size_t kEntryBytes = 2 + 2 * sizeof(std::size_t);

  // Counts decoded memory (a value's bytes and, by default, the JSON value's own size) against
  // the chunk's limit.
  void spend(std::size_t bytes, std::size_t json = sizeof(nlohmann::ordered_json)) {
    spent_ += bytes + json;
    AT_CHECK(spent_ <= kMaxChunkValueBytes, what_, ": the column chunk decodes to more than ",
             kMaxChunkValueBytes >> 20,
             " MiB of values; autotrain reads a row group's column at once, so write the file "
             "with smaller row groups (pyarrow's row_group_size)");
  }

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
        const auto& value = dictionary_[i];
        spend(value.is_string() ? value.get_ref<const std::string&>().size() : 0);
        out_.values.push_back(value);
      }
    } else if (encoding == kRle && chunk_.type == Physical::boolean) {
      std::vector<std::uint8_t> bits;
      decode_levels(values, 1, defined, true, bits, what_);
      for (const std::uint8_t b : bits) out_.values.emplace_back(b != 0);
    } else if (encoding >= 5 && encoding <= 7) {
      delta_values(encoding, values, chunk_.type, defined, out_.values, what_);
    } else {
      throw Error(cat(what_, ": Parquet encoding ", encoding_name(encoding),
                      " is not supported (expected PLAIN, dictionary or delta encodings)"));
    }
  }

  const ChunkMeta& chunk_;
  const SchemaNode& leaf_;
  const std::string& what_;
  std::vector<nlohmann::ordered_json> dictionary_;
  LeafEntries out_;
  std::size_t spent_ = 0;
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
    CompactReader r(bytes.substr(pos), what, "page header", std::size_t(start) + pos);
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
