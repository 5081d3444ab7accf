// The CUDA emulator's NCCL: the NCCL calls autotrain makes (src/comm/gpu/nccl_communicator.cpp),
// carried out on the host over MPI.
//
// A communicator is an MPI communicator split from MPI_COMM_WORLD (the program has initialised
// MPI already; NCCL's own socket bootstrap is not emulated, the unique id only has to agree).
// Creating one is a join: every rank gathers every rank's record (MPI_Iallgather over
// MPI_COMM_WORLD) and checks them all. In blocking mode the call waits for the join; in
// non-blocking mode (config->blocking = 0) it returns ncclInProgress and ncclCommGetAsyncError
// completes the join, reporting ncclInProgress until every rank has joined (a rank that never
// does leaves the others there, as NCCL's bootstrap would) and then the verdict.
// AUTOTRAIN_CUDA_EMU_NCCL_INIT_FAIL=<rank>[,<rank>...] makes those ranks' init fail at once
// with ncclSystemError, without joining.
// A collective checks its buffers, runs the work queued before it on its stream (flush), then
// exchanges the data with blocking MPI calls right at the call. Doing the MPI part at the call
// cannot deadlock, because every rank issues its NCCL calls in the same order; deferring it to
// the stream could, because the host may enter other MPI calls first and in a different order on
// each rank. Only the write of the result into recvbuff is queued on the stream, so a consumer
// that does not wait for the collective's stream reads stale data, as it could on a GPU.
//
// Invariant: reductions combine the ranks' contributions in rank order (0, 1, ..., n-1), in float
// for fp16/bf16 (rounded once at the end) and in the element type otherwise, so every rank gets
// bit-identical results and reduce-scatter followed by all-gather equals all-reduce.
//
// Misuse (a dead or finalised communicator, a host buffer, ranks issuing different collectives)
// stops the process through cuda_emu::fail; conditions the caller can handle (a communicator
// that does not span MPI_COMM_WORLD, an MPI failure) return an ncclResult_t and set the text
// ncclGetLastError returns.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "emulator.hpp"

namespace {

// A rank's part in creating a communicator: every rank of MPI_COMM_WORLD gathers every rank's
// join record (one MPI_Iallgather), then each checks them all and so reaches the same verdict.
struct Join {
  // A record: the NCCL rank asked for, whether the rank joined (a rank whose init fails on
  // purpose still takes part in the gather, so MPI_COMM_WORLD's collectives stay in step on
  // every rank, but says it did not join), then the unique id.
  static constexpr std::size_t kRecordBytes = 2 * sizeof(int) + NCCL_UNIQUE_ID_BYTES;
  std::vector<char> mine;
  std::vector<char> records;  // [world size][kRecordBytes]
  MPI_Request request = MPI_REQUEST_NULL;
};

}  // namespace

// NCCL declares struct ncclComm opaque; this is the emulator's definition of it.
struct ncclComm {
  MPI_Comm mpi = MPI_COMM_NULL;  // split from MPI_COMM_WORLD; rank here == NCCL rank
  int rank = 0;
  int nranks = 0;
  bool finalized = false;
  // ncclInProgress while the join is under way or a rank has not joined (a real NCCL waits in
  // its bootstrap for it); an error when the join or an MPI call under a collective failed.
  ncclResult_t async_error = ncclSuccess;
  std::unique_ptr<Join> join;  // the join in flight (non-blocking init)
};

