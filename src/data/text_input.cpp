#include "autotrain/data/text_input.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/data/unicode.hpp"
#include "hf_split_files.hpp"
#include "parquet/parquet_records.hpp"

namespace autotrain::data {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kBom = "\xEF\xBB\xBF";
constexpr size_t kTxtPieceBytes = 4 << 20;  // .txt files arrive in pieces of about this size

std::optional<InputFormat> format_of(const fs::path& path) {
  const std::string extension = path.extension().string();
  if (extension == ".csv") return InputFormat::csv;
  if (extension == ".jsonl") return InputFormat::jsonl;
  if (extension == ".txt") return InputFormat::txt;
  if (extension == ".parquet") return InputFormat::parquet;
  return std::nullopt;
}

// The files of `dir` with `extension`, in name order (none when `dir` is not a folder).
std::vector<InputFile> files_in(const fs::path& dir, std::string_view extension) {
  std::vector<InputFile> files;
  if (!fs::is_directory(dir)) return files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == extension)
      files.push_back({entry.path(), *format_of(entry.path())});
  }
  std::sort(files.begin(), files.end(),
            [](const InputFile& a, const InputFile& b) { return a.path < b.path; });
  return files;
}

bool is_printable_ascii(char c) {
  return c > ' ' && c < 0x7F;
}

}  // namespace

std::optional<SplitInput> find_split(const fs::path& data_path, const std::string& split,
                                     bool is_train) {
  AT_CHECK(fs::exists(data_path), "data_path ", data_path.string(),
           " does not exist; expected a folder with ", split, ".csv, ", split, ".jsonl, ", split,
           ".txt or Parquet files, or a single .txt, .csv, .jsonl or .parquet file");
  if (fs::is_regular_file(data_path)) {
    const auto format = format_of(data_path);
    AT_CHECK(format.has_value(), "data_path ", data_path.string(),
             " is a file with an unknown extension; expected .txt, .csv, .jsonl or .parquet");
    if (!is_train) return std::nullopt;
    return SplitInput{split, {{data_path, *format}}};
  }
  std::vector<SplitInput> found;
  for (const auto format :
       {InputFormat::csv, InputFormat::jsonl, InputFormat::txt, InputFormat::parquet}) {
    const char* extension = format == InputFormat::csv       ? ".csv"
                            : format == InputFormat::jsonl   ? ".jsonl"
                            : format == InputFormat::parquet ? ".parquet"
                                                             : ".txt";
    const fs::path candidate = data_path / (split + extension);
    if (fs::is_regular_file(candidate)) found.push_back({split, {{candidate, format}}});
  }
  if (auto files = files_in(data_path / split, ".txt"); !files.empty()) {
    found.push_back({split, std::move(files)});
  }
  if (found.size() > 1) {
    std::vector<std::string> names;
    for (const auto& input : found) names.push_back(input.files.front().path.string());
    throw Error(cat("split '", split, "' is ambiguous in ", data_path.string(), ": found ",
                    join(names, " and "), "; keep one"));
  }
  if (found.size() == 1) return found.front();
  if (is_train) {
    auto files = files_in(data_path, ".txt");
    if (!files.empty()) return SplitInput{split, std::move(files)};
  }
  // The names the Hugging Face Hub's datasets give their splits' files.
  if (auto files = hf_split_files(data_path, split, is_train); !files.empty()) {
    return SplitInput{split, std::move(files)};
  }
  return std::nullopt;
}

SplitInput require_split(const fs::path& data_path, const std::string& split, bool is_train) {
  auto input = find_split(data_path, split, is_train);
  AT_CHECK(input.has_value(), "no data for split '", split, "' in ", data_path.string(),
           ": looked for ", split, ".csv, ", split, ".jsonl, ", split, ".txt, ", split,
           ".parquet, a folder ", split, "/ of .txt files",
           is_train ? " (and .txt files in the folder itself)" : "",
           ", and the Hugging Face Hub's split names (.csv, .jsonl or .parquet files in a folder "
           "or with a name that holds '",
           split, "' or a synonym: docs/data.md)");
  return *input;
}

// Whether the character that ends just before `end` is whitespace (UTF-8 decoded backwards).
bool whitespace_before(std::string_view text, size_t end) {
  size_t start = end - 1;
  while (start > 0 && end - start < 4 && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80)
    --start;
  return unicode::is_whitespace(unicode::decode_utf8(text, start).code_point);
}

bool is_safe_cut(std::string_view text, size_t cut) {
  if (cut < 2 || cut >= text.size() || text[cut - 1] != '\n') return false;
  if (is_printable_ascii(text[cut - 2]) && is_printable_ascii(text[cut])) return true;
  // A character cut off by the end of the buffer (it decodes as invalid) is no evidence.
  const unicode::Decoded next = unicode::decode_utf8(text, cut);
  if (next.code_point == 0xFFFD && next.length == 1) return false;
  return !whitespace_before(text, cut - 1) && !unicode::is_whitespace(next.code_point);
}

