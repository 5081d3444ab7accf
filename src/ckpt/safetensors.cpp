#include "autotrain/ckpt/safetensors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <utility>

#include "autotrain/core/error.hpp"
#include "autotrain/core/json_integer.hpp"

namespace autotrain::ckpt {
namespace fs = std::filesystem;

uint64_t SafetensorsEntry::elements() const {
  return std::accumulate(shape.begin(), shape.end(), uint64_t{1}, std::multiplies<>());
}

std::string_view safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::fp32:
      return "F32";
    case DType::bf16:
      return "BF16";
    case DType::fp16:
      return "F16";
    default:
      break;
  }
  throw Error(cat("safetensors export supports F32, BF16 and F16, not ", dtype_name(dtype)));
}

namespace {

DType parse_safetensors_dtype(const std::string& name, const std::string& where) {
  if (name == "F32") return DType::fp32;
  if (name == "BF16") return DType::bf16;
  if (name == "F16") return DType::fp16;
  throw Error(cat(where, ": unsupported dtype '", name, "' (this reader knows F32, BF16, F16)"));
}

const nlohmann::json& field(const nlohmann::json& tensor, const char* key,
                            const std::string& object) {
  const auto found = tensor.find(key);
  AT_CHECK(found != tensor.end(), object, ": has no '", key, "'");
  return *found;
}

// One tensor's header entry, every field checked against its type and the `data_bytes` the
// file holds after the header (a shape whose product overflows, a negative or fractional
// dimension, offsets out of order or past the end are refused, naming the tensor).
SafetensorsEntry parse_entry(const std::string& name, const nlohmann::json& tensor,
                             const std::string& object, uint64_t data_bytes) {
  AT_CHECK(tensor.is_object(), object, ": expected an object {dtype, shape, data_offsets}, got ",
           tensor.type_name());
  SafetensorsEntry entry;
  entry.name = name;
  const auto& dtype = field(tensor, "dtype", object);
  AT_CHECK(dtype.is_string(), object, ": dtype should be a string, got ", dtype.dump());
  entry.dtype = parse_safetensors_dtype(dtype.get<std::string>(), object);
  const auto& shape = field(tensor, "shape", object);
  AT_CHECK(shape.is_array(), object, ": shape should be an array, got ", shape.dump());
  uint64_t elements = 1;
  for (const auto& dimension : shape) {
    entry.shape.push_back(json_integer<uint64_t>(dimension, cat(object, ": a shape dimension")));
    AT_CHECK(!__builtin_mul_overflow(elements, entry.shape.back(), &elements), object, ": shape ",
             shape.dump(), " has more elements than 2^64");
  }
  const auto& offsets = field(tensor, "data_offsets", object);
  AT_CHECK(offsets.is_array() && offsets.size() == 2, object,
           ": data_offsets should be [begin, end], got ", offsets.dump());
  entry.begin = json_integer<uint64_t>(offsets[0], cat(object, ": data_offsets[0]"));
  entry.end = json_integer<uint64_t>(offsets[1], cat(object, ": data_offsets[1]"));
  AT_CHECK(entry.begin <= entry.end, object, ": data_offsets ", offsets.dump(),
           " end before they begin");
  AT_CHECK(entry.end <= data_bytes, object, ": data lies past the end of the file (data_offsets ",
           offsets.dump(), ", ", data_bytes, " bytes of data)");
  uint64_t bytes = 0;
  AT_CHECK(!__builtin_mul_overflow(elements, uint64_t{dtype_size(entry.dtype)}, &bytes) &&
               entry.end - entry.begin == bytes,
           object, ": data_offsets span ", entry.end - entry.begin, " bytes, shape ", shape.dump(),
           " of ", dtype.get<std::string>(), " needs ", elements, " elements");
  return entry;
}

}  // namespace

SafetensorsWriter::SafetensorsWriter(fs::path path, std::vector<SafetensorsEntry> entries,
                                     const std::map<std::string, std::string>& metadata)
    : path_(std::move(path)), tmp_(path_.string() + ".tmp"), entries_(std::move(entries)) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (auto& entry : entries_) {
    AT_CHECK(entry.name != "__metadata__" && !entry.name.empty(), path_.string(),
             ": invalid tensor name '", entry.name, "'");
    AT_CHECK(!header.contains(entry.name), path_.string(), ": tensor '", entry.name,
             "' declared twice");
    entry.begin = offset;
    entry.end = offset + entry.elements() * dtype_size(entry.dtype);
    offset = entry.end;
    header[entry.name] = {{"dtype", safetensors_dtype_name(entry.dtype)},
                          {"shape", entry.shape},
                          {"data_offsets", {entry.begin, entry.end}}};
  }
  std::string text = header.dump();
  // Padding to 8 bytes keeps the data section aligned for memory-mapped readers.
  text.append((8 - text.size() % 8) % 8, ' ');
  header_bytes_ = text.size();
  file_ = std::fopen(tmp_.c_str(), "wb");
  AT_CHECK(file_ != nullptr, tmp_.string(), ": cannot create: ", std::strerror(errno));
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(header_bytes_ >> (8 * i));
  AT_CHECK(std::fwrite(length, 1, 8, file_) == 8 &&
               std::fwrite(text.data(), 1, text.size(), file_) == text.size(),
           tmp_.string(), ": write failed: ", std::strerror(errno));
  while (current_ < entries_.size() && entries_[current_].elements() == 0) ++current_;
}