namespace {

constexpr unsigned int kConfigMagic = 0xcafebeef;  // what NCCL_CONFIG_INITIALIZER writes

// What ncclGetLastError returns; guarded by the api lock.
std::string& last_error() {
  static std::string text;
  return text;
}

ncclResult_t report(ncclResult_t result, std::string message) {
  last_error() = std::move(message);
  return result;
}

// Communicators created and not yet destroyed: a call with any other handle is misuse.
std::set<const ncclComm*>& live_comms() {
  static std::set<const ncclComm*> comms;
  return comms;
}

ncclComm& require_live(ncclComm_t comm, const char* call) {
  if (comm == nullptr) cuda_emu::fail(std::string("cuda-emu: ") + call + ": comm is null");
  if (live_comms().count(comm) == 0) {
    cuda_emu::fail(std::string("cuda-emu: ") + call +
                   ": comm is not a live NCCL communicator (destroyed, aborted or never created)");
  }
  return *comm;
}

ncclComm& require_usable(ncclComm_t comm, const char* call) {
  ncclComm& live = require_live(comm, call);
  if (live.async_error == ncclInProgress) {
    cuda_emu::fail(std::string("cuda-emu: ") + call +
                   ": the communicator is still being created (ncclCommGetAsyncError reports "
                   "ncclInProgress); wait for ncclSuccess first");
  }
  if (live.finalized) {
    cuda_emu::fail(std::string("cuda-emu: ") + call +
                   ": the communicator was finalized (ncclCommFinalize); no collective may follow");
  }
  return live;
}

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

// MPI_COMM_WORLD returns errors (MpiSession sets MPI_ERRORS_RETURN) and split communicators
// inherit that; a failed exchange is reported like a failed NCCL peer.
ncclResult_t mpi_failure(ncclComm* comm, int code, const char* call, const char* mpi_call) {
  if (comm != nullptr) comm->async_error = ncclSystemError;
  return report(ncclSystemError, std::string("cuda-emu: ") + call + ": " + mpi_call +
                                     " failed: " + mpi_error_text(code));
}

const char* type_name(ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
      return "int8";
    case ncclUint8:
      return "uint8";
    case ncclInt32:
      return "int32";
    case ncclUint32:
      return "uint32";
    case ncclInt64:
      return "int64";
    case ncclUint64:
      return "uint64";
    case ncclFloat16:
      return "float16";
    case ncclFloat32:
      return "float32";
    case ncclFloat64:
      return "float64";
    case ncclBfloat16:
      return "bfloat16";
    case ncclFloat8e4m3:
      return "float8e4m3";
    case ncclFloat8e5m2:
      return "float8e5m2";
    default:
      return "unknown";
  }
}

const char* op_name(ncclRedOp_t op) {
  switch (op) {
    case ncclSum:
      return "sum";
    case ncclProd:
      return "prod";
    case ncclMax:
      return "max";
    case ncclMin:
      return "min";
    case ncclAvg:
      return "avg";
    default:
      return "custom";
  }
}

// Bytes of one element; fail()s for the types the emulator cannot reduce (fp8, custom).
std::size_t element_bytes(ncclDataType_t type, const char* call) {
  switch (type) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      cuda_emu::fail(std::string("cuda-emu: ") + call + ": data type " + type_name(type) + " (" +
                     std::to_string(static_cast<int>(type)) + ") is not emulated");
  }
}

void require_builtin_op(ncclRedOp_t op, const char* call) {
  if (op < ncclSum || op >= ncclNumOps) {
    cuda_emu::fail(std::string("cuda-emu: ") + call + ": reduction op " +
                   std::to_string(static_cast<int>(op)) +
                   " is not a built-in ncclRedOp_t (sum, prod, max, min, avg); custom ops are "
                   "not emulated");
  }
}

// MPI counts are int: the emulator runs tiny models, so a larger message is a mistake.
int mpi_bytes(std::size_t bytes, const char* call) {
  if (bytes > static_cast<std::size_t>(INT_MAX)) {
    cuda_emu::fail(std::string("cuda-emu: ") + call + ": " + std::to_string(bytes) +
                   " bytes per rank exceed the emulator's INT_MAX-byte MPI message limit");
  }
  return static_cast<int>(bytes);
}

void require_buffer(const void* buffer, std::size_t bytes, const char* call, const char* name) {
  if (bytes == 0) return;  // a zero-count collective touches no memory
  cuda_emu::require_device(buffer, bytes, std::string(call) + " " + name);
}

// --- Reduction -----------------------------------------------------------------------------

// How an element is combined: fp16/bf16 in float, the rest in their own type.
template <typename Element>
struct Arithmetic {
  using Value = Element;
  static Value load(Element element) { return element; }
  static Element store(Value value) { return value; }
};
template <>
struct Arithmetic<__half> {
  using Value = float;
  static Value load(__half element) { return __half2float(element); }
  static __half store(Value value) { return __float2half_rn(value); }
};
template <>
struct Arithmetic<__nv_bfloat16> {
  using Value = float;
  static Value load(__nv_bfloat16 element) { return __bfloat162float(element); }
  static __nv_bfloat16 store(Value value) { return __float2bfloat16_rn(value); }
};

