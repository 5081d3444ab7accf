// Rows from the decoded column chunks of each row group, by Dremel's record assembly restricted to
// one repetition level: a leaf's entries of one row start where its repetition level is 0, and a
// node is null, an empty list or present by comparing the first leaf's definition level with
// the levels at which the node and its repeated child are defined.
#include "parquet_records.hpp"

#include <cstring>
#include <map>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/data/mapped_file.hpp"
#include "column_chunk.hpp"
#include "file_meta.hpp"

namespace autotrain::data::parquet {
namespace {

namespace fs = std::filesystem;

struct OpenFile {
  MappedFile mapping;
  std::string_view bytes;
  FileMeta meta;
};

OpenFile open(const fs::path& path) {
  OpenFile f{MappedFile(path, "Parquet file"), {}, {}};
  f.bytes = {reinterpret_cast<const char*>(f.mapping.data()), f.mapping.size()};
  const std::string what = path.string();
  AT_CHECK(f.bytes.size() >= 12 && f.bytes.substr(0, 4) == "PAR1" &&
               f.bytes.substr(f.bytes.size() - 4) == "PAR1",
           what, ": not a Parquet file (it should start and end with PAR1)");
  std::uint32_t length = 0;
  std::memcpy(&length, f.bytes.data() + f.bytes.size() - 8, 4);
  AT_CHECK(length <= f.bytes.size() - 12, what, ": the Parquet footer of ", length,
           " bytes does not fit the file's ", f.bytes.size());
  f.meta = read_file_meta(f.bytes.substr(f.bytes.size() - 8 - length, length), what,
                          f.bytes.size() - 8 - length);
  return f;
}

struct Leaf {
  LeafEntries e;
  std::vector<std::size_t> row_start;    // entry where each row starts, and the end
  std::vector<std::size_t> value_index;  // defined values before each entry
  int max_def = 0;
  int def(std::size_t entry) const { return e.def.empty() ? max_def : e.def[entry]; }
};

class RowGroupAssembler {
 public:
  RowGroupAssembler(const OpenFile& f, std::size_t group, const std::string& what)
      : f_(f), group_(group), what_(what) {}

  // Decodes the leaves below top-level column `node`.
  void load(int node) {
    const SchemaNode& n = f_.meta.schema[std::size_t(node)];
    if (n.leaf >= 0) {
      load_leaf(node);
      return;
    }
    for (const int child : n.children) load(child);
  }

  nlohmann::ordered_json value(int node, std::size_t row, std::size_t j) const {
    const SchemaNode& n = f_.meta.schema[std::size_t(node)];
    const Leaf& first = leaves_.at(first_leaf(node));
    const std::size_t entry = entry_of(first, row, j, n.name);
    const int def = first.def(entry);
    if (n.repetition == Repetition::optional && def < n.max_def) return nullptr;
    if (n.leaf >= 0) {
      if (def < n.max_def) return nullptr;
      return first.e.values[first.value_index[entry]];
    }
    if (n.repetition == Repetition::repeated) return list(node, node, row, false);
    if (n.list) {
      AT_CHECK(n.children.size() == 1, what_, ": LIST column '", n.name, "' has ",
               n.children.size(), " children (expected one repeated group)");
      return list(n.children.front(), node, row, true);
    }
    nlohmann::ordered_json object = nlohmann::ordered_json::object();
    for (const int child : n.children) {
      object[f_.meta.schema[std::size_t(child)].name] = value(child, row, j);
    }
    return object;
  }

 private:
  // The list whose repeated node is `repeated`: empty where the first entry does not reach it,
  // else one element per entry of the row. Three-level lists (a LIST's repeated group of one
  // child) hold that child; two-level ones the repeated node itself.
  nlohmann::ordered_json list(int repeated, int owner, std::size_t row, bool annotated) const {
    const SchemaNode& r = f_.meta.schema[std::size_t(repeated)];
    AT_CHECK(r.repetition == Repetition::repeated, what_, ": LIST column '",
             f_.meta.schema[std::size_t(owner)].name, "' has no repeated child");
    const Leaf& first = leaves_.at(first_leaf(repeated));
    nlohmann::ordered_json items = nlohmann::ordered_json::array();
    const std::size_t begin = first.row_start[row], end = first.row_start[row + 1];
    if (first.def(begin) < r.max_def) return items;
    const bool three_level = annotated && r.leaf < 0 && r.children.size() == 1;
    for (std::size_t k = 0; k < end - begin; ++k) {
      if (three_level) {
        items.push_back(value(r.children.front(), row, k));
      } else {
        items.push_back(element(repeated, row, k));
      }
    }
    return items;
  }

  // A two-level list's element: the repeated node's value at entry k, itself not repeated.
  nlohmann::ordered_json element(int node, std::size_t row, std::size_t k) const {
    const SchemaNode& n = f_.meta.schema[std::size_t(node)];
    if (n.leaf >= 0) {
      const Leaf& leaf = leaves_.at(n.leaf);
      const std::size_t entry = entry_of(leaf, row, k, n.name);
      if (leaf.def(entry) < n.max_def) return nullptr;
      return leaf.e.values[leaf.value_index[entry]];
    }
    nlohmann::ordered_json object = nlohmann::ordered_json::object();
    for (const int child : n.children) {
      object[f_.meta.schema[std::size_t(child)].name] = value(child, row, k);
    }
    return object;
  }

