#pragma once
// A Parquet file's footer (FileMetaData of parquet.thrift): the schema as a tree with each
// node's definition and repetition levels, and the row groups' column chunks. Only what reading
// rows needs is kept; everything else is skipped.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace autotrain::data::parquet {

// Physical types of parquet.thrift's Type.
enum class Physical : int {
  boolean = 0,
  int32 = 1,
  int64 = 2,
  int96 = 3,
  float32 = 4,
  float64 = 5,
  byte_array = 6,
  fixed_len_byte_array = 7,
  group = -1
};
enum class Repetition : int { required = 0, optional = 1, repeated = 2 };
// Compression codecs of parquet.thrift's CompressionCodec.
enum class Codec : int {
  uncompressed = 0,
  snappy = 1,
  gzip = 2,
  lzo = 3,
  brotli = 4,
  lz4 = 5,
  zstd = 6,
  lz4_raw = 7
};

struct SchemaNode {
  std::string name;
  Physical type = Physical::group;
  Repetition repetition = Repetition::required;
  bool list = false;             // annotated LIST (converted_type or logicalType)
  bool map = false;              // annotated MAP or MAP_KEY_VALUE
  int max_def = 0, max_rep = 0;  // levels at which this node is defined / repeats
  int leaf = -1;                 // column index, for leaves
  std::vector<int> children;
};

struct ChunkMeta {
  Physical type = Physical::group;
  Codec codec = Codec::uncompressed;
  std::int64_t num_values = 0;
  std::int64_t data_page_offset = -1, dictionary_page_offset = -1;
  std::int64_t total_compressed_size = 0;
  bool external = false;  // in another file (file_path): not read
};

struct RowGroupMeta {
  std::int64_t num_rows = 0;
  std::vector<ChunkMeta> columns;
};

struct FileMeta {
  std::int64_t num_rows = 0;
  std::vector<SchemaNode> schema;  // [0] is the root
  std::vector<int> leaves;         // node of each column, in column order
  std::vector<RowGroupMeta> row_groups;
};

// Parses a footer (the bytes before the length and "PAR1"; `offset` where it starts in the file);
// `what` names the file in errors.
FileMeta read_file_meta(std::string_view footer, const std::string& what, std::size_t offset);

std::string_view codec_name(Codec codec);

}  // namespace autotrain::data::parquet
