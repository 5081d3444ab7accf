// Benchmark driver (not a test): the throughput of the NVMe offload's file I/O
// (src/zero/async_file.hpp, nvme_state.hpp) on the disk under --path. For each I/O engine, large
// aligned O_DIRECT transfers (--buffered: through the page cache), `depth` in flight: the writes
// that create a file ("fill"), the writes over it ("overwrite", what a step does) and the reads;
// then a whole NvmeState pass (read, visit, write back). io_uring and threads come from
// AsyncFile; libaio is this file's own IoQueue (built where libaio-dev is installed), so that the
// engines differ in nothing else.
//
//   bench_nvme --path DIR [--bytes 4G] [--block 16M] [--depth 4] [--runs 3]
//              [--engines io_uring,libaio,threads] [--buffered] [--visit-ms 0]
//
// GB/s are 10^9 bytes per second; "% in submit" is the share of an operation's time spent inside
// the submissions, where an engine that blocks overlaps nothing.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../../src/zero/async_file.hpp"
#include "../../src/zero/nvme_state.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/core/timer.hpp"

#ifdef AUTOTRAIN_BENCH_LIBAIO
#include <libaio.h>
#endif

namespace autotrain::zero {
namespace {

#ifdef AUTOTRAIN_BENCH_LIBAIO
// Linux native AIO through libaio: one iocb per slot, reaped one event at a time.
class LibaioQueue final : public IoQueue {
 public:
  LibaioQueue(int fd, std::size_t depth) : fd_(fd), iocbs_(depth) {
    const int status = io_setup(static_cast<int>(depth), &context_);
    AT_CHECK(status == 0, "io_setup: ", std::strerror(-status));
  }
  ~LibaioQueue() override { io_destroy(context_); }

  int submit(const Request& request) override {
    iocb* cb = &iocbs_[request.slot];
    if (request.write) {
      io_prep_pwrite(cb, fd_, request.data, request.bytes, static_cast<long long>(request.offset));
    } else {
      io_prep_pread(cb, fd_, request.data, request.bytes, static_cast<long long>(request.offset));
    }
    cb->data = reinterpret_cast<void*>(request.slot);
    int submitted = 0;
    do {
      submitted = io_submit(context_, 1, &cb);
    } while (submitted == -EINTR || submitted == -EAGAIN);
    return submitted == 1 ? 0 : submitted;
  }

  Completion wait_one() override {
    io_event event{};
    int got = 0;
    do {
      got = io_getevents(context_, 1, 1, &event, nullptr);
    } while (got == -EINTR);
    AT_CHECK(got == 1, "io_getevents: ", std::strerror(-got));
    return {reinterpret_cast<std::size_t>(event.data), static_cast<long>(event.res)};
  }

