// The emulated CUDA runtime: devices whose memory is tracked host memory, lazy streams and
// events, and the cudart functions that autotrain calls (cuda_runtime_api.h's declarations).
// AUTOTRAIN_CUDA_EMU_DEVICES says how many devices there are; unset, none in the ci preset's build
// (its binaries behave under ctest as on a machine without a GPU, and the GPU tests set it:
// tests/cuda_emu/CMakeLists.txt) and eight in the emulate preset's.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "emulator.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

// The opaque types behind cudaStream_t and cudaEvent_t.
struct CUstream_st {
  struct Op {
    std::function<void()> run;
    std::string what;
  };
  std::deque<Op> queue;         // not yet run, in issue order
  std::uint64_t issued = 0;     // ops ever queued
  std::uint64_t completed = 0;  // ops run
  bool blocking = false;        // synchronizes with the legacy stream
  bool destroyed = false;
  CUgraph_st* capture = nullptr;  // between cudaStreamBeginCapture and EndCapture: what it records
};

// A captured graph, and an instantiated one: the captured ops in order (one stream: the emulator
// models no fork or join through events during a capture). A launch queues copies of them; each
// op holds its kernel's arguments as they were when it was captured, as a CUDA graph does.
struct CUgraph_st {
  std::vector<CUstream_st::Op> ops;
};
struct CUgraphExec_st {
  std::vector<CUstream_st::Op> ops;
};

struct CUevent_st {
  CUstream_st* stream = nullptr;  // where it was last recorded (null: never)
  std::uint64_t position = 0;     // ops of that stream up to the record (its time stamp included)
  bool timing = true;             // false: created with cudaEventDisableTiming
  std::chrono::steady_clock::time_point stamp;  // when the stream reached the record
};

namespace cuda_emu {
namespace {

// What cudaMemGetInfo and cudaGetDeviceProperties report: 16 GiB, or
// AUTOTRAIN_CUDA_EMU_DEVICE_BYTES (a small device for the tests of auto_find_batch_size and of
// running out of device memory).
std::size_t device_bytes_from_environment() {
  const char* value = std::getenv("AUTOTRAIN_CUDA_EMU_DEVICE_BYTES");
  if (value == nullptr || *value == '\0') return std::size_t{16} << 30;
  char* end = nullptr;
  const unsigned long long bytes = std::strtoull(value, &end, 10);
  if (*end != '\0' || bytes == 0) {
    std::fprintf(stderr,
                 "cuda-emu: AUTOTRAIN_CUDA_EMU_DEVICE_BYTES = '%s': expected a positive "
                 "number of bytes\n",
                 value);
    std::abort();
  }
  return static_cast<std::size_t>(bytes);
}
const std::size_t kDeviceBytes = device_bytes_from_environment();
constexpr int kMaxDevices = 8;  // one node of eight at most; every process emulates its own

enum class Kind { device, pinned };
struct Allocation {
  std::size_t bytes;
  Kind kind;
};

// Freed device blocks of at least kReusedBlockBytes are kept, up to kKeptBytes in all, for the
// next cudaMalloc of the same rounded size. Every device model allocates 32 MiB cuBLAS and
// cuBLASLt workspaces; fresh from the system, their pages fault in one at a time as cudaMalloc
// fills them with all-ones bytes, which was most of a device model test's time (the fill itself
// is cheap). A reused block is filled again: it reads as fresh memory.
constexpr std::size_t kReusedBlockBytes = std::size_t{1} << 20;
constexpr std::size_t kKeptBytes = std::size_t{512} << 20;

struct State {
  CUstream_st legacy;
  std::vector<std::unique_ptr<CUstream_st>> streams;  // kept after destroy: waits may name them
  std::vector<std::unique_ptr<CUevent_st>> events;
  std::map<std::uintptr_t, Allocation> allocations;  // by start address
  std::multimap<std::size_t, void*> freed_blocks;    // by rounded size, for reuse
  std::size_t freed_bytes = 0;
  std::size_t device_bytes = 0;
  int device = 0;
};

State& state() {
  static State s;
  return s;
}

// A block of `rounded` bytes (a multiple of 256), 256-aligned: a kept one when there is one.
void* take_block(State& s, std::size_t rounded) {
  const auto kept = s.freed_blocks.find(rounded);
  if (kept == s.freed_blocks.end()) return std::aligned_alloc(256, rounded);
  void* p = kept->second;
  s.freed_blocks.erase(kept);
  s.freed_bytes -= rounded;
#if defined(__SANITIZE_ADDRESS__)
  __asan_unpoison_memory_region(p, rounded);
#endif
  return p;
}

// Gives back a block take_block returned; kept for reuse when large and there is room.
void give_block(State& s, void* p, std::size_t rounded) {
  if (rounded < kReusedBlockBytes || s.freed_bytes + rounded > kKeptBytes) {
    std::free(p);
    return;
  }
#if defined(__SANITIZE_ADDRESS__)
  // A kept block is freed memory: AddressSanitizer reports any use of it.
  __asan_poison_memory_region(p, rounded);
#endif
  s.freed_blocks.emplace(rounded, p);
  s.freed_bytes += rounded;
}

// CUDA_VISIBLE_DEVICES over `installed` devices, as the CUDA runtime reads it: the devices of
// the comma-separated ordinals up to the first that is not one of them (a UUID, a repeat, an id
// past the last); set but empty = none.
int visible_devices(int installed) {
  const char* value = std::getenv("CUDA_VISIBLE_DEVICES");
  if (value == nullptr) return installed;
  std::vector<bool> seen(static_cast<size_t>(installed), false);
  int visible = 0;
  const std::string text = value;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    char* end = nullptr;
    const long ordinal = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || ordinal < 0 || ordinal >= installed ||
        seen[static_cast<size_t>(ordinal)])
      break;
    seen[static_cast<size_t>(ordinal)] = true;
    ++visible;
    start = comma + 1;
  }
  return visible;
}

