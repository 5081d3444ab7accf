#include "autotrain/data/text_input.hpp"

#include <gtest/gtest.h>

#include "autotrain/core/error.hpp"
#include "autotrain/data/tokenizer.hpp"
#include "test_support.hpp"

namespace autotrain::data::text_input_test {
namespace {

using testing::error_of;
using testing::fixture;

std::vector<std::string> documents(const std::filesystem::path& data_path, const std::string& split,
                                   const std::string& column = "text") {
  std::vector<std::string> out;
  for (const auto& file : require_split(data_path, split, split == "train").files) {
    read_documents(file, column, [&](std::string&& text, bool starts_document) {
      if (starts_document || out.empty()) {
        out.push_back(std::move(text));
      } else {
        out.back() += text;
      }
    });
  }
  return out;
}

TEST(CsvInput, HandlesQuotingBomUtf8AndSkipsEmptyRows) {
  const auto docs = documents(fixture("data_fixtures/csv_quoting"), "train");
  const std::vector<std::string> expected = {"plain text", "a field, with a comma",
                                             "she said \"hi\"", "two\nlines",
                                             "caf\xc3\xa9 \xf0\x9f\x9a\x80"};
  EXPECT_EQ(docs, expected);
}

TEST(CsvInput, MissingColumnNamesTheFileAndItsColumns) {
  const std::string message =
      error_of([] { documents(fixture("data_fixtures/csv_quoting"), "train", "txt"); });
  EXPECT_NE(message.find("csv_quoting/train.csv has no column 'txt'"), std::string::npos)
      << message;
  EXPECT_NE(message.find("its columns are: id, text, label"), std::string::npos) << message;
}

TEST(CsvInput, BinaryHeaderIsQuotedWithEscapedBytes) {
  testing::TempDir dir;
  testing::write_file(dir / "train.csv", std::string("\x1b]0;pwned\x07\x00\xff,b\n1,2\n", 15));
  const std::string message = error_of([&] { documents(dir.path(), "train"); });
  EXPECT_NE(message.find("its columns are: \\x1B]0;pwned\\x07\\x00\\xFF, b"), std::string::npos)
      << message;
  for (const char c : message) EXPECT_TRUE(c == '\n' || static_cast<unsigned char>(c) >= 0x20);
}

TEST(CsvInput, UnclosedQuoteNamesTheLineWhereTheRowStarted) {
  testing::TempDir dir;
  testing::write_file(dir / "train.csv", "text\nok\n\"never closed\n");
  const std::string message = error_of([&] { documents(dir.path(), "train"); });
  EXPECT_NE(message.find("train.csv:3: a quoted field is not closed"), std::string::npos)
      << message;
}

TEST(CsvInput, RowWithTooManyFieldsIsAnError) {
  testing::TempDir dir;
  testing::write_file(dir / "train.csv", "text\nhello, world\n");
  EXPECT_NE(error_of([&] { documents(dir.path(), "train"); }).find("train.csv:2: row has 2 fields"),
            std::string::npos);
}

TEST(JsonlInput, ReadsOneObjectPerLineSkippingBlankLinesAndEmptyText) {
  const auto docs = documents(fixture("data_fixtures/jsonl"), "train");
  const std::vector<std::string> expected = {
      "first document", "second \"quoted\" document\nwith a newline", "caf\xc3\xa9"};
  EXPECT_EQ(docs, expected);
}

TEST(JsonlInput, MissingColumnNamesTheFileLineAndKeys) {
  const std::string message = error_of([] { documents(fixture("data_fixtures/jsonl"), "valid"); });
  EXPECT_NE(message.find("valid.jsonl:1: no column 'text'"), std::string::npos) << message;
  EXPECT_NE(message.find("this line has: content"), std::string::npos) << message;
}

TEST(JsonlInput, InvalidJsonNamesTheLine) {
  testing::TempDir dir;
  testing::write_file(dir / "train.jsonl", "{\"text\": \"a\"}\n{text: b}\n");
  EXPECT_NE(error_of([&] { documents(dir.path(), "train"); }).find("train.jsonl:2: not valid JSON"),
            std::string::npos);
}

TEST(TxtInput, FolderOfTxtFilesGivesOneDocumentPerFileInNameOrder) {
  const auto docs = documents(fixture("data_fixtures/txt_folder"), "train");
  EXPECT_EQ(docs, (std::vector<std::string>{"the first file\n", "the second file\n"}));
}

TEST(TxtInput, SingleFileIsTheTrainSplitAndHasNoValidSplit) {
  testing::TempDir dir;
  testing::write_file(dir / "corpus.txt", "\xEF\xBB\xBFhello\n");
  EXPECT_EQ(documents(dir / "corpus.txt", "train"), (std::vector<std::string>{"hello\n"}));
  EXPECT_FALSE(find_split(dir / "corpus.txt", "valid", false).has_value());
}

TEST(TxtInput, LargeFileArrivesInPiecesThatJoinBackExactly) {
  const auto path = testing::source_path("data/tinyshakespeare.txt");
  const std::string whole = testing::read_file(path);
  std::string joined;
  int pieces = 0;
  read_documents({path, InputFormat::txt}, "text", [&](std::string&& text, bool starts_document) {
    EXPECT_EQ(starts_document, pieces == 0);
    joined += text;
    ++pieces;
  });
  EXPECT_EQ(joined, whole);
  EXPECT_EQ(pieces, 1);  // 1.1 MB < one 4 MiB piece
}

TEST(TxtInput, CuttingAtSafePositionsKeepsTheGpt2Tokenization) {
  const auto tokenizer = make_tokenizer("gpt2", {testing::source_path("data/gpt2")});
  const std::string text = "First Citizen:\nBefore we  proceed\n\nany further,\nhear me speak.\n";
  const auto whole = tokenizer->encode(text);
  for (size_t limit = 0; limit < text.size(); ++limit) {
    const size_t cut = safe_cut_before(text, limit);
    if (cut == 0) continue;
    auto ids = tokenizer->encode(text.substr(0, cut));
    tokenizer->encode_append(text.substr(cut), ids, TextPosition::continuation);
    EXPECT_EQ(ids, whole) << "cut at " << cut;
  }
}

TEST(SplitLookup, MissingSplitNamesTheFolderAndWhatWasLookedFor) {
  const std::string message =
      error_of([] { require_split(fixture("data_fixtures/jsonl"), "test", false); });
  EXPECT_NE(message.find("no data for split 'test'"), std::string::npos) << message;
  EXPECT_NE(message.find("test.csv, test.jsonl, test.txt"), std::string::npos) << message;
}

TEST(SplitLookup, TwoFormatsForOneSplitAreAmbiguous) {
  testing::TempDir dir;
  testing::write_file(dir / "train.csv", "text\na\n");
  testing::write_file(dir / "train.jsonl", "{\"text\": \"a\"}\n");
  EXPECT_NE(error_of([&] { find_split(dir.path(), "train", true); }).find("ambiguous"),
            std::string::npos);
}

// The file names of a split, relative to `dir`.
std::vector<std::string> split_files(const std::filesystem::path& dir, const std::string& split,
                                     bool is_train) {
  std::vector<std::string> names;
  if (const auto input = find_split(dir, split, is_train)) {
    for (const auto& file : input->files) {
      names.push_back(file.path.lexically_relative(dir).generic_string());
    }
  }
  return names;
}

TEST(SplitLookup, FindsTheHubsSplitNamesAsTheDatasetsLibraryDoes) {
  using Names = std::vector<std::string>;
  {  // timdettmers/openassistant-guanaco: the split at the end of the name; eval is a test split
    testing::TempDir dir;
    for (const char* name : {"openassistant_best_replies_train.jsonl",
                             "openassistant_best_replies_eval.jsonl", "README.md"}) {
      testing::write_file(dir / name, "");
    }
    EXPECT_EQ(split_files(dir.path(), "train", true),
              Names{"openassistant_best_replies_train.jsonl"});
    EXPECT_EQ(split_files(dir.path(), "test", false),
              Names{"openassistant_best_replies_eval.jsonl"});
    EXPECT_EQ(split_files(dir.path(), "valid", false), Names{});
  }
  {  // push_to_hub's shards; valid is a synonym of validation; hidden folders are skipped
    testing::TempDir dir;
    std::filesystem::create_directories(dir / "data");
    std::filesystem::create_directories(dir / ".cache");
    for (const char* name :
         {"data/train-00001-of-00002.parquet", "data/train-00000-of-00002.parquet",
          "data/validation-00000-of-00001.parquet", ".cache/test.jsonl"}) {
      testing::write_file(dir / name, "");
    }
    EXPECT_EQ(split_files(dir.path(), "train", true),
              (Names{"data/train-00000-of-00002.parquet", "data/train-00001-of-00002.parquet"}));
    EXPECT_EQ(split_files(dir.path(), "valid", false),
              Names{"data/validation-00000-of-00001.parquet"});
    EXPECT_EQ(split_files(dir.path(), "test", false), Names{});
  }
  {  // a folder per split, below a config's folder
    testing::TempDir dir;
    std::filesystem::create_directories(dir / "default" / "train");
    std::filesystem::create_directories(dir / "default" / "dev");
    testing::write_file(dir / "default/train/0000.parquet", "");
    testing::write_file(dir / "default/dev/0000.csv", "");
    EXPECT_EQ(split_files(dir.path(), "train", true), Names{"default/train/0000.parquet"});
    EXPECT_EQ(split_files(dir.path(), "validation", false), Names{"default/dev/0000.csv"});
  }
  {  // no file names a split: all of them are the train split; "trainer" names none
    testing::TempDir dir;
    testing::write_file(dir / "trainer.jsonl", "");
    testing::write_file(dir / "more.csv", "");
    EXPECT_EQ(split_files(dir.path(), "train", true), (Names{"more.csv", "trainer.jsonl"}));
    EXPECT_EQ(split_files(dir.path(), "valid", false), Names{});
  }
}

}  // namespace
}  // namespace autotrain::data::text_input_test