// Integer sums and products wrap, as on the GPU (signed overflow would be undefined in C++).
template <typename Value>
Value combine(ncclRedOp_t op, Value total, Value next) {
  if constexpr (std::is_integral_v<Value>) {
    using Bits = std::make_unsigned_t<Value>;
    if (op == ncclSum || op == ncclAvg) {
      return static_cast<Value>(
          static_cast<Bits>(static_cast<Bits>(total) + static_cast<Bits>(next)));
    }
    if (op == ncclProd) {
      return static_cast<Value>(
          static_cast<Bits>(static_cast<Bits>(total) * static_cast<Bits>(next)));
    }
  } else {
    if (op == ncclSum || op == ncclAvg) return total + next;
    if (op == ncclProd) return total * next;
  }
  if (op == ncclMax) return next > total ? next : total;
  return next < total ? next : total;  // ncclMin
}

// contributions: [nranks][count] elements, rank r's at r * count. Writes count elements to out.
template <typename Element>
void reduce_in_rank_order(const std::byte* contributions, int nranks, std::size_t count,
                          ncclRedOp_t op, void* out) {
  using Math = Arithmetic<Element>;
  using Value = typename Math::Value;
  auto* destination = static_cast<std::byte*>(out);
  for (std::size_t i = 0; i < count; ++i) {
    Element element;
    std::memcpy(&element, contributions + i * sizeof(Element), sizeof(Element));
    Value total = Math::load(element);
    for (int r = 1; r < nranks; ++r) {
      const std::size_t at = (static_cast<std::size_t>(r) * count + i) * sizeof(Element);
      std::memcpy(&element, contributions + at, sizeof(Element));
      total = combine(op, total, Math::load(element));
    }
    if (op == ncclAvg) total = static_cast<Value>(total / static_cast<Value>(nranks));
    const Element result = Math::store(total);
    std::memcpy(destination + i * sizeof(Element), &result, sizeof(Element));
  }
}

void reduce(ncclDataType_t type, const std::byte* contributions, int nranks, std::size_t count,
            ncclRedOp_t op, void* out) {
  switch (type) {
    case ncclInt8:
      return reduce_in_rank_order<std::int8_t>(contributions, nranks, count, op, out);
    case ncclUint8:
      return reduce_in_rank_order<std::uint8_t>(contributions, nranks, count, op, out);
    case ncclInt32:
      return reduce_in_rank_order<std::int32_t>(contributions, nranks, count, op, out);
    case ncclUint32:
      return reduce_in_rank_order<std::uint32_t>(contributions, nranks, count, op, out);
    case ncclInt64:
      return reduce_in_rank_order<std::int64_t>(contributions, nranks, count, op, out);
    case ncclUint64:
      return reduce_in_rank_order<std::uint64_t>(contributions, nranks, count, op, out);
    case ncclFloat16:
      return reduce_in_rank_order<__half>(contributions, nranks, count, op, out);
    case ncclFloat32:
      return reduce_in_rank_order<float>(contributions, nranks, count, op, out);
    case ncclFloat64:
      return reduce_in_rank_order<double>(contributions, nranks, count, op, out);
    case ncclBfloat16:
      return reduce_in_rank_order<__nv_bfloat16>(contributions, nranks, count, op, out);
    default:
      cuda_emu::fail("reduce: data type " + std::string(type_name(type)) + " is not emulated");
  }
}

// --- Collective matching -------------------------------------------------------------------

enum class Collective : std::int64_t { all_reduce, reduce_scatter, all_gather, broadcast };

// What one rank called; every rank must call the same thing (NCCL would hang or corrupt data).
struct Signature {
  std::int64_t collective;
  std::int64_t count;
  std::int64_t type;
  std::int64_t op;    // -1 where the collective has none
  std::int64_t root;  // -1 where the collective has none
};

