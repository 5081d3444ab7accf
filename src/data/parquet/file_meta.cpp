// FileMetaData, SchemaElement, RowGroup, ColumnChunk and ColumnMetaData of parquet.thrift, by
// field id; the schema's flat list (each node followed by its num_children children) becomes a
// tree with the levels Dremel assigns: an optional or repeated node adds a definition level, a
// repeated one a repetition level.
#include "file_meta.hpp"

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"
#include "thrift_compact.hpp"

namespace autotrain::data::parquet {
namespace {

// converted_type LIST = 3, MAP = 1, MAP_KEY_VALUE = 2; logicalType's union: MAP = 2, LIST = 3.
constexpr int kConvertedMap = 1, kConvertedMapKeyValue = 2, kConvertedList = 3;

struct RawElement {
  SchemaNode node;
  int num_children = 0;
};

bool is_i32(ThriftType t) {
  return t == ThriftType::i32;
}
bool is_i64(ThriftType t) {
  return t == ThriftType::i64;
}

// Reads a list of structs, each with `element`.
template <typename Element>
void read_struct_list(CompactReader& r, ThriftType t, std::string_view what, Element&& element) {
  if (t != ThriftType::list) r.fail(cat(what, " that is not a list"));
  ThriftType type{};
  const std::size_t n = r.begin_list(type);
  if (type != ThriftType::structure) r.fail(cat(what, " that are not structs"));
  for (std::size_t i = 0; i < n; ++i) element();
}

RawElement read_schema_element(CompactReader& r) {
  RawElement e;
  r.read_struct([&](std::int16_t id, ThriftType t) {
    if (id == 1 && is_i32(t)) {
      e.node.type = static_cast<Physical>(r.read_enum(7, "physical type"));
    } else if (id == 3 && is_i32(t)) {
      e.node.repetition = static_cast<Repetition>(r.read_enum(2, "repetition type"));
    } else if (id == 4 && t == ThriftType::binary) {
      e.node.name = r.read_binary();
    } else if (id == 5 && is_i32(t)) {
      e.num_children = r.read_i32();
      if (e.num_children < 0) r.fail(cat("num_children ", e.num_children));
    } else if (id == 6 && is_i32(t)) {
      const int converted = r.read_i32();
      e.node.list = e.node.list || converted == kConvertedList;
      e.node.map = e.node.map || converted == kConvertedMap || converted == kConvertedMapKeyValue;
    } else if (id == 10 && t == ThriftType::structure) {  // logicalType: which member is set
      r.read_struct([&](std::int16_t member, ThriftType) {
        e.node.list = e.node.list || member == 3;
        e.node.map = e.node.map || member == 2;
        return false;
      });
    } else {
      return false;
    }
    return true;
  });
  return e;
}

ChunkMeta read_column_meta(CompactReader& r) {
  ChunkMeta m;
  r.read_struct([&](std::int16_t id, ThriftType t) {
    if (id == 1 && is_i32(t)) {
      m.type = static_cast<Physical>(r.read_enum(7, "physical type"));
    } else if (id == 4 && is_i32(t)) {
      m.codec = static_cast<Codec>(r.read_enum(7, "compression codec"));
    } else if (id == 5 && is_i64(t)) {
      m.num_values = r.read_i64();
    } else if (id == 7 && is_i64(t)) {
      m.total_compressed_size = r.read_i64();
    } else if (id == 9 && is_i64(t)) {
      m.data_page_offset = r.read_i64();
    } else if (id == 11 && is_i64(t)) {
      m.dictionary_page_offset = r.read_i64();
    } else {
      return false;
    }
    return true;
  });
  return m;
}

ChunkMeta read_column_chunk(CompactReader& r) {
  ChunkMeta m;
  bool external = false, has_meta = false;
  r.read_struct([&](std::int16_t id, ThriftType t) {
    if (id == 1 && t == ThriftType::binary) {
      external = !r.read_binary().empty();
    } else if (id == 3 && t == ThriftType::structure) {
      m = read_column_meta(r);
      has_meta = true;
    } else {
      return false;
    }
    return true;
  });
  if (!has_meta) r.fail("a column chunk without meta_data");
  m.external = external;
  return m;
}

RowGroupMeta read_row_group(CompactReader& r) {
  RowGroupMeta g;
  r.read_struct([&](std::int16_t id, ThriftType t) {
    if (id == 1) {
      read_struct_list(r, t, "row group columns",
                       [&] { g.columns.push_back(read_column_chunk(r)); });
    } else if (id == 3 && is_i64(t)) {
      g.num_rows = r.read_i64();
    } else {
      return false;
    }
    return true;
  });
  return g;
}

// Builds the tree below node `at` from the flat list, from position `next`; levels from the
// parent's.
void build_tree(std::vector<RawElement>& raw, FileMeta& meta, std::size_t& next, int at, int depth,
                const std::string& what) {
  AT_CHECK(depth <= 32, what, ": the Parquet schema nests more than 32 levels");
  SchemaNode& parent = meta.schema[std::size_t(at)];
  const int count = raw[std::size_t(at)].num_children;
  for (int c = 0; c < count; ++c) {
    AT_CHECK(next < raw.size(), what, ": the Parquet schema's num_children exceed its ", raw.size(),
             " elements");
    const int child = static_cast<int>(next++);
    SchemaNode& node = meta.schema[std::size_t(child)];
    node.max_def = parent.max_def + (node.repetition != Repetition::required ? 1 : 0);
    node.max_rep = parent.max_rep + (node.repetition == Repetition::repeated ? 1 : 0);
    meta.schema[std::size_t(at)].children.push_back(child);
    if (raw[std::size_t(child)].num_children == 0 && node.type != Physical::group) {
      node.leaf = static_cast<int>(meta.leaves.size());
      meta.leaves.push_back(child);
    } else {
      AT_CHECK(node.type == Physical::group, what, ": Parquet schema element '", node.name,
               "' has a physical type and children");
      build_tree(raw, meta, next, child, depth + 1, what);
    }
  }
}

}  // namespace

std::string_view codec_name(Codec codec) {
  static constexpr std::string_view names[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO",
                                               "BROTLI",       "LZ4",    "ZSTD", "LZ4_RAW"};
  return names[static_cast<int>(codec)];
}

FileMeta read_file_meta(std::string_view footer, const std::string& what, std::size_t offset) {
  CompactReader r(footer, what, "metadata", offset);
  FileMeta meta;
  std::vector<RawElement> raw;
  r.read_struct([&](std::int16_t id, ThriftType t) {
    if (id == 2) {
      read_struct_list(r, t, "schema elements", [&] { raw.push_back(read_schema_element(r)); });
    } else if (id == 3 && is_i64(t)) {
      meta.num_rows = r.read_i64();
    } else if (id == 4) {
      read_struct_list(r, t, "row groups", [&] { meta.row_groups.push_back(read_row_group(r)); });
    } else {
      return false;
    }
    return true;
  });
  AT_CHECK(!raw.empty(), what, ": the Parquet footer has no schema");
  for (const RawElement& e : raw) meta.schema.push_back(e.node);
  meta.schema[0].type = Physical::group;
  meta.schema[0].repetition = Repetition::required;
  std::size_t next = 1;
  build_tree(raw, meta, next, 0, 0, what);
  AT_CHECK(next == raw.size(), what, ": the Parquet schema has ", raw.size() - next,
           " elements outside its tree");
  for (std::size_t g = 0; g < meta.row_groups.size(); ++g) {
    const RowGroupMeta& group = meta.row_groups[g];
    AT_CHECK(group.columns.size() == meta.leaves.size(), what, ": row group ", g, " has ",
             group.columns.size(), " column chunks for ", meta.leaves.size(), " columns");
    AT_CHECK(group.num_rows >= 0, what, ": row group ", g, " has ", group.num_rows, " rows");
  }
  return meta;
}

}  // namespace autotrain::data::parquet