// AUTOTRAIN_CUDA_EMU_DEVICES: how many devices the node has; cudaGetDeviceCount reports those
// CUDA_VISIBLE_DEVICES leaves visible.
int device_count() {
  static const int count = [] {
    const char* value = std::getenv("AUTOTRAIN_CUDA_EMU_DEVICES");
    const std::string text =
        value == nullptr ? std::to_string(AUTOTRAIN_CUDA_EMU_DEFAULT_DEVICES) : value;
    if (text.size() != 1 || text[0] < '0' || text[0] > '0' + kMaxDevices)
      fail("AUTOTRAIN_CUDA_EMU_DEVICES = '" + text + "': expected a device count from 0 to " +
           std::to_string(kMaxDevices));
    return visible_devices(text[0] - '0');
  }();
  return count;
}

thread_local cudaError_t last_error = cudaSuccess;

cudaError_t record(cudaError_t error) {
  if (error != cudaSuccess) last_error = error;
  return error;
}

CUstream_st* resolve(cudaStream_t stream) {
  if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread)
    return &state().legacy;
  if (stream->destroyed) fail("use of a destroyed stream");
  return stream;
}

const Allocation* find(const void* p, std::size_t bytes, std::uintptr_t* start = nullptr) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  auto& allocations = state().allocations;
  auto it = allocations.upper_bound(address);
  if (it == allocations.begin()) return nullptr;
  --it;
  if (address + bytes > it->first + it->second.bytes) return nullptr;
  if (start != nullptr) *start = it->first;
  return &it->second;
}

void flush_until(CUstream_st* stream, std::uint64_t position) {
  while (stream->completed < position) {
    CUstream_st::Op op = std::move(stream->queue.front());
    stream->queue.pop_front();
    op.run();
    ++stream->completed;
  }
}

// Queues on `stream` a wait for everything queued on `other` so far.
void wait_for(CUstream_st* stream, CUstream_st* other) {
  if (other == stream || other->completed == other->issued) return;
  const std::uint64_t position = other->issued;
  stream->queue.push_back({[other, position] { flush_until(other, position); }, "stream wait"});
  ++stream->issued;
}

std::string describe(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}