SafetensorsWriter::~SafetensorsWriter() {
  if (file_ != nullptr) {
    std::fclose(file_);
    std::error_code ignored;
    fs::remove(tmp_, ignored);
  }
}

void SafetensorsWriter::append(std::span<const float> values) {
  AT_CHECK(file_ != nullptr, path_.string(), ": append after finish");
  while (!values.empty()) {
    AT_CHECK(current_ < entries_.size(), path_.string(), ": ", values.size(),
             " more values than the declared tensors hold");
    const SafetensorsEntry& entry = entries_[current_];
    const size_t take =
        static_cast<size_t>(std::min<uint64_t>(values.size(), entry.elements() - written_));
    const std::span<const float> part = values.first(take);
    size_t ok = 0;
    if (entry.dtype == DType::fp32) {
      ok = std::fwrite(part.data(), sizeof(float), part.size(), file_);
    } else {
      half_.resize(part.size());
      for (size_t i = 0; i < part.size(); ++i) {
        half_[i] = entry.dtype == DType::bf16 ? float_to_bf16(part[i]) : float_to_fp16(part[i]);
      }
      ok = std::fwrite(half_.data(), sizeof(uint16_t), half_.size(), file_);
    }
    AT_CHECK(ok == part.size(), tmp_.string(), ": write of '", entry.name,
             "' failed: ", std::strerror(errno));
    written_ += take;
    values = values.subspan(take);
    while (current_ < entries_.size() && written_ == entries_[current_].elements()) {
      ++current_;
      written_ = 0;
    }
  }
}

void SafetensorsWriter::finish() {
  AT_CHECK(file_ != nullptr, path_.string(), ": finish called twice");
  AT_CHECK(current_ == entries_.size(), path_.string(), ": tensor '",
           current_ < entries_.size() ? entries_[current_].name : "", "' received ", written_,
           " of its ", current_ < entries_.size() ? entries_[current_].elements() : 0,
           " values before finish");
  const bool flushed = std::fflush(file_) == 0 && ::fsync(fileno(file_)) == 0;
  const int closed = std::fclose(file_);
  file_ = nullptr;
  AT_CHECK(flushed && closed == 0, tmp_.string(), ": flush failed: ", std::strerror(errno));
  std::error_code error;
  fs::rename(tmp_, path_, error);
  AT_CHECK(!error, "cannot rename ", tmp_.string(), " to ", path_.string(), ": ", error.message());
}

// The longest header a reader accepts (the safetensors library's own limit, 100 MB).
constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