  // The k-th entry of `row` in `leaf`: columns under one list that disagree on its length are
  // an Error naming the column.
  std::size_t entry_of(const Leaf& leaf, std::size_t row, std::size_t k,
                       const std::string& name) const {
    AT_CHECK(leaf.row_start[row] + k < leaf.row_start[row + 1], what_, ": row group ", group_,
             ", row ", row, ": the columns under '", name, "' disagree on the length of a list");
    return leaf.row_start[row] + k;
  }

  int first_leaf(int node) const {
    while (f_.meta.schema[std::size_t(node)].leaf < 0) {
      const auto& children = f_.meta.schema[std::size_t(node)].children;
      AT_CHECK(!children.empty(), what_, ": Parquet group '",
               f_.meta.schema[std::size_t(node)].name, "' has no columns");
      node = children.front();
    }
    return f_.meta.schema[std::size_t(node)].leaf;
  }

  void load_leaf(int node) {
    const SchemaNode& n = f_.meta.schema[std::size_t(node)];
    const RowGroupMeta& group = f_.meta.row_groups[group_];
    const std::string what = cat(what_, ": row group ", group_, ", column ", n.name);
    Leaf leaf;
    leaf.e = read_column_chunk(f_.bytes, group.columns[std::size_t(n.leaf)], n, what);
    leaf.max_def = n.max_def;
    const std::size_t entries = leaf.e.entries;
    for (std::size_t i = 0; i < entries; ++i) {
      if (leaf.e.rep.empty() || leaf.e.rep[i] == 0) leaf.row_start.push_back(i);
    }
    AT_CHECK(entries == 0 || leaf.row_start.front() == 0, what,
             ": the first entry continues a row (repetition level above 0)");
    leaf.row_start.push_back(entries);
    AT_CHECK(leaf.row_start.size() - 1 == std::size_t(group.num_rows), what, ": ",
             leaf.row_start.size() - 1, " rows where the row group has ", group.num_rows);
    leaf.value_index.resize(entries);
    std::size_t defined = 0;
    for (std::size_t i = 0; i < entries; ++i) {
      leaf.value_index[i] = defined;
      defined += leaf.def(i) == n.max_def;
    }
    AT_CHECK(defined == leaf.e.values.size(), what, ": ", leaf.e.values.size(), " values for ",
             defined, " defined entries");
    leaves_.emplace(n.leaf, std::move(leaf));
  }

  const OpenFile& f_;
  std::size_t group_;
  const std::string& what_;
  std::map<int, Leaf> leaves_;
};

// The deepest repetition and whether a map is below `node`.
void check_supported(const FileMeta& meta, int node, const std::string& column,
                     const std::string& what) {
  const SchemaNode& n = meta.schema[std::size_t(node)];
  AT_CHECK(!n.map, what, ": column '", column,
           "' is a map; maps are not supported (strings, numbers, "
           "structs and lists of them are)");
  AT_CHECK(n.max_rep <= 1, what, ": column '", column,
           "' holds lists inside lists; not supported (one level of lists is)");
  for (const int child : n.children) check_supported(meta, child, column, what);
}

}  // namespace

void read_rows(const fs::path& path, const std::vector<std::string>& columns,
               const std::vector<bool>& optional, const std::vector<std::string>& hints,
               const std::function<void(std::vector<nlohmann::ordered_json>&&, std::size_t)>& row) {
  const OpenFile f = open(path);
  const std::string what = path.string();
  std::vector<int> nodes;
  std::vector<std::string> names;
  for (const int child : f.meta.schema[0].children)
    names.push_back(f.meta.schema[std::size_t(child)].name);
  for (std::size_t c = 0; c < columns.size(); ++c) {
    int found = -1;
    for (const int child : f.meta.schema[0].children) {
      if (f.meta.schema[std::size_t(child)].name == columns[c]) found = child;
    }
    AT_CHECK(found >= 0 || optional[c], what, " has no column '", columns[c], "'",
             escape_bytes(did_you_mean(columns[c], names)),
             "; its columns are: ", escape_bytes(join(names, ", ")), hints[c]);
    if (found >= 0) check_supported(f.meta, found, columns[c], what);
    nodes.push_back(found);
  }
  std::size_t number = 0;
  for (std::size_t g = 0; g < f.meta.row_groups.size(); ++g) {
    RowGroupAssembler assembler(f, g, what);
    for (const int node : nodes) {
      if (node >= 0) assembler.load(node);
    }
    const auto rows = std::size_t(f.meta.row_groups[g].num_rows);
    for (std::size_t r = 0; r < rows; ++r) {
      std::vector<nlohmann::ordered_json> values;
      for (const int node : nodes) {
        values.push_back(node >= 0 ? assembler.value(node, r, 0) : nlohmann::ordered_json(nullptr));
      }
      row(std::move(values), ++number);
    }
  }
}

}  // namespace autotrain::data::parquet