void check_copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                const char* call) {
  if (bytes == 0) return;
  const bool dst_device = is_device(dst, bytes);
  const bool src_device = is_device(src, bytes);
  const auto expect = [&](bool dst_on_device, bool src_on_device, const char* kind_name) {
    if (dst_device != dst_on_device || src_device != src_on_device)
      fail(std::string(call) + " with " + kind_name + " of " + std::to_string(bytes) +
           " bytes: destination " + describe(dst) + (dst_device ? " is" : " is not") +
           " device memory, source " + describe(src) + (src_device ? " is" : " is not") +
           " device memory");
  };
  switch (kind) {
    case cudaMemcpyHostToDevice:
      expect(true, false, "cudaMemcpyHostToDevice");
      break;
    case cudaMemcpyDeviceToHost:
      expect(false, true, "cudaMemcpyDeviceToHost");
      break;
    case cudaMemcpyDeviceToDevice:
      expect(true, true, "cudaMemcpyDeviceToDevice");
      break;
    case cudaMemcpyHostToHost:
      expect(false, false, "cudaMemcpyHostToHost");
      break;
    default:
      break;  // cudaMemcpyDefault: any combination
  }
}

// Whether some stream is being captured.
bool any_capture() {
  for (const auto& stream : state().streams)
    if (stream->capture != nullptr) return true;
  return false;
}

}  // namespace

std::recursive_mutex& api_lock() {
  static std::recursive_mutex lock;
  return lock;
}

void fail(const std::string& message) {
  std::fprintf(stderr, "cuda-emu: %s\n", message.c_str());
  std::fflush(stderr);
  std::abort();
}

void enqueue(cudaStream_t stream, std::function<void()> op, std::string what) {
  std::lock_guard lock(api_lock());
  CUstream_st* target = resolve(stream);
  State& s = state();
  if (target->capture != nullptr) {  // recorded, not run: a graph launch queues it
    target->capture->ops.push_back({std::move(op), std::move(what)});
    return;
  }
  if (target == &s.legacy && any_capture())
    fail(what +
         " on the legacy stream while a stream is being captured (CUDA invalidates the "
         "capture: cudaErrorStreamCaptureImplicit)");
  // The legacy stream and blocking streams wait for each other (CUDA's implicit sync).
  if (target == &s.legacy) {
    for (auto& other : s.streams)
      if (other->blocking && !other->destroyed) wait_for(target, other.get());
  } else if (target->blocking) {
    wait_for(target, &s.legacy);
  }
  target->queue.push_back({std::move(op), std::move(what)});
  ++target->issued;
}

void flush(cudaStream_t stream) {
  std::lock_guard lock(api_lock());
  CUstream_st* target = resolve(stream);
  if (target->capture != nullptr)
    fail(
        "the host waits for a stream that is being captured (CUDA invalidates the capture: "
        "cudaErrorStreamCaptureUnsupported)");
  flush_until(target, target->issued);
}

void flush_all() {
  std::lock_guard lock(api_lock());
  State& s = state();
  if (any_capture())
    fail(
        "the host waits for every stream while one is being captured (CUDA invalidates the "
        "capture: cudaErrorStreamCaptureUnsupported)");
  bool pending = true;
  while (pending) {  // an op may queue more work (a wait), so repeat until all are empty
    pending = false;
    flush_until(&s.legacy, s.legacy.issued);
    for (auto& stream : s.streams) {
      if (stream->completed < stream->issued) pending = true;
      flush_until(stream.get(), stream->issued);
    }
  }
}

bool is_device(const void* p, std::size_t bytes) {
  std::lock_guard lock(api_lock());
  const Allocation* a = find(p, bytes);
  return a != nullptr && a->kind == Kind::device;
}

bool is_pinned(const void* p, std::size_t bytes) {
  std::lock_guard lock(api_lock());
  const Allocation* a = find(p, bytes);
  return a != nullptr && a->kind == Kind::pinned;
}

void require_device(const void* p, std::size_t bytes, const std::string& what) {
  if (!is_device(p, bytes))
    fail(what + ": " + describe(p) + " .. +" + std::to_string(bytes) +
         " bytes is not inside one device allocation (a host pointer, a freed buffer, or out of "
         "bounds)");
}

std::size_t element_size(cudaDataType_t type) {
  switch (type) {
    case CUDA_R_32F:
    case CUDA_R_32I:
      return 4;
    case CUDA_R_16F:
    case CUDA_R_16BF:
      return 2;
    case CUDA_R_64F:
      return 8;
    case CUDA_R_8I:
    case CUDA_R_8U:
      return 1;
    default:
      fail("unsupported data type " + std::to_string(static_cast<int>(type)));
  }
}

}  // namespace cuda_emu

