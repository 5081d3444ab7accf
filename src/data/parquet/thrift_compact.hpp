#pragma once
// Thrift's compact protocol, the encoding of Parquet's footer and page headers, read from an
// untrusted buffer: every read is bounds-checked, nesting is limited, and a malformed byte is an
// Error naming `what` (the file) and the offset, never a read past the end.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace autotrain::data::parquet {

enum class ThriftType : std::uint8_t {
  stop = 0,
  boolean_true = 1,
  boolean_false = 2,
  byte = 3,
  i16 = 4,
  i32 = 5,
  i64 = 6,
  dbl = 7,
  binary = 8,
  list = 9,
  set = 10,
  map = 11,
  structure = 12
};

class CompactReader {
 public:
  // `kind` names the structure in errors ("metadata", "page header"), `base` is the offset of
  // `bytes` in the file (errors give the file's offsets).
  CompactReader(std::string_view bytes, std::string what, std::string_view kind = "metadata",
                std::size_t base = 0)
      : bytes_(bytes), what_(std::move(what)), kind_(kind), base_(base) {}

  // Reads a struct: `field(id, type)` reads the value of each field it knows and returns true;
  // the fields it returns false for are skipped.
  template <typename Field>
  void read_struct(Field&& field) {
    begin_struct();
    std::int16_t id = 0;
    ThriftType type{};
    while (next_field(id, type)) {
      if (!field(id, type)) skip(type);
    }
    end_struct();
  }
  // An i32 that must lie in [0, last] (an enum of parquet.thrift); `what` names it in errors.
  int read_enum(int last, std::string_view what);

  // The next field of the current struct: false at its stop byte. `id` and `type` are set.
  bool next_field(std::int16_t& id, ThriftType& type);
  void begin_struct();  // entering a nested struct (its field ids restart)
  void end_struct();
  // A list or set header: the element type and a count no larger than the bytes left.
  std::size_t begin_list(ThriftType& element);

  bool read_bool(ThriftType type);  // a field's boolean lives in its type
  std::int32_t read_i32();
  std::int64_t read_i64();
  std::string read_binary();
  void skip(ThriftType type, int depth = 0);  // a value of a field or element this reader ignores

  std::size_t offset() const { return pos_; }
  [[noreturn]] void fail(std::string_view why) const;

 private:
  std::uint64_t varint();
  std::uint8_t byte();

  std::string_view bytes_;
  std::string what_;
  std::string_view kind_;
  std::size_t base_ = 0;
  std::size_t pos_ = 0;
  std::int16_t last_id_ = 0;
  std::int16_t saved_ids_[64] = {};
  int depth_ = 0;
};

}  // namespace autotrain::data::parquet
