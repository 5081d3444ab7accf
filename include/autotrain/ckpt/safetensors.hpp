#pragma once
// Safetensors files (the Hugging Face export format): an 8-byte little-endian header length N,
// N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}
// padded with spaces to a multiple of 8, then the tensors' bytes back to back.
//
// The writer streams: the header is written first from the declared (name, dtype, shape) list,
// then the values arrive in declaration order, in chunks of any size (ZeRO-3 export gathers one
// unit at a time), converted from fp32 on the way out.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "autotrain/core/dtype.hpp"

namespace autotrain::ckpt {

struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::fp32;  // fp32, bf16 or fp16
  std::vector<uint64_t> shape;
  uint64_t begin = 0;  // byte offsets into the data section (filled by the writer/reader)
  uint64_t end = 0;
  uint64_t elements() const;
};

// "F32" | "BF16" | "F16" for the supported dtypes; throws Error otherwise.
std::string_view safetensors_dtype_name(DType dtype);

class SafetensorsWriter {
 public:
  // Writes the header now. `path` appears complete only after finish() (written as
  // <path>.tmp, fsynced and renamed).
  SafetensorsWriter(std::filesystem::path path, std::vector<SafetensorsEntry> entries,
                    const std::map<std::string, std::string>& metadata = {});
  ~SafetensorsWriter();  // without finish(): removes the temporary file
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  // The next values in declaration order (may span the end of one tensor and the start of
  // the next).
  void append(std::span<const float> values);
  // Checks every declared element arrived, then flushes, fsyncs and renames into place.
  void finish();

  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  uint64_t header_bytes() const { return header_bytes_; }  // the padded JSON, without the 8

 private:
  std::filesystem::path path_;
  std::filesystem::path tmp_;
  std::vector<SafetensorsEntry> entries_;
  std::FILE* file_ = nullptr;
  uint64_t header_bytes_ = 0;
  size_t current_ = 0;          // entry receiving values
  uint64_t written_ = 0;        // elements of entries_[current_] written so far
  std::vector<uint16_t> half_;  // conversion buffer, reused across appends
};

class SafetensorsFile {
 public:
  // Reads and checks the header (length, JSON, dtypes, offsets within the file, contiguous).
  explicit SafetensorsFile(std::filesystem::path path);
  ~SafetensorsFile();
  SafetensorsFile(SafetensorsFile&& other) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&&) = delete;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::filesystem::path& path() const { return path_; }

  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const SafetensorsEntry& entry(const std::string& name) const;
  // The tensor's values converted to fp32.
  std::vector<float> read(const std::string& name) const;
  // Elements [first, first + out.size()) of the tensor (row-major), converted to fp32, read
  // through a read-only memory map of the file: only the pages of that range are touched, and
  // they are dropped again after the copy, so reading a shard costs the shard, not the file.
  void read_range(const SafetensorsEntry& entry, uint64_t first, std::span<float> out) const;

 private:
  const unsigned char* mapped() const;  // maps the file on first use

  std::filesystem::path path_;
  uint64_t data_start_ = 0;
  uint64_t file_size_ = 0;
  mutable void* map_ = nullptr;
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace autotrain::ckpt
