// Thrift's compact protocol (the specification's "compact" encoding): varints, zigzag integers,
// field headers whose high nibble is the id's delta, and list headers whose high nibble is a
// short count.
#include "thrift_compact.hpp"

#include <cstring>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::data::parquet {

void CompactReader::fail(std::string_view why) const {
  throw Error(cat(what_, ": malformed Parquet ", kind_, " at byte ", base_ + pos_, ": ", why));
}

std::uint8_t CompactReader::byte() {
  if (pos_ >= bytes_.size()) fail("it ends inside a value");
  return static_cast<std::uint8_t>(bytes_[pos_++]);
}

std::uint64_t CompactReader::varint() {
  std::uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    const std::uint8_t b = byte();
    value |= std::uint64_t(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return value;
  }
  fail("a varint longer than 10 bytes");
}

std::int64_t CompactReader::read_i64() {
  const std::uint64_t z = varint();
  return static_cast<std::int64_t>(z >> 1) ^ -static_cast<std::int64_t>(z & 1);
}

std::int32_t CompactReader::read_i32() {
  const std::int64_t v = read_i64();
  if (v < INT32_MIN || v > INT32_MAX) fail(cat("an i32 of ", v));
  return static_cast<std::int32_t>(v);
}

std::string CompactReader::read_binary() {
  const std::uint64_t n = varint();
  if (n > bytes_.size() - pos_)
    fail(cat("a string of ", n, " bytes where ", bytes_.size() - pos_, " are left"));
  std::string s(bytes_.substr(pos_, n));
  pos_ += n;
  return s;
}

int CompactReader::read_enum(int last, std::string_view what) {
  const std::int32_t value = read_i32();
  if (value < 0 || value > last) fail(cat(what, " ", value));
  return value;
}

bool CompactReader::read_bool(ThriftType type) {
  if (type == ThriftType::boolean_true) return true;
  if (type == ThriftType::boolean_false) return false;
  const std::uint8_t b = byte();  // an element of a list of booleans
  return b == 1;
}

void CompactReader::begin_struct() {
  if (depth_ >= 64) fail("structs nested more than 64 deep");
  saved_ids_[depth_++] = last_id_;
  last_id_ = 0;
}

void CompactReader::end_struct() {
  last_id_ = saved_ids_[--depth_];
}

bool CompactReader::next_field(std::int16_t& id, ThriftType& type) {
  const std::uint8_t header = byte();
  if (header == 0) return false;
  const int kind = header & 0x0f;
  if (kind > 12) fail(cat("field type ", kind));
  type = static_cast<ThriftType>(kind);
  const int delta = header >> 4;
  if (delta != 0) {
    id = static_cast<std::int16_t>(last_id_ + delta);
  } else {
    const std::int64_t v = read_i64();
    if (v < INT16_MIN || v > INT16_MAX) fail(cat("field id ", v));
    id = static_cast<std::int16_t>(v);
  }
  last_id_ = id;
  return true;
}

std::size_t CompactReader::begin_list(ThriftType& element) {
  const std::uint8_t header = byte();
  const int kind = header & 0x0f;
  if (kind > 12 || kind == 0) fail(cat("list element type ", kind));
  element = static_cast<ThriftType>(kind);
  std::uint64_t n = header >> 4;
  if (n == 15) n = varint();
  if (n > bytes_.size() - pos_)
    fail(cat("a list of ", n, " elements in ", bytes_.size() - pos_, " bytes"));
  return static_cast<std::size_t>(n);
}

void CompactReader::skip(ThriftType type, int depth) {
  if (depth > 64) fail("values nested more than 64 deep");
  switch (type) {
    case ThriftType::boolean_true:
    case ThriftType::boolean_false:
      return;
    case ThriftType::byte:
      byte();
      return;
    case ThriftType::i16:
    case ThriftType::i32:
    case ThriftType::i64:
      varint();
      return;
    case ThriftType::dbl:
      if (bytes_.size() - pos_ < 8) fail("it ends inside a double");
      pos_ += 8;
      return;
    case ThriftType::binary:
      read_binary();
      return;
    case ThriftType::list:
    case ThriftType::set: {
      ThriftType element{};
      const std::size_t n = begin_list(element);
      for (std::size_t i = 0; i < n; ++i) {
        // Booleans in a list are a byte each.
        if (element == ThriftType::boolean_true || element == ThriftType::boolean_false)
          byte();
        else
          skip(element, depth + 1);
      }
      return;
    }
    case ThriftType::map: {
      const std::uint64_t n = varint();
      if (n == 0) return;
      if (n > bytes_.size() - pos_) fail(cat("a map of ", n, " entries"));
      const std::uint8_t kinds = byte();
      const auto key = static_cast<ThriftType>(kinds >> 4),
                 value = static_cast<ThriftType>(kinds & 0x0f);
      if ((kinds >> 4) > 12 || (kinds & 0x0f) > 12) fail("map types");
      for (std::uint64_t i = 0; i < n; ++i) {
        skip(key, depth + 1);
        skip(value, depth + 1);
      }
      return;
    }
    case ThriftType::structure:
      read_struct([&](std::int16_t, ThriftType t) {
        skip(t, depth + 1);
        return true;
      });
      return;
    case ThriftType::stop:
      break;
  }
  fail("a value of type stop");
}

}  // namespace autotrain::data::parquet
