// Timing and checking one collective of `bench comm` (see comm_collective.hpp).
//
// With --check every rank fills its input with small rank-dependent integers (exact in every
// dtype, and so are their sums over many ranks) and everything the collective must overwrite
// with kUnwritten, so a skipped write counts as wrong; the result is compared with a reference
// computed here, independently of the communicator.
#include "comm_collective.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "autotrain/core/error.hpp"
#include "autotrain/core/timer.hpp"

namespace autotrain::cli {
namespace {

constexpr double kUnwritten = 99;  // no check_value is 99; exact in bf16 and fp16

double check_value(int rank, std::size_t i) {
  const auto residue = (i * 7 + static_cast<std::size_t>(rank) * 3) % 11;  // < 11: fits any int
  return static_cast<double>(residue) - 3;
}

void store_value(std::byte* base, std::size_t i, DType dtype, double value) {
  std::byte* at = base + i * dtype_size(dtype);
  auto put = [at](auto typed) { std::memcpy(at, &typed, sizeof typed); };
  switch (dtype) {
    case DType::fp32:
      return put(static_cast<float>(value));
    case DType::bf16:
      return put(float_to_bf16(static_cast<float>(value)));
    case DType::fp16:
      return put(float_to_fp16(static_cast<float>(value)));
    case DType::int32:
      return put(static_cast<int32_t>(value));
    case DType::int64:
      return put(static_cast<int64_t>(value));
  }
}

double load_value(const std::byte* base, std::size_t i, DType dtype) {
  const std::byte* at = base + i * dtype_size(dtype);
  auto get = [at]<typename T>(T typed) {
    std::memcpy(&typed, at, sizeof typed);
    return typed;
  };
  switch (dtype) {
    case DType::fp32:
      return get(0.0f);
    case DType::bf16:
      return bf16_to_float(get(uint16_t{0}));
    case DType::fp16:
      return fp16_to_float(get(uint16_t{0}));
    case DType::int32:
      return get(int32_t{0});
    case DType::int64:
      return static_cast<double>(get(int64_t{0}));
  }
  return NAN;
}

double expected_reduction(ReduceOp op, int world_size, std::size_t i) {
  double sum = 0;
  double max = -1e300;
  for (int r = 0; r < world_size; ++r) {
    sum += check_value(r, i);
    max = std::max(max, check_value(r, i));
  }
  return op == ReduceOp::max ? max : op == ReduceOp::avg ? sum / world_size : sum;
}

bool close_enough(double got, double want, DType dtype) {
  const double relative = dtype == DType::bf16   ? 1.0 / 128
                          : dtype == DType::fp16 ? 1.0 / 1024
                                                 : 1e-6;
  return std::abs(got - want) <= std::abs(want) * relative + 1e-12;
}

}  // namespace

std::string_view collective_name(Collective op) {
  switch (op) {
    case Collective::allreduce:
      return "allreduce";
    case Collective::reduce_scatter:
      return "reduce_scatter";
    case Collective::allgather:
      return "allgather";
    case Collective::broadcast:
      return "broadcast";
  }
  return "?";
}

bool reduces(Collective op) {
  return op == Collective::allreduce || op == Collective::reduce_scatter;
}

bool has_placement(Collective op, Placement placement) {
  switch (op) {
    case Collective::allreduce:
    case Collective::broadcast:
      return placement == Placement::in_place;
    case Collective::reduce_scatter:
      return placement == Placement::out_of_place;
    case Collective::allgather:
      return true;
  }
  return false;
}

std::string_view missing_placement_note(Collective op) {
  switch (op) {
    case Collective::allreduce:
      return "out-of-place: - (the Communicator interface's allreduce is in place only)";
    case Collective::reduce_scatter:
      return "in-place: - (the Communicator interface's reduce_scatter takes separate buffers)";
    case Collective::broadcast:
      return "out-of-place: - (the Communicator interface's broadcast is in place only)";
    case Collective::allgather:
      return "";
  }
  return "";
}

double bus_factor(Collective op, int world_size) {
  const double n = world_size;
  switch (op) {
    case Collective::allreduce:
      return 2.0 * (n - 1) / n;
    case Collective::reduce_scatter:
    case Collective::allgather:
      return (n - 1) / n;
    case Collective::broadcast:
      return 1.0;
  }
  return 1.0;
}

BenchBuffer::BenchBuffer(std::size_t bytes, bool on_device) : host_(bytes) {
  if (!on_device) return;
#ifdef AUTOTRAIN_HAVE_CUDA
  device_.emplace(std::max<std::size_t>(bytes, 1));
#else
  throw Error("bench comm: device buffers need a build with CUDA");
#endif
}

void* BenchBuffer::data() {
#ifdef AUTOTRAIN_HAVE_CUDA
  if (device_) return device_->data();
#endif
  return host_.data();
}

void BenchBuffer::upload([[maybe_unused]] std::size_t bytes) {
#ifdef AUTOTRAIN_HAVE_CUDA
  if (device_) device_->copy_from_host(host_.data(), bytes);
#endif
}

void BenchBuffer::download([[maybe_unused]] std::size_t bytes) {
#ifdef AUTOTRAIN_HAVE_CUDA
  if (device_) device_->copy_to_host(host_.data(), bytes);
#endif
}

void BenchBuffer::zero(std::size_t bytes) {
  std::fill_n(host_.begin(), bytes, std::byte{0});
  upload(bytes);
}

CollectiveBench::CollectiveBench(Communicator& comm, Collective op,
                                 const CollectiveSettings& settings, std::size_t max_bytes,
                                 bool on_device)
    : comm_(comm),
      op_(op),
      settings_(settings),
      input_(max_bytes, on_device),
      output_(max_bytes, on_device) {}

SizeResult CollectiveBench::run(std::size_t bytes) {
  const bool parted = op_ == Collective::reduce_scatter || op_ == Collective::allgather;
  const auto n = static_cast<std::size_t>(comm_.size());
  std::size_t total = bytes / dtype_size(settings_.dtype);
  if (parted) total -= total % n;  // equal parts
  SizeResult result;
  result.bytes = total * dtype_size(settings_.dtype);
  result.count = parted ? total / n : total;
  if (total == 0) return result;
  for (Placement placement : kPlacements) {
    if (!has_placement(op_, placement)) continue;
    PlacementResult figures = time(placement, total, result.bytes);
    if (settings_.check) figures.wrong = count_wrong(placement, total);
    (placement == Placement::in_place ? result.in_place : result.out_of_place) = figures;
  }
  return result;
}

std::size_t CollectiveBench::part(std::size_t total_count) const {
  return total_count / static_cast<std::size_t>(comm_.size());
}

CollectiveBench::Span CollectiveBench::input_span(Placement placement, std::size_t total_count) {
  const std::size_t own = part(total_count) * static_cast<std::size_t>(comm_.rank());
  switch (op_) {
    case Collective::allgather:
      return placement == Placement::in_place ? Span{&output_, own, own, part(total_count)}
                                              : Span{&input_, 0, own, part(total_count)};
    case Collective::reduce_scatter:
      return {&input_, 0, 0, total_count};
    case Collective::allreduce:
    case Collective::broadcast:
      break;
  }
  return {&output_, 0, 0, total_count};  // in place in the output buffer
}

CollectiveBench::Span CollectiveBench::result_span(std::size_t total_count) {
  if (op_ != Collective::reduce_scatter) return {&output_, 0, 0, total_count};
  const std::size_t own = part(total_count) * static_cast<std::size_t>(comm_.rank());
  return {&output_, 0, own, part(total_count)};
}

void CollectiveBench::issue(Placement placement, std::size_t total_count) {
  const DType dtype = settings_.dtype;
  switch (op_) {
    case Collective::allreduce:
      return comm_.allreduce(output_.data(), total_count, dtype, settings_.redop);
    case Collective::reduce_scatter:
      return comm_.reduce_scatter(input_.data(), output_.data(), part(total_count), dtype,
                                  settings_.redop);
    case Collective::allgather: {
      auto* output = static_cast<std::byte*>(output_.data());
      const std::size_t own = part(total_count) * static_cast<std::size_t>(comm_.rank());
      const void* input =
          placement == Placement::in_place ? output + own * dtype_size(dtype) : input_.data();
      return comm_.allgather(input, output, part(total_count), dtype);
    }
    case Collective::broadcast:
      return comm_.broadcast(output_.data(), total_count, dtype, settings_.root);
  }
}

PlacementResult CollectiveBench::time(Placement placement, std::size_t total_count,
                                      std::size_t bytes) {
  // Timing on zeros: sums never overflow or turn denormal.
  input_.zero(bytes);
  output_.zero(bytes);
  for (int i = 0; i < settings_.warmup_iters; ++i) issue(placement, total_count);
  double seconds = 0;
  for (int round = 0; round < settings_.rounds; ++round) {
    AT_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    Timer timer;
    for (int i = 0; i < settings_.iters; ++i) issue(placement, total_count);
    double round_seconds = timer.seconds() / settings_.iters;
    // The slowest rank's time is the collective's time; the fastest round is the least
    // disturbed by other work on the machine.
    AT_MPI_CHECK(
        MPI_Allreduce(MPI_IN_PLACE, &round_seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    seconds = round == 0 ? round_seconds : std::min(seconds, round_seconds);
  }
  PlacementResult result;
  result.time_us = seconds * 1e6;
  result.algbw = seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0;
  result.busbw = result.algbw * bus_factor(op_, comm_.size());
  return result;
}

double CollectiveBench::input_value(std::size_t logical_index) const {
  const bool sends = op_ != Collective::broadcast || comm_.rank() == settings_.root;
  return sends ? check_value(comm_.rank(), logical_index) : kUnwritten;
}

double CollectiveBench::expected_value(std::size_t logical_index, std::size_t total_count) const {
  switch (op_) {
    case Collective::allreduce:
    case Collective::reduce_scatter:
      return expected_reduction(settings_.redop, comm_.size(), logical_index);
    case Collective::allgather: {
      const auto owner = logical_index / part(total_count);  // < world size: fits an int
      return check_value(static_cast<int>(owner), logical_index);
    }
    case Collective::broadcast:
      return check_value(settings_.root, logical_index);
  }
  return NAN;
}

void CollectiveBench::fill_inputs(Placement placement, std::size_t total_count) {
  const DType dtype = settings_.dtype;
  const std::size_t element = dtype_size(dtype);
  for (std::size_t i = 0; i < total_count; ++i) store_value(output_.host(), i, dtype, kUnwritten);
  const Span input = input_span(placement, total_count);
  for (std::size_t k = 0; k < input.count; ++k) {
    store_value(input.buffer->host(), input.offset + k, dtype, input_value(input.first + k));
  }
  output_.upload(total_count * element);
  if (input.buffer != &output_) input_.upload((input.offset + input.count) * element);
}

// The wrong elements of one checked call, summed over all ranks.
long long CollectiveBench::count_wrong(Placement placement, std::size_t total_count) {
  fill_inputs(placement, total_count);
  issue(placement, total_count);
  const DType dtype = settings_.dtype;
  const Span result = result_span(total_count);
  result.buffer->download((result.offset + result.count) * dtype_size(dtype));
  long long wrong = 0;
  for (std::size_t k = 0; k < result.count; ++k) {
    const double got = load_value(result.buffer->host(), result.offset + k, dtype);
    wrong += !close_enough(got, expected_value(result.first + k, total_count), dtype);
  }
  AT_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
  return wrong;
}

}  // namespace autotrain::cli