bool is_safe_space_cut(std::string_view text, size_t cut) {
  if (cut < 1 || cut + 1 >= text.size() || text[cut] != ' ') return false;
  if (is_printable_ascii(text[cut - 1]) && is_printable_ascii(text[cut + 1])) return true;
  const unicode::Decoded next = unicode::decode_utf8(text, cut + 1);
  if (next.code_point == 0xFFFD && next.length == 1) return false;
  return !whitespace_before(text, cut) && !unicode::is_whitespace(next.code_point);
}

size_t safe_cut_before(std::string_view text, size_t limit) {
  limit = std::min(limit, text.size());
  for (size_t cut = limit; cut >= 2; --cut) {
    if (is_safe_cut(text, cut)) return cut;
  }
  return 0;
}

CsvReader::CsvReader(fs::path path) : path_(std::move(path)), buffer_(1 << 20) {
  file_ = std::fopen(path_.c_str(), "rb");
  AT_CHECK(file_ != nullptr, "cannot open ", path_.string(), ": ", std::strerror(errno));
  // Strip a UTF-8 byte order mark (spreadsheet exports write one).
  if (peek() >= 0 && buffer_end_ - buffer_pos_ >= kBom.size() &&
      std::string_view(buffer_.data() + buffer_pos_, kBom.size()) == kBom)
    buffer_pos_ += kBom.size();
}

CsvReader::~CsvReader() {
  if (file_ != nullptr) std::fclose(file_);
}

int CsvReader::peek() {
  if (buffer_pos_ == buffer_end_) {
    buffer_pos_ = 0;
    buffer_end_ = std::fread(buffer_.data(), 1, buffer_.size(), file_);
    AT_CHECK(!std::ferror(file_), "cannot read ", path_.string(), ": ", std::strerror(errno));
    if (buffer_end_ == 0) return -1;
  }
  return static_cast<unsigned char>(buffer_[buffer_pos_]);
}

int CsvReader::get() {
  const int c = peek();
  if (c >= 0) ++buffer_pos_;
  if (c == '\n') ++line_;
  return c;
}

bool CsvReader::next_row(std::vector<std::string>& fields) {
  fields.clear();
  if (peek() < 0) return false;
  row_line_ = line_;
  std::string field;
  bool quoted = false;      // inside a quoted field
  bool was_quoted = false;  // the current field started with a quote
  for (;;) {
    const int c = get();
    if (quoted) {
      AT_CHECK(c >= 0, path_.string(), ":", row_line_,
               ": a quoted field is not closed before the end of the file");
      if (c == '"') {
        if (peek() == '"') {
          field.push_back('"');
          get();
        } else {
          quoted = false;
        }
      } else {
        field.push_back(static_cast<char>(c));
      }
      continue;
    }
    if (c == '"' && field.empty() && !was_quoted) {
      quoted = was_quoted = true;
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
      was_quoted = false;
    } else if (c == '\n' || c == '\r' || c < 0) {
      if (c == '\r' && peek() == '\n') get();
      fields.push_back(std::move(field));
      return true;
    } else {
      field.push_back(static_cast<char>(c));
    }
  }
}