std::string describe(const Signature& call) {
  static const char* const names[] = {"ncclAllReduce", "ncclReduceScatter", "ncclAllGather",
                                      "ncclBroadcast"};
  std::string text = names[call.collective];
  text += "(count " + std::to_string(call.count) + ", " +
          type_name(static_cast<ncclDataType_t>(call.type));
  if (call.op >= 0) text += std::string(", ") + op_name(static_cast<ncclRedOp_t>(call.op));
  if (call.root >= 0) text += ", root " + std::to_string(call.root);
  return text + ")";
}

// Collective over comm: fail()s on every rank, with the same message, unless all ranks issued
// the same call.
ncclResult_t require_matching_calls(ncclComm& comm, const Signature& mine, const char* call) {
  std::vector<Signature> everyone(static_cast<std::size_t>(comm.nranks));
  const int code = MPI_Allgather(&mine, static_cast<int>(sizeof mine), MPI_BYTE, everyone.data(),
                                 static_cast<int>(sizeof mine), MPI_BYTE, comm.mpi);
  if (code != MPI_SUCCESS) return mpi_failure(&comm, code, call, "MPI_Allgather");
  for (std::size_t r = 1; r < everyone.size(); ++r) {
    if (std::memcmp(&everyone[r], &everyone[0], sizeof(Signature)) != 0) {
      cuda_emu::fail("NCCL ranks issued different collectives: rank 0 called " +
                     describe(everyone[0]) + ", rank " + std::to_string(r) + " called " +
                     describe(everyone[r]) +
                     "; every rank must issue the same NCCL collectives in the same order");
    }
  }
  return ncclSuccess;
}

// Queues the write of the exchanged data into recvbuff on the collective's stream.
void enqueue_result(cudaStream_t stream, std::function<void()> write, const char* call) {
  cuda_emu::enqueue(stream, std::move(write), std::string(call) + " result");
}

}  // namespace

// --- Version, ids, errors ------------------------------------------------------------------

ncclResult_t ncclGetVersion(int* version) {
  std::lock_guard lock(cuda_emu::api_lock());
  if (version == nullptr)
    return report(ncclInvalidArgument, "cuda-emu: ncclGetVersion: version is null");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  std::lock_guard lock(cuda_emu::api_lock());
  if (uniqueId == nullptr) {
    return report(ncclInvalidArgument, "cuda-emu: ncclGetUniqueId: uniqueId is null");
  }
  // Random, so that ncclCommInitRank can tell ranks that were handed different ids apart.
  std::random_device entropy;
  for (std::size_t at = 0; at < sizeof uniqueId->internal; at += sizeof(unsigned int)) {
    const unsigned int word = entropy();
    std::memcpy(uniqueId->internal + at, &word, sizeof word);
  }
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error";
    case ncclSystemError:
      return "unhandled system error";
    case ncclInternalError:
      return "internal error";
    case ncclInvalidArgument:
      return "invalid argument";
    case ncclInvalidUsage:
      return "invalid usage";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t /*comm: NCCL keeps one last error per process*/) {
  std::lock_guard lock(cuda_emu::api_lock());
  return last_error().c_str();
}

// --- Communicators -------------------------------------------------------------------------

