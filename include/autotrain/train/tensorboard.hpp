#pragma once
// TensorBoard's event files (log: tensorboard, AutoTrain's UI default): the scalars of
// metrics.jsonl's lines (train/loss, train/learning_rate, train/grad_norm, train/tokens_per_s,
// eval/loss) at the same steps, in <project_name>/runs/events.out.tfevents.<time>.<host>.<pid>,
// which `tensorboard --logdir <project_name>/runs` reads. Rank 0 of each model writes; a resumed
// run writes a new file beside the earlier ones.
//
// The format (TensorFlow's record_writer and event.proto): each record is the payload's length
// as a little-endian uint64, the masked CRC-32C of those 8 bytes, the payload (a serialized
// Event), the masked CRC-32C of the payload; mask(c) = ((c >> 15) | (c << 17)) + 0xa282ead8.
// The first Event holds file_version "brain.Event:2"; the others a step and a Summary of
// simple_value scalars.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "autotrain/train/metrics.hpp"

namespace autotrain::train {

// CRC-32C (Castagnoli) of `bytes`, and the mask TensorBoard's records store it under.
std::uint32_t crc32c(const unsigned char* bytes, std::size_t count);
std::uint32_t masked_crc32c(const unsigned char* bytes, std::size_t count);

class TensorBoardLog {
 public:
  // Creates `dir` (<project_name>/runs) and a new event file in it; an Error naming the file
  // when it cannot be written.
  explicit TensorBoardLog(const std::filesystem::path& dir);
  ~TensorBoardLog();
  TensorBoardLog(const TensorBoardLog&) = delete;
  TensorBoardLog& operator=(const TensorBoardLog&) = delete;

  // The scalars of one metrics.jsonl line (NaN ones, such as the loss of the evaluation before
  // the first step, are left out), flushed.
  void write(const StepMetrics& metrics);
  const std::filesystem::path& path() const { return path_; }

 private:
  void write_record(const std::string& event);

  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
};

}  // namespace autotrain::train