namespace {

std::string column_hint(const Column& column) {
  std::string flag(column.parameter);
  std::replace(flag.begin(), flag.end(), '_', '-');
  return cat(" (set ", column.parameter, " / --", flag, ")");
}

// CSV rows as records: each column's cell as a JSON string, null for an optional column the
// header lacks.
void read_csv_records(const InputFile& file, const std::vector<Column>& columns,
                      const RecordSink& sink) {
  CsvReader reader(file.path);
  std::vector<std::string> header;
  AT_CHECK(reader.next_row(header), file.path.string(), " is empty; expected a header row with a '",
           columns.front().name, "' column");
  std::vector<std::optional<size_t>> indices;
  for (const Column& column : columns) {
    const auto found = std::find(header.begin(), header.end(), column.name);
    AT_CHECK(found != header.end() || !column.required, file.path.string(), " has no column '",
             column.name, "'", escape_bytes(did_you_mean(column.name, header)),
             "; its columns are: ", escape_bytes(join(header, ", ")), column_hint(column));
    indices.push_back(found == header.end() ? std::nullopt
                                            : std::optional(size_t(found - header.begin())));
  }
  std::vector<std::string> row;
  while (reader.next_row(row)) {
    if (row.size() == 1 && row[0].empty()) continue;  // blank line
    AT_CHECK(row.size() == header.size(), file.path.string(), ":", reader.row_line(), ": row has ",
             row.size(), " fields but the header has ", header.size(),
             " (quote fields that contain commas)");
    std::vector<nlohmann::ordered_json> values;
    for (const auto& index : indices)
      values.emplace_back(index ? nlohmann::ordered_json(std::move(row[*index])) : nullptr);
    sink(std::move(values), reader.row_line());
  }
}

nlohmann::ordered_json parse_jsonl_line(const std::string& line, const InputFile& file,
                                        size_t line_number) {
  nlohmann::ordered_json object;
  try {
    object = nlohmann::ordered_json::parse(line);
  } catch (const nlohmann::json::exception& error) {
    throw Error(cat(file.path.string(), ":", line_number, ": not valid JSON (", error.what(),
                    "); expected one JSON object per line"));
  }
  AT_CHECK(object.is_object(), file.path.string(), ":", line_number,
           ": expected a JSON object, got ", object.type_name());
  return object;
}

// JSONL lines as records: each column's JSON value (null for an optional column the line lacks).
void read_jsonl_records(const InputFile& file, const std::vector<Column>& columns,
                        const RecordSink& sink) {
  std::ifstream in(file.path, std::ios::binary);
  AT_CHECK(in, "cannot open ", file.path.string(), ": ", std::strerror(errno));
  std::string line;
  size_t line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line_number == 1 && line.starts_with(kBom)) line.erase(0, kBom.size());
    if (trim(line).empty()) continue;
    nlohmann::ordered_json object = parse_jsonl_line(line, file, line_number);
    std::vector<nlohmann::ordered_json> values;
    for (const Column& column : columns) {
      const auto value = object.find(column.name);
      if (value == object.end() && column.required) {
        std::vector<std::string> keys;
        for (const auto& item : object.items()) keys.push_back(item.key());
        throw Error(cat(file.path.string(), ":", line_number, ": no column '", column.name, "'",
                        escape_bytes(did_you_mean(column.name, keys)),
                        "; this line has: ", escape_bytes(join(keys, ", ")), column_hint(column)));
      }
      values.emplace_back(value == object.end() ? nullptr : std::move(*value));
    }
    sink(std::move(values), line_number);
  }
}

// Parquet rows as records: each column's value as JSON (null for an optional column the file
// lacks).
void read_parquet_records(const InputFile& file, const std::vector<Column>& columns,
                          const RecordSink& sink) {
  std::vector<std::string> names, hints;
  std::vector<bool> optional;
  for (const Column& column : columns) {
    names.push_back(column.name);
    optional.push_back(!column.required);
    hints.push_back(column_hint(column));
  }
  parquet::read_rows(file.path, names, optional, hints, sink);
}

// The records of a file whose values are JSON: JSONL or Parquet.
void read_json_records(const InputFile& file, const std::vector<Column>& columns,
                       const RecordSink& sink) {
  if (file.format == InputFormat::parquet) return read_parquet_records(file, columns, sink);
  read_jsonl_records(file, columns, sink);
}

// Calls cell(text, line) with the text_column of every row that has one.
void read_csv_cells(const InputFile& file, const std::string& text_column,
                    const std::function<void(std::string&&, size_t)>& cell) {
  read_csv_records(file, {{text_column}},
                   [&](std::vector<nlohmann::ordered_json>&& values, size_t line) {
                     auto& text = values.front().get_ref<std::string&>();
                     if (!text.empty()) cell(std::move(text), line);
                   });
}

// Calls value(json, line) with the text_column of every line whose value is not null.
void read_jsonl_values(const InputFile& file, const std::string& text_column,
                       const std::function<void(nlohmann::ordered_json&&, size_t)>& value_of_line) {
  read_json_records(file, {{text_column}},
                    [&](std::vector<nlohmann::ordered_json>&& values, size_t line) {
                      if (!values.front().is_null()) value_of_line(std::move(values.front()), line);
                    });
}

void read_csv(const InputFile& file, const std::string& text_column, const TextSink& sink) {
  read_csv_cells(file, text_column,
                 [&](std::string&& text, size_t) { sink(std::move(text), true); });
}

void read_jsonl(const InputFile& file, const std::string& text_column, const TextSink& sink) {
  read_jsonl_values(file, text_column, [&](nlohmann::ordered_json&& value, size_t line) {
    AT_CHECK(!value.is_array(), file.path.string(), ":", line, ": column '", text_column,
             "' holds a list (of messages?): set chat_template (tokenizer, chatml or zephyr) to "
             "render conversations, or give the text as a string");
    AT_CHECK(value.is_string(), file.path.string(), ":", line, ": column '", text_column, "' is a ",
             value.type_name(), ", expected a string");
    auto text = value.get<std::string>();
    if (!text.empty()) sink(std::move(text), true);
  });
}