namespace {

// Joins whose communicator went away (aborted or destroyed) or whose rank failed on purpose
// before the gather completed. The gather completes once every MPI rank has posted its record;
// these are tested by every later communicator call and waited for at MPI_Finalize, so no
// request outlives MPI.
std::vector<std::unique_ptr<Join>>& orphaned_joins() {
  static std::vector<std::unique_ptr<Join>> joins;
  return joins;
}

void complete_orphaned_joins() {
  std::erase_if(orphaned_joins(), [](std::unique_ptr<Join>& join) {
    int done = 0;
    return MPI_Test(&join->request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done != 0;
  });
}

// MPI_Finalize deletes MPI_COMM_SELF's attributes first: the last chance for orphaned joins.
// A rank that never posted its record (it died) would leave one forever, so wait a little only.
int complete_joins_at_finalize(MPI_Comm, int, void*, void*) {
  std::lock_guard lock(cuda_emu::api_lock());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  complete_orphaned_joins();
  while (!orphaned_joins().empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    complete_orphaned_joins();
  }
  return MPI_SUCCESS;
}

void orphan(std::unique_ptr<Join> join) {
  static const bool hooked = [] {
    int key = MPI_KEYVAL_INVALID;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, complete_joins_at_finalize, &key, nullptr);
    MPI_Comm_set_attr(MPI_COMM_SELF, key, nullptr);
    return true;
  }();
  (void)hooked;
  orphaned_joins().push_back(std::move(join));
  complete_orphaned_joins();
}

// AUTOTRAIN_CUDA_EMU_NCCL_INIT_FAIL=<rank>[,<rank>...] (a test switch): ncclCommInitRankConfig
// fails at once on those NCCL ranks, as on a rank whose device or network NCCL cannot use.
bool init_failure_injected(int rank) {
  const char* setting = std::getenv("AUTOTRAIN_CUDA_EMU_NCCL_INIT_FAIL");
  if (setting == nullptr) return false;
  bool named = false;
  std::string_view rest = setting;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    int value = -1;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (error != std::errc() || end != item.data() + item.size() || value < 0) {
      cuda_emu::fail(std::string("cuda-emu: AUTOTRAIN_CUDA_EMU_NCCL_INIT_FAIL = '") + setting +
                     "': expected NCCL ranks separated by commas, such as 1 or 0,3");
    }
    named = named || value == rank;
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return named;
}

// Posts this rank's join record (MPI_Iallgather over MPI_COMM_WORLD) into `join`.
ncclResult_t start_join(int rank, const ncclUniqueId& id, bool joined, int world_size,
                        std::unique_ptr<Join>& join) {
  join = std::make_unique<Join>();
  join->mine.resize(Join::kRecordBytes);
  const int header[2] = {rank, joined ? 1 : 0};
  std::memcpy(join->mine.data(), header, sizeof header);
  std::memcpy(join->mine.data() + sizeof header, id.internal, sizeof id.internal);
  join->records.resize(Join::kRecordBytes * static_cast<std::size_t>(world_size));
  constexpr int bytes = static_cast<int>(Join::kRecordBytes);
  const int code = MPI_Iallgather(join->mine.data(), bytes, MPI_BYTE, join->records.data(), bytes,
                                  MPI_BYTE, MPI_COMM_WORLD, &join->request);
  if (code != MPI_SUCCESS)
    return mpi_failure(nullptr, code, "ncclCommInitRankConfig", "MPI_Iallgather");
  return ncclSuccess;
}

// The verdict on a completed gather, the same on every rank: ncclInProgress while a rank has not
// joined (NCCL's bootstrap waits for it), an error for inconsistent joins, else ncclSuccess with
// the communicator's MPI communicator made.
ncclResult_t finish_join(ncclComm& comm) {
  constexpr const char* call = "ncclCommInitRankConfig";
  const std::vector<char>& records = comm.join->records;
  const int world_size = static_cast<int>(records.size() / Join::kRecordBytes);
  const auto record = [&](int w) { return records.data() + w * Join::kRecordBytes; };
  const auto header = [&](int w, int field) {
    int value = 0;
    std::memcpy(&value, record(w) + field * sizeof(int), sizeof value);
    return value;
  };
  constexpr std::size_t id_offset = 2 * sizeof(int);
  for (int w = 0; w < world_size; ++w) {
    if (header(w, 1) == 0) return ncclInProgress;
  }
  std::vector<int> world_rank_of(static_cast<std::size_t>(comm.nranks), -1);
  for (int w = 0; w < world_size; ++w) {
    if (std::memcmp(record(w) + id_offset, record(0) + id_offset, NCCL_UNIQUE_ID_BYTES) != 0) {
      return report(ncclInvalidUsage, "cuda-emu: ncclCommInitRankConfig: MPI rank " +
                                          std::to_string(w) +
                                          " passed a different ncclUniqueId than MPI rank 0; "
                                          "create the id on one rank and broadcast it");
    }
    const int joined_rank = header(w, 0);
    if (joined_rank < 0 || joined_rank >= comm.nranks) {
      return report(ncclInvalidArgument, "cuda-emu: ncclCommInitRankConfig: MPI rank " +
                                             std::to_string(w) + " asked for NCCL rank " +
                                             std::to_string(joined_rank) + " of " +
                                             std::to_string(comm.nranks));
    }
    int& first = world_rank_of[static_cast<std::size_t>(joined_rank)];
    if (first >= 0) {
      return report(ncclInvalidUsage, "cuda-emu: ncclCommInitRankConfig: MPI ranks " +
                                          std::to_string(first) + " and " + std::to_string(w) +
                                          " both asked for NCCL rank " +
                                          std::to_string(joined_rank));
    }
    first = w;
  }
  // Blocking, but every rank saw the same records and so reaches this split once it polls.
  // The split orders by key, and the keys are the NCCL ranks 0..nranks-1.
  const int code = MPI_Comm_split(MPI_COMM_WORLD, 0, comm.rank, &comm.mpi);
  if (code != MPI_SUCCESS) return mpi_failure(nullptr, code, call, "MPI_Comm_split");
  return ncclSuccess;
}

// Completes the join if its gather has: the communicator's state becomes the verdict.
void progress_join(ncclComm& comm) {
  int done = 0;
  const int code = MPI_Test(&comm.join->request, &done, MPI_STATUS_IGNORE);
  if (code != MPI_SUCCESS) {
    comm.join.reset();
    mpi_failure(&comm, code, "ncclCommGetAsyncError", "MPI_Test (the join)");
    return;
  }
  if (done == 0) return;
  comm.async_error = finish_join(comm);
  comm.join.reset();
}

}  // namespace

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config) {
  std::lock_guard lock(cuda_emu::api_lock());
  constexpr const char* call = "ncclCommInitRankConfig";
  if (comm == nullptr)
    return report(ncclInvalidArgument, "cuda-emu: ncclCommInitRankConfig: comm is null");
  *comm = nullptr;
  if (config != nullptr && config->magic != kConfigMagic) {
    return report(ncclInvalidArgument,
                  "cuda-emu: ncclCommInitRankConfig: config was not initialised with "
                  "NCCL_CONFIG_INITIALIZER");
  }
  // NCCL_CONFIG_INITIALIZER leaves blocking undefined, which NCCL takes as blocking.
  const bool blocking = config == nullptr || config->blocking != 0;
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized == 0 || finalized != 0) {
    return report(ncclInvalidUsage,
                  "cuda-emu: the emulated NCCL runs over MPI: initialise MPI before "
                  "ncclCommInitRankConfig and destroy communicators before MPI_Finalize");
  }
  complete_orphaned_joins();
  int world_size = 0;
  const int code = MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  if (code != MPI_SUCCESS) return mpi_failure(nullptr, code, call, "MPI_Comm_size");
  if (nranks != world_size) {
    return report(ncclInvalidUsage,
                  "cuda-emu: NCCL communicators must span MPI_COMM_WORLD (nranks = " +
                      std::to_string(nranks) + ", MPI_COMM_WORLD has " +
                      std::to_string(world_size) + " ranks)");
  }
  if (rank < 0 || rank >= nranks) {
    return report(ncclInvalidArgument, "cuda-emu: ncclCommInitRankConfig: rank " +
                                           std::to_string(rank) + " is outside [0, " +
                                           std::to_string(nranks) + ")");
  }

  // Collective over MPI_COMM_WORLD from here on, even for a rank told to fail.
  const bool injected = init_failure_injected(rank);
  std::unique_ptr<Join> join;
  if (const ncclResult_t started = start_join(rank, commId, !injected, world_size, join);
      started != ncclSuccess) {
    return started;
  }
  if (injected) {
    orphan(std::move(join));
    return report(ncclSystemError, "cuda-emu: ncclCommInitRankConfig failed on NCCL rank " +
                                       std::to_string(rank) +
                                       " (injected: AUTOTRAIN_CUDA_EMU_NCCL_INIT_FAIL = " +
                                       std::getenv("AUTOTRAIN_CUDA_EMU_NCCL_INIT_FAIL") + ")");
  }
  auto created = std::make_unique<ncclComm>();
  created->rank = rank;
  created->nranks = nranks;
  created->async_error = ncclInProgress;
  created->join = std::move(join);
  if (!blocking) {
    // Non-blocking: ncclCommGetAsyncError completes the join.
    live_comms().insert(created.get());
    *comm = created.release();
    return ncclInProgress;
  }
  const int waited = MPI_Wait(&created->join->request, MPI_STATUS_IGNORE);
  if (waited != MPI_SUCCESS) return mpi_failure(nullptr, waited, call, "MPI_Wait (the join)");
  const ncclResult_t verdict = finish_join(*created);
  if (verdict == ncclInProgress) {
    cuda_emu::fail(
        "cuda-emu: ncclCommInitRankConfig: a rank did not join (its init failed); a blocking "
        "NCCL would wait for it forever");
  }
  if (verdict != ncclSuccess) return verdict;
  created->join.reset();
  created->async_error = ncclSuccess;
  live_comms().insert(created.get());
  *comm = created.release();
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  std::lock_guard lock(cuda_emu::api_lock());
  complete_orphaned_joins();
  ncclComm& live = require_live(comm, "ncclCommGetAsyncError");
  if (asyncError == nullptr) cuda_emu::fail("ncclCommGetAsyncError: asyncError is null");
  if (live.join) progress_join(live);
  *asyncError = live.async_error;
  return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  std::lock_guard lock(cuda_emu::api_lock());
  // Nothing is outstanding: every collective exchanged its data at its call.
  require_live(comm, "ncclCommFinalize").finalized = true;
  return ncclSuccess;
}

