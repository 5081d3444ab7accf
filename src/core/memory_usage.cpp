#include "autotrain/core/memory_usage.hpp"

#include <sys/resource.h>

#include <fstream>
#include <new>
#include <sstream>
#include <string_view>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain {

namespace {

// A "Vm...:  123 kB" line of /proc/self/status in bytes; 0 when there is none.
std::size_t status_bytes(std::string_view key) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind(key, 0) == 0) {
      std::istringstream fields(line.substr(key.size()));
      std::size_t kib = 0;
      fields >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

}  // namespace

std::size_t address_space_bytes() {
  return status_bytes("VmSize:");
}

std::size_t peak_resident_bytes() {
  if (const std::size_t peak = status_bytes("VmHWM:"); peak > 0) return peak;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::size_t>(usage.ru_maxrss) * 1024;  // KiB on Linux
}

std::string out_of_memory_message(std::size_t peak_bytes) {
  return cat("out of memory: an allocation failed (std::bad_alloc) with this process's peak ",
             "resident memory at ", human_bytes(double(peak_bytes)),
             "; lower batch_size or block_size, use a higher zero_stage or more ranks, or raise ",
             "the memory limit (ulimit -v, the job's --mem); the log above says what ran");
}

std::string failure_message(const std::exception& error) {
  if (dynamic_cast<const std::bad_alloc*>(&error) != nullptr) {
    return out_of_memory_message(peak_resident_bytes());
  }
  return error.what();
}

}  // namespace autotrain