using cuda_emu::fail;
using cuda_emu::record;
using cuda_emu::state;

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  *count = cuda_emu::device_count();
  // What the CUDA runtime says on a machine without a GPU.
  return *count == 0 ? record(cudaErrorNoDevice) : cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= cuda_emu::device_count()) return record(cudaErrorInvalidDevice);
  state().device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  *device = state().device;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device < 0 || device >= cuda_emu::device_count()) return record(cudaErrorInvalidDevice);
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof prop->name, "%s", "autotrain CUDA emulator");
  prop->totalGlobalMem = cuda_emu::kDeviceBytes;
  prop->major = 0;  // no real architecture: the trainer knows no peak FLOP/s, so no MFU
  prop->minor = 0;
  prop->multiProcessorCount = 1;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  prop->sharedMemPerBlock = 48 * 1024;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* version) {
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
  *version = cuda_emu::device_count() == 0 ? 0 : CUDART_VERSION;  // 0: no driver, no GPU
  return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
  const cudaError_t error = cuda_emu::last_error;
  cuda_emu::last_error = cudaSuccess;
  return error;
}

cudaError_t cudaPeekAtLastError(void) {
  return cuda_emu::last_error;
}

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice:
      return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
    case cudaErrorNoDevice:
      return "cudaErrorNoDevice";
    default:
      return "cudaError (emulator)";
  }
}

const char* cudaGetErrorString(cudaError_t error) {
  return cudaGetErrorName(error);
}

cudaError_t cudaMalloc(void** ptr, std::size_t bytes) {
  std::lock_guard lock(cuda_emu::api_lock());
  auto& s = state();
  if (s.device_bytes + bytes > cuda_emu::kDeviceBytes) return record(cudaErrorMemoryAllocation);
  const std::size_t rounded = std::max<std::size_t>((bytes + 255) / 256 * 256, 256);
  void* p = cuda_emu::take_block(s, rounded);
  if (p == nullptr) return record(cudaErrorMemoryAllocation);
  // Fresh device memory is garbage on a GPU: all-ones bytes read as NaN in float, bf16 and fp16,
  // so a kernel that reads memory nobody wrote shows it.
  std::memset(p, 0xff, rounded);
#if defined(__SANITIZE_ADDRESS__)
  // Under AddressSanitizer a read or write past `bytes`, even inside the rounding, is reported.
  __asan_poison_memory_region(static_cast<char*>(p) + bytes, rounded - bytes);
#endif
  s.allocations[reinterpret_cast<std::uintptr_t>(p)] = {bytes, cuda_emu::Kind::device};
  s.device_bytes += bytes;
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
  std::lock_guard lock(cuda_emu::api_lock());
  if (ptr == nullptr) return cudaSuccess;
  cuda_emu::flush_all();  // cudaFree synchronizes the device
  auto& s = state();
  auto it = s.allocations.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == s.allocations.end() || it->second.kind != cuda_emu::Kind::device)
    fail("cudaFree of " + cuda_emu::describe(ptr) + ", which cudaMalloc did not return");
  s.device_bytes -= it->second.bytes;
  const std::size_t rounded = std::max<std::size_t>((it->second.bytes + 255) / 256 * 256, 256);
#if defined(__SANITIZE_ADDRESS__)
  __asan_unpoison_memory_region(ptr, rounded);