namespace {

void release(ncclComm_t comm) {
  live_comms().erase(comm);
  std::unique_ptr<ncclComm> owned(comm);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized != 0) return;
  if (owned->join) orphan(std::move(owned->join));  // aborted while the gather was in flight
  if (owned->mpi != MPI_COMM_NULL) MPI_Comm_free(&owned->mpi);
}

}  // namespace

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  std::lock_guard lock(cuda_emu::api_lock());
  if (comm == nullptr) return ncclSuccess;
  require_live(comm, "ncclCommDestroy");
  release(comm);
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  // The collective watchdog aborts from its own thread while the main thread may sit in a
  // collective's MPI call holding the api lock; waiting for it would hang the job it is about to
  // tear down, so an abort that cannot take the lock leaves the communicator alone.
  std::unique_lock lock(cuda_emu::api_lock(), std::try_to_lock);
  if (!lock.owns_lock() || comm == nullptr) return ncclSuccess;
  require_live(comm, "ncclCommAbort");
  release(comm);
  return ncclSuccess;
}

// --- Collectives ---------------------------------------------------------------------------

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  std::lock_guard lock(cuda_emu::api_lock());
  constexpr const char* call = "ncclAllReduce";
  ncclComm& live = require_usable(comm, call);
  require_builtin_op(op, call);
  const std::size_t bytes = count * element_bytes(datatype, call);
  const int message = mpi_bytes(bytes, call);
  require_buffer(sendbuff, bytes, call, "sendbuff");
  require_buffer(recvbuff, bytes, call, "recvbuff");
  cuda_emu::flush(stream);
  const Signature mine{static_cast<std::int64_t>(Collective::all_reduce),
                       static_cast<std::int64_t>(count), datatype, op, -1};
  if (const ncclResult_t result = require_matching_calls(live, mine, call); result != ncclSuccess) {
    return result;
  }
  // contributions: [nranks][count], every rank's sendbuff; each rank reduces all of it itself.
  std::vector<std::byte> contributions(bytes * static_cast<std::size_t>(live.nranks));
  const int code =
      MPI_Allgather(sendbuff, message, MPI_BYTE, contributions.data(), message, MPI_BYTE, live.mpi);
  if (code != MPI_SUCCESS) return mpi_failure(&live, code, call, "MPI_Allgather");
  enqueue_result(
      stream,
      [contributions = std::move(contributions), nranks = live.nranks, count, datatype, op,
       recvbuff] { reduce(datatype, contributions.data(), nranks, count, op, recvbuff); },
      call);
  return ncclSuccess;
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  std::lock_guard lock(cuda_emu::api_lock());
  constexpr const char* call = "ncclReduceScatter";
  ncclComm& live = require_usable(comm, call);
  require_builtin_op(op, call);
  const std::size_t part_bytes = recvcount * element_bytes(datatype, call);
  const int message = mpi_bytes(part_bytes, call);
  require_buffer(sendbuff, part_bytes * static_cast<std::size_t>(live.nranks), call, "sendbuff");
  require_buffer(recvbuff, part_bytes, call, "recvbuff");
  cuda_emu::flush(stream);
  const Signature mine{static_cast<std::int64_t>(Collective::reduce_scatter),
                       static_cast<std::int64_t>(recvcount), datatype, op, -1};
  if (const ncclResult_t result = require_matching_calls(live, mine, call); result != ncclSuccess) {
    return result;
  }
  // contributions: [nranks][recvcount], part `rank` of every rank's sendbuff. The data leaves
  // sendbuff before anything is written, so in place (recvbuff = sendbuff + rank * recvcount)
  // needs no care.
  std::vector<std::byte> contributions(part_bytes * static_cast<std::size_t>(live.nranks));
  const int code =
      MPI_Alltoall(sendbuff, message, MPI_BYTE, contributions.data(), message, MPI_BYTE, live.mpi);
  if (code != MPI_SUCCESS) return mpi_failure(&live, code, call, "MPI_Alltoall");
  enqueue_result(
      stream,
      [contributions = std::move(contributions), nranks = live.nranks, recvcount, datatype, op,
       recvbuff] { reduce(datatype, contributions.data(), nranks, recvcount, op, recvbuff); },
      call);
  return ncclSuccess;
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  std::lock_guard lock(cuda_emu::api_lock());
  constexpr const char* call = "ncclAllGather";
  ncclComm& live = require_usable(comm, call);
  const std::size_t part_bytes = sendcount * element_bytes(datatype, call);
  const int message = mpi_bytes(part_bytes, call);
  require_buffer(sendbuff, part_bytes, call, "sendbuff");
  require_buffer(recvbuff, part_bytes * static_cast<std::size_t>(live.nranks), call, "recvbuff");
  cuda_emu::flush(stream);
  const Signature mine{static_cast<std::int64_t>(Collective::all_gather),
                       static_cast<std::int64_t>(sendcount), datatype, -1, -1};
  if (const ncclResult_t result = require_matching_calls(live, mine, call); result != ncclSuccess) {
    return result;
  }
  // gathered: [nranks][sendcount]; a separate buffer, so in place (sendbuff = recvbuff + rank *
  // sendcount) works.
  std::vector<std::byte> gathered(part_bytes * static_cast<std::size_t>(live.nranks));
  const int code =
      MPI_Allgather(sendbuff, message, MPI_BYTE, gathered.data(), message, MPI_BYTE, live.mpi);
  if (code != MPI_SUCCESS) return mpi_failure(&live, code, call, "MPI_Allgather");
  enqueue_result(
      stream,
      [gathered = std::move(gathered), recvbuff] {
        if (!gathered.empty()) std::memcpy(recvbuff, gathered.data(), gathered.size());
      },
      call);
  return ncclSuccess;
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  std::lock_guard lock(cuda_emu::api_lock());
  constexpr const char* call = "ncclBroadcast";
  ncclComm& live = require_usable(comm, call);
  if (root < 0 || root >= live.nranks) {
    cuda_emu::fail("ncclBroadcast: root " + std::to_string(root) + " is not a rank of a " +
                   std::to_string(live.nranks) + "-rank communicator");
  }
  const std::size_t bytes = count * element_bytes(datatype, call);
  const int message = mpi_bytes(bytes, call);
  // sendbuff is read on the root only, as in NCCL.
  if (live.rank == root) require_buffer(sendbuff, bytes, call, "sendbuff");
  require_buffer(recvbuff, bytes, call, "recvbuff");
  cuda_emu::flush(stream);
  const Signature mine{static_cast<std::int64_t>(Collective::broadcast),
                       static_cast<std::int64_t>(count), datatype, -1, root};
  if (const ncclResult_t result = require_matching_calls(live, mine, call); result != ncclSuccess) {
    return result;
  }
  std::vector<std::byte> payload(bytes);
  if (live.rank == root && bytes > 0) std::memcpy(payload.data(), sendbuff, bytes);
  const int code = MPI_Bcast(payload.data(), message, MPI_BYTE, root, live.mpi);
  if (code != MPI_SUCCESS) return mpi_failure(&live, code, call, "MPI_Bcast");
  enqueue_result(
      stream,
      [payload = std::move(payload), recvbuff] {
        if (!payload.empty()) std::memcpy(recvbuff, payload.data(), payload.size());
      },
      call);
  return ncclSuccess;
}