 private:
  int fd_;
  io_context_t context_{};
  std::vector<iocb> iocbs_;
};
#endif

struct Options {
  std::filesystem::path path;
  std::size_t bytes = std::size_t{4} << 30, block = std::size_t{16} << 20, depth = 4;
  int runs = 3;
  bool direct = true;   // --buffered: through the page cache
  double visit_ms = 0;  // the state pass's compute per block
  std::vector<std::string> engines = {"io_uring", "libaio", "threads"};
};

std::size_t parse_size(const std::string& text) {
  std::size_t end = 0;
  const double number = std::stod(text, &end);
  const std::string unit = text.substr(end);
  const double scale = unit.empty()  ? 1
                       : unit == "K" ? 1024.0
                       : unit == "M" ? 1048576.0
                       : unit == "G" ? 1073741824.0
                                     : throw Error("sizes end in K, M or G");
  return static_cast<std::size_t>(number * scale);
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const auto value = [&]() -> std::string {
      AT_CHECK(i + 1 < argc, flag, " needs a value");
      return argv[++i];
    };
    if (flag == "--path") {
      options.path = value();
    } else if (flag == "--bytes") {
      options.bytes = parse_size(value());
    } else if (flag == "--block") {
      options.block = parse_size(value());
    } else if (flag == "--depth") {
      options.depth = std::stoul(value());
    } else if (flag == "--runs") {
      options.runs = std::stoi(value());
    } else if (flag == "--engines") {
      options.engines = split(value(), ',');
    } else if (flag == "--visit-ms") {
      options.visit_ms = std::stod(value());
    } else if (flag == "--buffered") {
      options.direct = false;
    } else {
      throw Error(cat("unknown flag ", flag));
    }
  }
  AT_CHECK(!options.path.empty(),
           "usage: bench_nvme --path DIR [--bytes 4G] [--block 16M] [--depth 4] [--runs 3] "
           "[--engines io_uring,libaio,threads] [--buffered] [--visit-ms 0]");
  options.bytes = options.bytes / options.block * options.block;
  return options;
}

std::unique_ptr<AsyncFile> open_engine(const std::string& engine, int fd, std::size_t depth) {
  if (engine == "io_uring") return std::make_unique<AsyncFile>(fd, IoEngine::io_uring, depth);
  if (engine == "threads") return std::make_unique<AsyncFile>(fd, IoEngine::threads, depth);
#ifdef AUTOTRAIN_BENCH_LIBAIO
  if (engine == "libaio") {
    return std::make_unique<AsyncFile>(std::make_unique<LibaioQueue>(fd, depth), "libaio", depth);
  }
#endif
  throw Error(cat("engine ", engine, " is not built here (libaio needs libaio-dev)"));
}

// Seconds to move `bytes` of the file sequentially in blocks, `depth` in flight; adds the
// seconds the submissions took to `submitting` (an engine that blocks there overlaps nothing).
double stream(AsyncFile& file, bool write, std::byte* buffers, const Options& o,
              double& submitting) {
  const Timer timer;
  std::deque<AsyncFile::Ticket> pending;
  std::size_t next = 0;
  for (std::uint64_t offset = 0; offset < o.bytes || !pending.empty();) {
    if (offset < o.bytes && pending.size() < o.depth) {
      std::byte* buffer = buffers + (next++ % o.depth) * o.block;
      const Timer submit;
      pending.push_back(write ? file.write({buffer, o.block}, offset)
                              : file.read({buffer, o.block}, offset));
      submitting += submit.seconds();
      offset += o.block;
      continue;
    }
    const Transfer done = file.wait(pending.front());
    pending.pop_front();
    AT_CHECK(done.ok(), "transfer at ", done.offset, ": ", std::strerror(done.error));
  }
  return timer.seconds();
}

// GB/s of fill, overwrite and read with one engine.
std::map<std::string, double> measure_engine(const std::string& engine, std::byte* buffers,
                                             const Options& o) {
  const std::filesystem::path path = o.path / ("bench-nvme-" + engine + ".tmp");
  const int flags = O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | (o.direct ? O_DIRECT : 0);
  const int fd = ::open(path.c_str(), flags, 0600);
  AT_CHECK(fd >= 0, "cannot open ", path.string(), ": ", std::strerror(errno));
  std::map<std::string, double> rate;
  try {
    auto file = open_engine(engine, fd, o.depth);
    const auto gbs = [&](double seconds) { return static_cast<double>(o.bytes) / seconds / 1e9; };
    for (const char* op : {"fill", "overwrite", "read"}) {
      double submitting = 0;
      const double seconds = stream(*file, op[0] != 'r', buffers, o, submitting);
      if (op[0] != 'r') ::fdatasync(fd);
      rate[op] = gbs(seconds);
      rate[cat(op, ": % in submit")] = 100 * submitting / seconds;
    }
  } catch (...) {
    ::close(fd);
    std::filesystem::remove(path);
    throw;
  }
  ::close(fd);
  std::filesystem::remove(path);
  return rate;
}

// One NvmeState pass over three arrays of bytes / 12 floats: its GB/s (bytes read + written)
// with a visitor that does nothing; with --visit-ms, a second pass whose visitor computes that
// long per block, and the share of the shorter of I/O and compute it hid behind the other.
void measure_state(IoEngine engine, const Options& o, std::map<std::string, double>& rate) {
  const std::size_t elements = o.bytes / (3 * sizeof(float));
  NvmeState state(o.path, "bench-nvme-state.tmp", elements, 3, o.block / sizeof(float),
                  NvmeIo{engine, o.direct});
  const auto pass = [&](double visit_seconds) {
    const Timer timer;
    state.for_each_block([&](std::size_t, std::size_t count, std::span<float* const> data) {
      const Timer visit;
      for (float* array : data) array[count - 1] += 1.0f;
      while (visit.seconds() < visit_seconds) {
      }
    });
    return timer.seconds();
  };
  const double io = pass(0);
  rate["state pass"] = 2.0 * static_cast<double>(state.file_bytes()) / io / 1e9;
  if (o.visit_ms <= 0) return;
  const double compute = o.visit_ms / 1e3 * static_cast<double>(state.num_blocks());
  const double both = pass(o.visit_ms / 1e3);
  rate["state pass: % hidden"] = 100 * (io + compute - both) / std::min(io, compute);
}

void print_summary(const std::map<std::string, std::vector<double>>& rates) {
  std::printf("\n%-32s %8s %8s %8s   runs (GB/s; %% of the time)\n", "engine / op", "median", "min",
              "max");
  for (const auto& [name, values] : rates) {
    std::vector<double> sorted = values;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted.size() % 2 == 1
                              ? sorted[sorted.size() / 2]
                              : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
    std::printf("%-32s %8.2f %8.2f %8.2f  ", name.c_str(), median, sorted.front(), sorted.back());
    for (double v : values) std::printf(" %.2f", v);
    std::printf("\n");
  }
}

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  std::printf("# bench_nvme: %s, %s per engine and run, blocks of %s, %zu in flight, %s\n",
              o.path.c_str(), human_bytes(static_cast<double>(o.bytes)).c_str(),
              human_bytes(static_cast<double>(o.block)).c_str(), o.depth,
              o.direct ? "O_DIRECT" : "buffered");
  std::unique_ptr<std::byte, decltype(&std::free)> buffers(
      static_cast<std::byte*>(std::aligned_alloc(4096, o.depth * o.block)), &std::free);
  std::mt19937 random(7);  // not zeros: a virtual disk may store zeros for free
  for (std::size_t i = 0; i < o.depth * o.block; ++i) buffers.get()[i] = std::byte(random());
  std::map<std::string, std::vector<double>> rates;
  std::printf("%-4s %-10s %10s %10s %10s %12s %8s   %s\n", "run", "engine", "fill", "overwrite",
              "read", "state pass", "hidden", "% in submit: fill, overwrite, read");
  for (int r = 1; r <= o.runs; ++r) {
    for (const std::string& engine : o.engines) {
      auto rate = measure_engine(engine, buffers.get(), o);
      if (engine != "libaio") {
        measure_state(engine == "io_uring" ? IoEngine::io_uring : IoEngine::threads, o, rate);
      }
      std::printf("%-4d %-10s %10.2f %10.2f %10.2f", r, engine.c_str(), rate["fill"],
                  rate["overwrite"], rate["read"]);
      for (const char* column : {"state pass", "state pass: % hidden"}) {
        if (rate.count(column) != 0) {
          std::printf(column[10] == ':' ? " %7.0f%%" : " %12.2f", rate[column]);
        } else {
          std::printf(column[10] == ':' ? " %8s" : " %12s", "-");
        }
      }
      std::printf("   %.0f, %.0f, %.0f\n", rate["fill: % in submit"],
                  rate["overwrite: % in submit"], rate["read: % in submit"]);
      std::fflush(stdout);
      for (const auto& [op, value] : rate) rates[engine + " " + op].push_back(value);
    }
  }
  print_summary(rates);
  return 0;
}

}  // namespace
}  // namespace autotrain::zero

int main(int argc, char** argv) {
  try {
    return autotrain::zero::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_nvme: %s\n", e.what());
    return 1;
  }
}