// Checks that `messages` is a conversation: a non-empty list of objects, each with a string
// role and a string (or null) content.
void check_conversation(const nlohmann::ordered_json& messages, const std::string& where) {
  AT_CHECK(messages.is_array() && !messages.empty(), where,
           ": expected a list of messages [{\"role\": ..., \"content\": ...}, ...], got ",
           messages.is_array() ? "an empty list" : messages.type_name());
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto& message = messages[i];
    AT_CHECK(message.is_object(), where, ": message ", i + 1, " is a ", message.type_name(),
             ", expected an object with role and content");
    AT_CHECK(message.contains("role") && message["role"].is_string(), where, ": message ", i + 1,
             " has no string 'role'");
    AT_CHECK(!message.contains("content") || message["content"].is_string() ||
                 message["content"].is_null(),
             where, ": message ", i + 1, " has a 'content' that is a ",
             message["content"].type_name(), ", expected a string");
  }
}

// A conversation written as text (a CSV cell, or a JSONL string): JSON.
nlohmann::ordered_json parse_conversation(const std::string& text, const std::string& where) {
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    throw Error(cat(where,
                    ": with chat_template the column must hold a JSON list of messages "
                    "[{\"role\": \"user\", \"content\": ...}, ...]; this is not JSON (",
                    error.what(), ")"));
  }
}

// Delivers the file in pieces of about kTxtPieceBytes cut at safe positions, so a large file
// neither needs to fit in memory nor keeps one thread busy alone.
void read_txt(const InputFile& file, const TextSink& sink) {
  std::ifstream in(file.path, std::ios::binary);
  AT_CHECK(in, "cannot open ", file.path.string(), ": ", std::strerror(errno));
  std::string pending;
  std::vector<char> block(kTxtPieceBytes);
  bool first_piece = true;
  bool at_start = true;
  for (;;) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    const auto got = static_cast<size_t>(in.gcount());
    pending.append(block.data(), got);
    if (at_start && pending.size() >= kBom.size()) {
      if (std::string_view(pending).starts_with(kBom)) pending.erase(0, kBom.size());
      at_start = false;
    }
    if (got == 0) break;
    if (pending.size() < kTxtPieceBytes) continue;
    const size_t cut = safe_cut_before(pending, pending.size() - 1);
    if (cut == 0) continue;  // no safe cut yet: keep reading
    std::string rest = pending.substr(cut);
    pending.resize(cut);
    sink(std::move(pending), first_piece);
    first_piece = false;
    pending = std::move(rest);
  }
  AT_CHECK(!in.bad(), "cannot read ", file.path.string());
  if (at_start && std::string_view(pending).starts_with(kBom)) pending.erase(0, kBom.size());
  if (!pending.empty()) sink(std::move(pending), first_piece);
}

}  // namespace

void read_documents(const InputFile& file, const std::string& text_column, const TextSink& sink) {
  switch (file.format) {
    case InputFormat::csv:
      return read_csv(file, text_column, sink);
    case InputFormat::jsonl:
    case InputFormat::parquet:
      return read_jsonl(file, text_column, sink);
    case InputFormat::txt:
      return read_txt(file, sink);
  }
}

nlohmann::ordered_json conversation_of(nlohmann::ordered_json&& value, const std::string& where) {
  if (value.is_string()) value = parse_conversation(value.get<std::string>(), where);
  check_conversation(value, where);
  return std::move(value);
}

void read_records(const InputFile& file, const std::vector<Column>& columns,
                  const RecordSink& sink) {
  AT_CHECK(!columns.empty(), "read_records: no columns asked for");
  switch (file.format) {
    case InputFormat::csv:
      return read_csv_records(file, columns, sink);
    case InputFormat::jsonl:
    case InputFormat::parquet:
      return read_json_records(file, columns, sink);
    case InputFormat::txt:
      throw Error(cat(file.path.string(),
                      ": a .txt file holds plain text; expected .csv, .jsonl or "
                      ".parquet rows with the columns ",
                      columns.front().name, ", ..."));
  }
}

void read_conversations(const InputFile& file, const std::string& text_column,
                        const ConversationSink& sink) {
  const auto deliver = [&](nlohmann::ordered_json&& messages, size_t line) {
    const std::string where = cat(file.path.string(), ":", line);
    sink(conversation_of(std::move(messages), where), where);
  };
  switch (file.format) {
    case InputFormat::csv:
      return read_csv_cells(file, text_column, [&](std::string&& text, size_t line) {
        deliver(nlohmann::ordered_json(std::move(text)), line);
      });
    case InputFormat::jsonl:
    case InputFormat::parquet:
      return read_jsonl_values(file, text_column, deliver);
    case InputFormat::txt:
      throw Error(cat(file.path.string(),
                      ": a .txt file holds plain text; chat_template needs "
                      ".csv, .jsonl or .parquet rows whose '",
                      text_column, "' holds a list of messages"));
  }
}

}  // namespace autotrain::data
