#pragma once
// Reading training text the way AutoTrain users have it (docs/data.md, "Input layouts"):
//   data_path/{split}.csv     a header row and a text column (default "text"), RFC 4180 quoting
//   data_path/{split}.jsonl   one JSON object per line with the text column
//   data_path/{split}.txt     the whole file is one document
//   data_path/{split}/*.txt   one document per file, in file name order
//   data_path/*.txt           (train split only, when none of the above exist) likewise
//   data_path/{split}.parquet Parquet rows, read as JSONL's
//   the Hugging Face Hub's names (data/train-00000-of-00002.parquet, train/0000.parquet,
//   x_train.jsonl, ...)       when none of the above is there: hf_split_files.hpp
//   data_path = one file      .txt, .csv, .jsonl or .parquet: the train split; there is no valid
//                             split file
// With chat_template, the text column of .csv and .jsonl rows holds conversations instead
// (read_conversations). Files are UTF-8; a byte order mark is stripped. Blank lines, empty CSV rows
// and documents whose text is empty are skipped.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace autotrain::data {

enum class InputFormat { csv, jsonl, txt, parquet };

struct InputFile {
  std::filesystem::path path;
  InputFormat format = InputFormat::txt;
};

struct SplitInput {
  std::string split;
  std::vector<InputFile> files;
};

// The files of `split` under `data_path`, or nothing when the split has no file. `is_train`
// enables the single-file and folder-of-.txt layouts. More than one candidate (train.csv and
// train.jsonl) is an Error naming both; a data_path that does not exist is an Error.
std::optional<SplitInput> find_split(const std::filesystem::path& data_path,
                                     const std::string& split, bool is_train);
// Like find_split, but a missing split is an Error naming the folder and what was looked for.
SplitInput require_split(const std::filesystem::path& data_path, const std::string& split,
                         bool is_train);

// Receives the text of the input in order. `starts_document` is false when the text continues
// the previous call's document (large .txt files arrive in pieces cut between lines).
using TextSink = std::function<void(std::string&& text, bool starts_document)>;

// Reads one file and passes its documents to `sink`. CSV and JSONL need `text_column`; a
// missing column is an Error naming the file and the columns it has. A JSONL value that is a
// list (a conversation) is an Error that points to chat_template.
void read_documents(const InputFile& file, const std::string& text_column, const TextSink& sink);

// Receives one conversation, a JSON list of {"role", "content", ...} objects, and where it is
// ("file:line").
// Ordered JSON: the template sees the keys in the order of the file (tools | tojson).
using ConversationSink =
    std::function<void(nlohmann::ordered_json&& messages, const std::string& where)>;

// Reads the conversations of a CSV or JSONL file (chat_template): text_column holds a list of
// messages, in JSONL as a list or as a string of JSON, in CSV as a cell of JSON. A .txt file, a
// value that is not such a list, or a message without a string role is an Error naming the file
// and line.
void read_conversations(const InputFile& file, const std::string& text_column,
                        const ConversationSink& sink);

// A conversation from a column's value by read_conversations' rules: a list of messages, or a
// string holding one as JSON (a CSV cell). An Error naming `where` ("file:line") otherwise.
nlohmann::ordered_json conversation_of(nlohmann::ordered_json&& value, const std::string& where);

// A column a reader needs, and the parameter that names it (for the hint in errors).
struct Column {
  std::string name;
  std::string_view parameter = "text_column";
  bool required = true;  // an optional column the file lacks reads as null
};
// Receives one row of a CSV, JSONL or Parquet file: the values of the columns asked for, in their
// order (CSV: strings; JSONL: the JSON values as written; Parquet: its values as JSON), and the
// line the row starts on (Parquet: the row's number, from 1).
using RecordSink = std::function<void(std::vector<nlohmann::ordered_json>&& values, size_t line)>;
// Reads the rows of a CSV or JSONL file (blank lines skipped). A required column missing from
// the header, or from a JSONL line, is an Error naming the file (and line), the column, the
// parameter that names it and the columns there are; a .txt file is an Error.
void read_records(const InputFile& file, const std::vector<Column>& columns,
                  const RecordSink& sink);

// A position where text may be cut without changing its tokenization (for the tokenizers whose
// cuts_at_newlines() says so): just after a newline that sits between two characters that are
// not whitespace, in any script ("X\nY" -> "X\n" | "Y"); the last such position in
// text[0, limit], 0 when there is none. is_safe_cut() tells whether `cut` is one.
size_t safe_cut_before(std::string_view text, size_t limit);
bool is_safe_cut(std::string_view text, size_t cut);
// A position where text may be cut for the tokenizers whose cuts_at_spaces() says so (one long
// line): just before a space that sits between two characters that are not whitespace
// ("X Y" -> "X" | " Y"), where their pre-tokenizer starts a piece anyway.
bool is_safe_space_cut(std::string_view text, size_t cut);

// Streams the rows of an RFC 4180 CSV file: fields separated by commas, rows by \n or \r\n;
// a field in double quotes may hold commas, newlines and doubled quotes ("" -> ").
class CsvReader {
 public:
  explicit CsvReader(std::filesystem::path path);
  ~CsvReader();
  CsvReader(const CsvReader&) = delete;
  CsvReader& operator=(const CsvReader&) = delete;
  // Reads the next row into `fields` (cleared first); false at the end of the file.
  bool next_row(std::vector<std::string>& fields);
  // Line (1-based) on which the last row returned started.
  size_t row_line() const { return row_line_; }

 private:
  int get();  // next byte or -1
  int peek();

  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
  std::vector<char> buffer_;
  size_t buffer_pos_ = 0;
  size_t buffer_end_ = 0;
  size_t line_ = 1;
  size_t row_line_ = 0;
};

}  // namespace autotrain::data
