#include "autotrain/train/tensorboard.hpp"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::train {
namespace {

namespace fs = std::filesystem;

// The reflected Castagnoli polynomial.
constexpr std::uint32_t kCastagnoli = 0x82f63b78u;

constexpr std::array<std::uint32_t, 256> crc_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1u) != 0 ? kCastagnoli ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
  return table;
}

// Protocol-buffer wire format, the few field kinds an Event needs.
void put_varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void put_tag(std::string& out, int field, int wire_type) {
  put_varint(out, static_cast<std::uint64_t>(field) << 3 | static_cast<std::uint64_t>(wire_type));
}

template <typename T>
void put_fixed(std::string& out, T value) {  // little-endian, as x86 and aarch64 store it
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

void put_bytes(std::string& out, int field, std::string_view bytes) {
  put_tag(out, field, 2);
  put_varint(out, bytes.size());
  out.append(bytes);
}

double wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Event { wall_time = 1 (double); step = 2 (int64); file_version = 3 | summary = 5 }.
std::string event_header(double time) {
  std::string event;
  put_tag(event, 1, 1);
  put_fixed(event, time);
  return event;
}

// Summary.Value { tag = 1 (string); simple_value = 2 (float) }.
void put_scalar(std::string& summary, std::string_view tag, double value) {
  if (!std::isfinite(value)) return;
  std::string scalar;
  put_bytes(scalar, 1, tag);
  put_tag(scalar, 2, 5);
  put_fixed(scalar, static_cast<float>(value));
  put_bytes(summary, 1, scalar);  // Summary { repeated Value value = 1 }
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

}  // namespace

std::uint32_t crc32c(const unsigned char* bytes, std::size_t count) {
  static constexpr std::array<std::uint32_t, 256> kTable = crc_table();
  std::uint32_t c = 0xffffffffu;
  for (std::size_t i = 0; i < count; ++i) c = kTable[(c ^ bytes[i]) & 0xffu] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

std::uint32_t masked_crc32c(const unsigned char* bytes, std::size_t count) {
  const std::uint32_t c = crc32c(bytes, count);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

TensorBoardLog::TensorBoardLog(const fs::path& dir) {
  std::error_code error;
  fs::create_directories(dir, error);
  AT_CHECK(!error, "log tensorboard: cannot create ", dir.string(), ": ", error.message());
  const double time = wall_time();
  const std::string name =
      cat("events.out.tfevents.", static_cast<long long>(time), ".", host_name(), ".", getpid());
  // A new file, never an earlier run's: a second log of this process in the same second counts on.
  for (int n = 0; file_ == nullptr; ++n) {
    path_ = dir / (n == 0 ? name : cat(name, ".", n));
    file_ = std::fopen(path_.c_str(), "wbx");
    AT_CHECK(file_ != nullptr || (errno == EEXIST && n < 1000), "log tensorboard: cannot create ",
             path_.string(), ": ", std::strerror(errno));
  }
  std::string event = event_header(time);
  put_bytes(event, 3, "brain.Event:2");
  write_record(event);
}

TensorBoardLog::~TensorBoardLog() {
  if (file_ != nullptr) std::fclose(file_);
}

void TensorBoardLog::write(const StepMetrics& metrics) {
  std::string summary;
  put_scalar(summary, "train/loss", metrics.loss);
  put_scalar(summary, "train/learning_rate", metrics.lr);
  if (metrics.step > 0) {
    put_scalar(summary, "train/grad_norm", metrics.grad_norm);
    put_scalar(summary, "train/tokens_per_s", metrics.tokens_per_s);
  }
  for (const auto& [name, value] : metrics.metrics) put_scalar(summary, "train/" + name, value);
  if (metrics.val_loss) put_scalar(summary, "eval/loss", *metrics.val_loss);
  for (const auto& [name, value] : metrics.val_metrics) put_scalar(summary, "eval/" + name, value);
  if (summary.empty()) return;
  std::string event = event_header(wall_time());
  put_tag(event, 2, 0);
  put_varint(event, static_cast<std::uint64_t>(metrics.step));
  put_bytes(event, 5, summary);
  write_record(event);
}

void TensorBoardLog::write_record(const std::string& event) {
  std::string record;
  put_fixed(record, static_cast<std::uint64_t>(event.size()));
  put_fixed(record, masked_crc32c(reinterpret_cast<const unsigned char*>(record.data()), 8));
  record += event;
  put_fixed(record,
            masked_crc32c(reinterpret_cast<const unsigned char*>(event.data()), event.size()));
  const bool written = std::fwrite(record.data(), 1, record.size(), file_) == record.size() &&
                       std::fflush(file_) == 0;
  AT_CHECK(written, "log tensorboard: writing ", path_.string(), " failed: ", std::strerror(errno));
}

}  // namespace autotrain::train