#endif
  s.allocations.erase(it);
  cuda_emu::give_block(s, ptr, rounded);
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** ptr, std::size_t bytes) {
  std::lock_guard lock(cuda_emu::api_lock());
  void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  if (p == nullptr) return record(cudaErrorMemoryAllocation);
  state().allocations[reinterpret_cast<std::uintptr_t>(p)] = {bytes, cuda_emu::Kind::pinned};
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void* ptr) {
  std::lock_guard lock(cuda_emu::api_lock());
  if (ptr == nullptr) return cudaSuccess;
  cuda_emu::flush_all();
  auto& s = state();
  auto it = s.allocations.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == s.allocations.end() || it->second.kind != cuda_emu::Kind::pinned)
    fail("cudaFreeHost of " + cuda_emu::describe(ptr) + ", which cudaMallocHost did not return");
  s.allocations.erase(it);
  std::free(ptr);
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(std::size_t* free_bytes, std::size_t* total_bytes) {
  std::lock_guard lock(cuda_emu::api_lock());
  *total_bytes = cuda_emu::kDeviceBytes;
  *free_bytes = cuda_emu::kDeviceBytes - state().device_bytes;
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  std::lock_guard lock(cuda_emu::api_lock());
  cuda_emu::check_copy(dst, src, bytes, kind, "cudaMemcpy");
  // On the legacy stream, and the host waits for it: earlier legacy work runs first. Work on
  // non-blocking streams does not (a kernel's result needs that stream synchronized first).
  cuda_emu::enqueue(
      nullptr, [=] { std::memmove(dst, src, bytes); }, "cudaMemcpy");
  cuda_emu::flush(nullptr);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  std::lock_guard lock(cuda_emu::api_lock());
  cuda_emu::check_copy(dst, src, bytes, kind, "cudaMemcpyAsync");
  const bool src_pageable = !cuda_emu::is_device(src, bytes) && !cuda_emu::is_pinned(src, bytes);
  const bool dst_pageable = !cuda_emu::is_device(dst, bytes) && !cuda_emu::is_pinned(dst, bytes);
  if ((src_pageable || dst_pageable) && cuda_emu::resolve(stream)->capture != nullptr)
    cuda_emu::fail(
        "cudaMemcpyAsync of pageable host memory on a stream being captured (a graph "
        "copies only device or pinned memory)");
  if (dst_pageable) {
    // Into pageable memory the copy is synchronous: the stream's earlier work, then the copy.
    cuda_emu::enqueue(
        stream, [=] { std::memmove(dst, src, bytes); }, "cudaMemcpyAsync");
    cuda_emu::flush(stream);
  } else if (src_pageable) {
    // From pageable memory CUDA stages the source before returning: the caller may reuse it.
    auto staged = std::make_shared<std::vector<unsigned char>>(
        static_cast<const unsigned char*>(src), static_cast<const unsigned char*>(src) + bytes);
    cuda_emu::enqueue(
        stream, [=] { std::memcpy(dst, staged->data(), bytes); }, "cudaMemcpyAsync");
  } else {
    cuda_emu::enqueue(
        stream, [=] { std::memmove(dst, src, bytes); }, "cudaMemcpyAsync");
  }
  return cudaSuccess;
}

