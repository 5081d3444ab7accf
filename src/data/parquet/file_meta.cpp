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

RawElement read_schema_element(CompactReader& r) {
  RawElement e;
  r.begin_struct();
  std::int16_t id = 0;
  ThriftType t{};
  while (r.next_field(id, t)) {
    if (id == 1 && t == ThriftType::i32) {
      const int type = r.read_i32();
      if (type < 0 || type > 7) r.fail(cat("physical type ", type));
      e.node.type = static_cast<Physical>(type);
    } else if (id == 3 && t == ThriftType::i32) {
      const int rep = r.read_i32();
      if (rep < 0 || rep > 2) r.fail(cat("repetition type ", rep));
      e.node.repetition = static_cast<Repetition>(rep);
    } else if (id == 4 && t == ThriftType::binary) {
      e.node.name = r.read_binary();
    } else if (id == 5 && t == ThriftType::i32) {
      e.num_children = r.read_i32();
      if (e.num_children < 0) r.fail(cat("num_children ", e.num_children));
    } else if (id == 6 && t == ThriftType::i32) {
      const int converted = r.read_i32();
      e.node.list = e.node.list || converted == kConvertedList;
      e.node.map = e.node.map || converted == kConvertedMap || converted == kConvertedMapKeyValue;
    } else if (id == 10 && t == ThriftType::structure) {  // logicalType: which member is set
      r.begin_struct();
      std::int16_t member = 0;
      ThriftType mt{};
      while (r.next_field(member, mt)) {
        e.node.list = e.node.list || member == 3;
        e.node.map = e.node.map || member == 2;
        r.skip(mt);
      }
      r.end_struct();
    } else {
      r.skip(t);
    }
  }
  r.end_struct();
  return e;
}

ChunkMeta read_column_meta(CompactReader& r) {
  ChunkMeta m;
  r.begin_struct();
  std::int16_t id = 0;
  ThriftType t{};
  while (r.next_field(id, t)) {
    if (id == 1 && t == ThriftType::i32) {
      const int type = r.read_i32();
      if (type < 0 || type > 7) r.fail(cat("physical type ", type));
      m.type = static_cast<Physical>(type);
    } else if (id == 4 && t == ThriftType::i32) {
      const int codec = r.read_i32();
      if (codec < 0 || codec > 7) r.fail(cat("compression codec ", codec));
      m.codec = static_cast<Codec>(codec);
    } else if (id == 5 && t == ThriftType::i64) {
      m.num_values = r.read_i64();
    } else if (id == 7 && t == ThriftType::i64) {
      m.total_compressed_size = r.read_i64();
    } else if (id == 9 && t == ThriftType::i64) {
      m.data_page_offset = r.read_i64();
    } else if (id == 11 && t == ThriftType::i64) {
      m.dictionary_page_offset = r.read_i64();
    } else {
      r.skip(t);
    }
  }
  r.end_struct();
  return m;
}

ChunkMeta read_column_chunk(CompactReader& r) {
  ChunkMeta m;
  bool external = false, has_meta = false;
  r.begin_struct();
  std::int16_t id = 0;
  ThriftType t{};
  while (r.next_field(id, t)) {
    if (id == 1 && t == ThriftType::binary) {
      external = !r.read_binary().empty();
    } else if (id == 3 && t == ThriftType::structure) {
      m = read_column_meta(r);
      has_meta = true;
    } else {
      r.skip(t);
    }
  }
  r.end_struct();
  if (!has_meta) r.fail("a column chunk without meta_data");
  m.external = external;
  return m;
}

RowGroupMeta read_row_group(CompactReader& r) {
  RowGroupMeta g;
  r.begin_struct();
  std::int16_t id = 0;
  ThriftType t{};
  while (r.next_field(id, t)) {
    if (id == 1 && t == ThriftType::list) {
      ThriftType element{};
      const std::size_t n = r.begin_list(element);
      if (element != ThriftType::structure) r.fail("row group columns that are not structs");
      for (std::size_t i = 0; i < n; ++i) g.columns.push_back(read_column_chunk(r));
    } else if (id == 3 && t == ThriftType::i64) {
      g.num_rows = r.read_i64();
    } else {
      r.skip(t);
    }
  }
  r.end_struct();
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
  r.begin_struct();
  std::int16_t id = 0;
  ThriftType t{};
  while (r.next_field(id, t)) {
    if (id == 2 && t == ThriftType::list) {
      ThriftType element{};
      const std::size_t n = r.begin_list(element);
      if (element != ThriftType::structure) r.fail("schema elements that are not structs");
      for (std::size_t i = 0; i < n; ++i) raw.push_back(read_schema_element(r));
    } else if (id == 3 && t == ThriftType::i64) {
      meta.num_rows = r.read_i64();
    } else if (id == 4 && t == ThriftType::list) {
      ThriftType element{};
      const std::size_t n = r.begin_list(element);
      if (element != ThriftType::structure) r.fail("row groups that are not structs");
      for (std::size_t i = 0; i < n; ++i) meta.row_groups.push_back(read_row_group(r));
    } else {
      r.skip(t);
    }
  }
  r.end_struct();
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
