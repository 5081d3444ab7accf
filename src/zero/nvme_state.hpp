#pragma once
// A rank's optimizer state on local NVMe (ZeRO-Infinity's offload_optimizer_device: nvme):
// `arrays` float arrays of `elements` each (fp32 master weights, Adam m, Adam v) in one scratch
// file, streamed block by block through three host buffers while the optimizer steps, so that
// the read of block i+1 and the write of block i-1 overlap the step on block i.
//
// File layout: block b holds elements [b * block_elements, ...) of every array, each array's
// slice padded to a multiple of 4096 bytes (O_DIRECT's alignment), one after the other:
//
//   | block 0: array 0 | array 1 | ... | block 1: array 0 | ... | last block (shorter slices) |
//
// so a block is one read and one write. Every block but the last is full; the last one's slices
// are padded to 4096 bytes only. The buffers are 4096-byte aligned, so each array's slice in a
// buffer starts on a 4096-byte (hence 64-byte) boundary.
//
// The file is created (replacing one a killed run left) with O_DIRECT where the file system
// allows it, locked against a second process, filled with zeros, and removed by the destructor,
// also when a constructor or visitor error unwinds. One NvmeState is used by one thread at a
// time: for_each_block, read and write share the buffers.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "async_file.hpp"
#include "autotrain/comm/communicator.hpp"
#include "autotrain/zero/nvme_folder.hpp"

namespace autotrain::zero {

// How the scratch file is accessed: what a run uses by default; the tests and the benchmark
// choose.
struct NvmeIo {
  IoEngine engine = IoEngine::automatic;  // io_uring where the kernel allows it, else threads
  bool direct = true;                     // O_DIRECT where the file system allows it
  bool check_free_space = true;  // statvfs first (tests turn it off to meet ENOSPC in the fill)
  std::string contents = "the optimizer state";  // what the file holds, for the messages
};

class NvmeState {
 public:
  static constexpr std::size_t kAlignment = 4096;  // O_DIRECT's offsets, lengths and buffers
  static constexpr int kBuffers = 3;               // one read, one step, one write

  NvmeState(const std::filesystem::path& folder, std::string file_name, std::size_t elements,
            int arrays, std::size_t block_elements = std::size_t{1} << 22, NvmeIo io = {});
  ~NvmeState();
  NvmeState(const NvmeState&) = delete;
  NvmeState& operator=(const NvmeState&) = delete;

  std::size_t elements() const { return elements_; }
  int arrays() const { return arrays_; }
  std::size_t block_elements() const { return block_elements_; }
  std::size_t num_blocks() const { return num_blocks_; }

  // Visits blocks [0, num_blocks()) in order. Block i+1 is read while visit runs on block i, and
  // block i-1 is written back meanwhile. visit(begin, count, data) gets data[k] = the block's
  // slice of array k (count floats each, 4096-byte aligned). write_back=false skips the writes.
  // An I/O error or an exception from visit is thrown after the transfers in flight ended.
  using BlockVisitor =
      std::function<void(std::size_t begin, std::size_t count, std::span<float* const> data)>;
  void for_each_block(const BlockVisitor& visit, bool write_back = true);

  // Random access (checkpoints): elements [begin, begin + out.size()) of array `array`, moving
  // only the pages they lie on. They use the pipeline's buffers: not from inside a visitor.
  void read(int array, std::size_t begin, std::span<float> out);
  void write(int array, std::size_t begin, std::span<const float> in);

  // Byte access to a file of one array whose blocks are whole pages, so that its bytes follow
  // each other as the array's do: bytes [offset, offset + size) into or from `bytes`, offset,
  // size and buffer 4096-byte aligned (O_DIRECT's rule). The caller's buffer, not the
  // pipeline's.
  bool contiguous() const;
  void read_pages(std::uint64_t offset, std::span<std::byte> bytes);
  void write_pages(std::uint64_t offset, std::span<const std::byte> bytes);

  // The host buffers of the pipeline (a GPU engine pins them with cudaHostRegister).
  std::vector<std::span<std::byte>> buffers();

  // "/local/nvme/autotrain-rank3.state: 1.20 GiB, io_uring, O_DIRECT"
  std::string describe() const;
  const std::filesystem::path& path() const { return path_; }
  std::size_t file_bytes() const { return file_bytes_; }               // on disk
  std::size_t host_bytes() const { return kBuffers * buffer_bytes_; }  // the buffers

 private:
  // The scratch file: open, locked, and removed when this goes.
  struct ScratchFile {
    std::filesystem::path path;
    int fd = -1;
    ~ScratchFile();
  };
  struct FreeBytes {
    void operator()(std::byte* p) const;
  };

  std::size_t block_begin(std::size_t block) const { return block * block_elements_; }
  std::size_t block_count(std::size_t block) const;
  std::size_t slice_bytes(std::size_t block) const;  // one array's slice, padded
  std::uint64_t block_offset(std::size_t block) const;
  std::uint64_t slice_offset(int array, std::size_t block) const;
  struct Pages;
  Pages pages(int array, std::size_t block, std::size_t first, std::size_t count) const;
  std::byte* buffer(int index) { return host_.get() + index * buffer_bytes_; }
  template <typename Run>
  void for_each_run(int array, std::size_t begin, std::size_t n, Run&& run) const;

  void open_file(bool direct);
  void check_free_space() const;
  void fill_with_zeros();
  Transfer write_zeros();
  void use_buffered_io(const char* reason);
  void check(const Transfer& transfer, const char* what) const;

  std::filesystem::path folder_, path_;
  std::size_t elements_, block_elements_, num_blocks_;
  int arrays_;
  std::size_t file_bytes_ = 0, buffer_bytes_ = 0;  // buffer: a block of every array
  bool direct_ = false;
  std::string buffered_reason_;  // why O_DIRECT is not used
  std::string contents_;         // NvmeIo::contents
  ScratchFile file_;
  std::vector<float*> views_;                   // for_each_block's data: one per array
  std::unique_ptr<std::byte, FreeBytes> host_;  // kBuffers buffers of buffer_bytes_
  std::unique_ptr<AsyncFile> io_;               // declared last: drained before the rest goes
};

}  // namespace autotrain::zero