cudaError_t cudaMemset(void* dst, int value, std::size_t bytes) {
  std::lock_guard lock(cuda_emu::api_lock());
  cuda_emu::require_device(dst, bytes, "cudaMemset destination");
  cuda_emu::enqueue(
      nullptr, [=] { std::memset(dst, value, bytes); }, "cudaMemset");
  cuda_emu::flush(nullptr);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* dst, int value, std::size_t bytes, cudaStream_t stream) {
  std::lock_guard lock(cuda_emu::api_lock());
  cuda_emu::require_device(dst, bytes, "cudaMemsetAsync destination");
  cuda_emu::enqueue(
      stream, [=] { std::memset(dst, value, bytes); }, "cudaMemsetAsync");
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags) {
  std::lock_guard lock(cuda_emu::api_lock());
  auto created = std::make_unique<CUstream_st>();
  created->blocking = (flags & cudaStreamNonBlocking) == 0;
  *stream = created.get();
  state().streams.push_back(std::move(created));
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  std::lock_guard lock(cuda_emu::api_lock());
  CUstream_st* target = cuda_emu::resolve(stream);
  if (target == &state().legacy) return record(cudaErrorInvalidResourceHandle);
  if (target->capture != nullptr) cuda_emu::fail("cudaStreamDestroy of a stream being captured");
  // Work already queued still completes; the stream object stays for waits that name it.
  cuda_emu::flush_until(target, target->issued);
  target->destroyed = true;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  cuda_emu::flush(stream);
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
  cuda_emu::flush_all();
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned /*flags*/) {
  std::lock_guard lock(cuda_emu::api_lock());
  if (event == nullptr) return record(cudaErrorInvalidResourceHandle);
  if (cuda_emu::resolve(stream)->capture != nullptr)
    cuda_emu::fail(
        "cudaStreamWaitEvent on a stream being captured (the emulator models captures "
        "of one stream, without events)");
  if (event->stream == nullptr) return cudaSuccess;  // never recorded: nothing to wait for
  CUstream_st* other = event->stream;
  const std::uint64_t position = event->position;
  cuda_emu::enqueue(
      stream, [other, position] { cuda_emu::flush_until(other, position); }, "event wait");
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags) {
  std::lock_guard lock(cuda_emu::api_lock());
  auto created = std::make_unique<CUevent_st>();
  created->timing = (flags & cudaEventDisableTiming) == 0;
  *event = created.get();
  state().events.push_back(std::move(created));
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (event == nullptr) return record(cudaErrorInvalidResourceHandle);
  return cudaSuccess;  // kept: a queued wait captured its stream and position, not the event
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  std::lock_guard lock(cuda_emu::api_lock());
  if (event == nullptr) return record(cudaErrorInvalidResourceHandle);
  CUstream_st* target = cuda_emu::resolve(stream);
  if (target->capture != nullptr)
    cuda_emu::fail(
        "cudaEventRecord on a stream being captured (the emulator models captures of "
        "one stream, without events)");
  // The time stamp is taken when the stream runs up to here (emulator wall-clock time).
  cuda_emu::enqueue(
      stream, [event] { event->stamp = std::chrono::steady_clock::now(); }, "event record");
  event->stream = target;
  event->position = target->issued;
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  std::lock_guard lock(cuda_emu::api_lock());
  if (start == nullptr || end == nullptr || start->stream == nullptr || end->stream == nullptr ||
      !start->timing || !end->timing)
    return record(cudaErrorInvalidResourceHandle);  // as CUDA: unrecorded or without timing
  // CUDA reports cudaErrorNotReady for work not done yet; the emulator runs it instead.
  cuda_emu::flush_until(start->stream, start->position);
  cuda_emu::flush_until(end->stream, end->position);
  *ms = std::chrono::duration<float, std::milli>(end->stamp - start->stamp).count();
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  std::lock_guard lock(cuda_emu::api_lock());
  if (event == nullptr) return record(cudaErrorInvalidResourceHandle);
  if (event->stream != nullptr) cuda_emu::flush_until(event->stream, event->position);
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  std::lock_guard lock(cuda_emu::api_lock());
  if (event == nullptr) return record(cudaErrorInvalidResourceHandle);
  // A query runs the work up to the event and reports it done: code that polls until an event
  // completes must not spin for ever on a stream that runs only when asked.
  if (event->stream != nullptr) cuda_emu::flush_until(event->stream, event->position);
  return cudaSuccess;
}

// Stream capture: the ops queued on a capturing stream are recorded instead of run (enqueue);
// the host may not wait for it meanwhile (flush). A graph launch queues the recorded ops again.
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode /*mode*/) {
  std::lock_guard lock(cuda_emu::api_lock());
  CUstream_st* target = cuda_emu::resolve(stream);
  if (target == &state().legacy) return record(cudaErrorStreamCaptureUnsupported);
  if (target->capture != nullptr) return record(cudaErrorIllegalState);
  target->capture = new CUgraph_st;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  std::lock_guard lock(cuda_emu::api_lock());
  CUstream_st* target = cuda_emu::resolve(stream);
  if (target->capture == nullptr) return record(cudaErrorIllegalState);
  *graph = target->capture;
  target->capture = nullptr;
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus* status) {
  std::lock_guard lock(cuda_emu::api_lock());
  *status = cuda_emu::resolve(stream)->capture != nullptr ? cudaStreamCaptureStatusActive
                                                          : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph,
                                 unsigned long long /*flags*/) {
  std::lock_guard lock(cuda_emu::api_lock());
  if (graph == nullptr) return record(cudaErrorInvalidValue);
  *exec = new CUgraphExec_st{graph->ops};
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  std::lock_guard lock(cuda_emu::api_lock());
  if (exec == nullptr) return record(cudaErrorInvalidValue);
  for (const CUstream_st::Op& op : exec->ops) cuda_emu::enqueue(stream, op.run, op.what);
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  std::lock_guard lock(cuda_emu::api_lock());
  delete exec;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  std::lock_guard lock(cuda_emu::api_lock());
  delete graph;
  return cudaSuccess;
}

}  // extern "C"