SafetensorsFile::SafetensorsFile(fs::path path) : path_(std::move(path)) {
  const std::string where = path_.string();
  std::ifstream in(path_, std::ios::binary);
  AT_CHECK(in, where, ": cannot open");
  const uint64_t file_size = fs::file_size(path_);
  unsigned char length_bytes[8] = {};
  in.read(reinterpret_cast<char*>(length_bytes), 8);
  AT_CHECK(in.gcount() == 8, where, ": too short for a safetensors header");
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | length_bytes[i];
  // Checked before anything is allocated: a hostile file may declare gigabytes of header.
  AT_CHECK(length <= kSafetensorsMaxHeaderBytes, where, ": declares a header of ", length,
           " bytes, more than the ", kSafetensorsMaxHeaderBytes,
           " bytes a safetensors header may have (not a safetensors file, or a damaged one)");
  AT_CHECK(length <= file_size - 8, where, ": header length ", length, " exceeds the file size ",
           file_size);
  std::string text(length, '\0');
  in.read(text.data(), static_cast<std::streamsize>(length));
  AT_CHECK(in.gcount() == static_cast<std::streamsize>(length), where, ": header cut short");
  data_start_ = 8 + length;
  file_size_ = file_size;

  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    throw Error(cat(where, ": header is not valid JSON: ", error.what()));
  }
  AT_CHECK(header.is_object(), where, ": header is not a JSON object");
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      AT_CHECK(value.is_object(), where, ": __metadata__ should be an object of strings");
      for (const auto& [key, item] : value.items()) {
        AT_CHECK(item.is_string(), where, ": __metadata__ '", key, "' should be a string, got ",
                 item.dump());
        metadata_[key] = item.get<std::string>();
      }
      continue;
    }
    entries_.push_back(
        parse_entry(name, value, cat(where, ": tensor '", name, "'"), file_size - data_start_));
  }
  std::sort(entries_.begin(), entries_.end(),
            [](const auto& a, const auto& b) { return a.begin < b.begin; });
  uint64_t expected = 0;
  for (const auto& entry : entries_) {
    AT_CHECK(entry.begin == expected, where, ": tensor '", entry.name,
             "' does not start where the previous one ends (holes or overlaps)");
    expected = entry.end;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (map_ != nullptr) ::munmap(map_, file_size_);
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_start_(other.data_start_),
      file_size_(other.file_size_),
      map_(std::exchange(other.map_, nullptr)),
      entries_(std::move(other.entries_)),
      metadata_(std::move(other.metadata_)) {}

const unsigned char* SafetensorsFile::mapped() const {
  if (map_ == nullptr) {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    AT_CHECK(fd >= 0, path_.string(), ": cannot open: ", std::strerror(errno));
    // The size checked against the header must still be the size mapped (a shard replaced or
    // truncated since would fault on access instead of failing here).
    struct stat info = {};
    const bool same = ::fstat(fd, &info) == 0 && static_cast<uint64_t>(info.st_size) == file_size_;
    void* map = same ? ::mmap(nullptr, file_size_, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    const int error = errno;
    ::close(fd);
    AT_CHECK(same, path_.string(), ": the file changed size since its header was read");
    AT_CHECK(map != MAP_FAILED, path_.string(), ": cannot map: ", std::strerror(error));
    map_ = map;
  }
  return static_cast<const unsigned char*>(map_);
}

void SafetensorsFile::read_range(const SafetensorsEntry& entry, uint64_t first,
                                 std::span<float> out) const {
  AT_CHECK(first <= entry.elements() && out.size() <= entry.elements() - first, path_.string(),
           ": tensor '", entry.name, "': elements [", first, ", ", first + out.size(),
           ") outside its ", entry.elements());
  const size_t width = dtype_size(entry.dtype);
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  // In pieces of 4 MiB of values, each piece's pages dropped again after its copy: the copy is
  // what the rank keeps, so reading costs a piece, not the tensor.
  constexpr size_t kPiece = size_t{1} << 20;
  for (size_t done = 0; done < out.size(); done += kPiece) {
    const size_t count = std::min(kPiece, out.size() - done);
    const uint64_t begin = data_start_ + entry.begin + (first + done) * width;
    const unsigned char* bytes = mapped() + begin;
    float* into = out.data() + done;
    if (entry.dtype == DType::fp32) {
      std::memcpy(into, bytes, count * sizeof(float));
    } else {
      const bool bf16 = entry.dtype == DType::bf16;
      for (size_t i = 0; i < count; ++i) {
        uint16_t half;
        std::memcpy(&half, bytes + 2 * i, 2);
        into[i] = bf16 ? bf16_to_float(half) : fp16_to_float(half);
      }
    }
    const uint64_t lo = begin / page * page;
    ::madvise(static_cast<unsigned char*>(map_) + lo, begin + count * width - lo, MADV_DONTNEED);
  }
}

const SafetensorsEntry& SafetensorsFile::entry(const std::string& name) const {
  for (const auto& entry : entries_) {
    if (entry.name == name) return entry;
  }
  throw Error(cat(path_.string(), ": no tensor '", name, "'"));
}

std::vector<float> SafetensorsFile::read(const std::string& name) const {
  const SafetensorsEntry& found = entry(name);
  std::ifstream in(path_, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(data_start_ + found.begin));
  std::vector<float> values(found.elements());
  if (found.dtype == DType::fp32) {
    in.read(reinterpret_cast<char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(float)));
  } else {
    std::vector<uint16_t> half(values.size());
    in.read(reinterpret_cast<char*>(half.data()),
            static_cast<std::streamsize>(half.size() * sizeof(uint16_t)));
    for (size_t i = 0; i < half.size(); ++i) {
      values[i] = found.dtype == DType::bf16 ? bf16_to_float(half[i]) : fp16_to_float(half[i]);
    }
  }
  AT_CHECK(in.good(), path_.string(), ": tensor '", name, "' could not be read in full");
  return values;
}

}  // namespace autotrain::ckpt
