// Checkpoint write/read under mpirun (np 1..4): round trips where the readers' partition differs
// from the writers', run state, corruption, truncation, version and ownership errors, `latest`,
// retention, and the layout h5dump shows.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <numeric>

#include "autotrain/ckpt/checkpoint.hpp"
#include "autotrain/ckpt/checkpoint_dir.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "test_support.hpp"

namespace autotrain::ckpt::checkpoint_mpi_test {
namespace {
namespace fs = std::filesystem;

float value_at(size_t tensor, uint64_t index) {
  return static_cast<float>(tensor) * 1000.0f + static_cast<float>(index) * 0.5f + 0.25f;
}

// Three small tensors, full values on every rank; each rank owns chunks r and r + world of
// each tensor cut into 2 * world chunks (so ranks hold two disjoint pieces, some empty).
struct Fixture {
  std::vector<TensorSpec> tensors = {
      {"model/transformer.wte.weight", 35, {7, 5}},
      {"model/transformer.h.0.attn.c_attn.weight", 48, {4, 12}},
      {"optimizer/exp_avg/transformer.wte.weight", 35, {7, 5}},
  };
  std::vector<std::vector<float>> values;
  CheckpointContent content;

  explicit Fixture(int64_t step = 3) {
    for (size_t t = 0; t < tensors.size(); ++t) {
      values.emplace_back(tensors[t].length);
      for (uint64_t i = 0; i < tensors[t].length; ++i) values[t][i] = value_at(t, i);
    }
    content.tensors = tensors;
    const auto size = static_cast<uint64_t>(world_size());
    const auto me = static_cast<uint64_t>(world_rank());
    for (size_t t = 0; t < tensors.size(); ++t) {
      const uint64_t chunks = 2 * size;
      for (uint64_t chunk : {me, me + size}) {
        uint64_t begin = tensors[t].length * chunk / chunks;
        uint64_t end = tensors[t].length * (chunk + 1) / chunks;
        content.pieces.push_back(
            {t, begin, std::span<const float>(values[t].data() + begin, end - begin)});
      }
    }
    content.state.step = step;
    content.state.epoch = 1;
    content.state.consumed_samples = 96;
    content.state.zero_stage = 3;
    content.state.json["model_config"] = R"({"n_layer": 1, "n_embd": 12})";
    content.state.json["training_params"] = R"({"lr": 0.0003, "batch_size": 2})";
    content.state.per_rank["rng"] = {static_cast<uint64_t>(world_rank()) * 10 + 1,
                                     static_cast<uint64_t>(world_rank()) * 10 + 2};
  }
};

std::vector<float> read_whole(CheckpointReader& reader, const std::string& name) {
  const DatasetInfo* info = reader.find(name);
  std::vector<float> out(info ? info->length : 0);
  reader.read(name, 0, out);
  return out;
}

class LayoutTest : public ::testing::TestWithParam<Layout> {};

TEST_P(LayoutTest, EveryRankReadsWholeTensorsWrittenInPieces) {
  testing::SharedTempDir dir;
  Fixture fixture;
  const fs::path path = dir.path() / "checkpoint-3.h5";
  write_checkpoint(path, fixture.content, {.layout = GetParam()}, MPI_COMM_WORLD);
  CheckpointReader reader(path, MPI_COMM_WORLD, fixture.tensors);
  ASSERT_EQ(reader.info().layout, GetParam());
  for (size_t t = 0; t < fixture.tensors.size(); ++t) {
    EXPECT_EQ(read_whole(reader, fixture.tensors[t].name), fixture.values[t])
        << fixture.tensors[t].name;
  }
}

TEST_P(LayoutTest, ReversedContiguousOwnershipReadsItsOwnRanges) {
  testing::SharedTempDir dir;
  Fixture fixture;
  const fs::path path = dir.path() / "checkpoint-3.h5";
  write_checkpoint(path, fixture.content, {.layout = GetParam()}, MPI_COMM_WORLD);
  CheckpointReader reader(path, MPI_COMM_WORLD);
  // The reader's partition: rank r owns the (world-1-r)-th contiguous block, asked for as two
  // ranges (first element alone, then the rest) to exercise several ranges per call.
  const auto size = static_cast<uint64_t>(world_size());
  const auto block = size - 1 - static_cast<uint64_t>(world_rank());
  for (size_t t = 0; t < fixture.tensors.size(); ++t) {
    const uint64_t length = fixture.tensors[t].length;
    const uint64_t begin = length * block / size;
    const uint64_t end = length * (block + 1) / size;
    std::vector<float> out(end - begin, -1.0f);
    std::vector<ReadRange> ranges;
    if (end > begin) {
      ranges.push_back({begin, std::span<float>(out.data(), 1)});
      ranges.push_back({begin + 1, std::span<float>(out.data() + 1, end - begin - 1)});
    }
    reader.read(fixture.tensors[t].name, ranges);
    for (uint64_t i = begin; i < end; ++i) ASSERT_EQ(out[i - begin], value_at(t, i)) << i;
  }
}

TEST_P(LayoutTest, RunStateAndChecksumsRoundTrip) {
  testing::SharedTempDir dir;
  Fixture fixture;
  const fs::path path = dir.path() / "checkpoint-3.h5";
  write_checkpoint(path, fixture.content, {.layout = GetParam()}, MPI_COMM_WORLD);
  CheckpointReader reader(path, MPI_COMM_WORLD);
  const CheckpointInfo& info = reader.info();
  EXPECT_EQ(info.format, "autotrain-checkpoint");
  EXPECT_EQ(info.format_version, 1);
  EXPECT_EQ(info.step, 3);
  EXPECT_EQ(info.epoch, 1);
  EXPECT_EQ(info.consumed_samples, 96);
  EXPECT_EQ(info.zero_stage, 3);
  EXPECT_EQ(info.world_size, world_size());
  EXPECT_EQ(info.json.at("model_config"), fixture.content.state.json["model_config"]);
  ASSERT_EQ(info.per_rank.at("rng").size(), static_cast<size_t>(world_size()));
  for (int r = 0; r < world_size(); ++r) {
    const std::vector<uint64_t> expected = {static_cast<uint64_t>(r) * 10 + 1,
                                            static_cast<uint64_t>(r) * 10 + 2};
    EXPECT_EQ(info.per_rank.at("rng")[static_cast<size_t>(r)], expected);
  }
  ASSERT_EQ(info.datasets.size(), 3u);
  EXPECT_EQ(reader.find("model/transformer.wte.weight")->shape, (std::vector<uint64_t>{7, 5}));
  EXPECT_EQ(info.total_bytes(), (35u + 48u + 35u) * 4u);
  EXPECT_TRUE(reader.verify_checksums().empty());
}

// Flips one byte of a tensor's stored data (in the rank-0 file for the per-rank layout).
void flip_byte(const fs::path& file, const std::string& dataset_name, uint64_t byte) {
  hid_t id = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(id, 0) << file;
  hid_t dataset = H5Dopen2(id, dataset_name.c_str(), H5P_DEFAULT);
  ASSERT_GE(dataset, 0) << dataset_name;
  haddr_t offset = H5Dget_offset(dataset);
  H5Dclose(dataset);
  H5Fclose(id);
  ASSERT_NE(offset, HADDR_UNDEF);
  std::fstream stream(file, std::ios::in | std::ios::out | std::ios::binary);
  stream.seekg(static_cast<std::streamoff>(offset + byte));
  char value = 0;
  stream.read(&value, 1);
  value = static_cast<char>(value ^ 0x10);
  stream.seekp(static_cast<std::streamoff>(offset + byte));
  stream.write(&value, 1);
}

TEST_P(LayoutTest, FlippedByteFailsVerificationNamingTheDataset) {
  testing::SharedTempDir dir;
  Fixture fixture;
  const fs::path path = dir.path() / "checkpoint-3.h5";
  write_checkpoint(path, fixture.content, {.layout = GetParam()}, MPI_COMM_WORLD);
  if (world_rank() == 0) {
    const fs::path target =
        GetParam() == Layout::shared ? path : rank_folder(path) / "rank-00000.h5";
    flip_byte(target, "model/transformer.h.0.attn.c_attn.weight", 2);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  CheckpointReader reader(path, MPI_COMM_WORLD);
  const std::vector<std::string> problems = reader.verify_checksums();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("model/transformer.h.0.attn.c_attn.weight: checksum mismatch"),
            std::string::npos)
      << problems[0];
}

// Rank r's part [length * r / world, length * (r + 1) / world) of every tensor of `fixture`,
// read with read() and compared with the written values unless `damaged`; returns the elements
// read.
uint64_t read_own_parts(CheckpointReader& reader, const Fixture& fixture, bool damaged = false) {
  const auto world = static_cast<uint64_t>(world_size());
  const auto me = static_cast<uint64_t>(world_rank());
  uint64_t elements = 0;
  for (size_t t = 0; t < fixture.tensors.size(); ++t) {
    const uint64_t length = fixture.tensors[t].length;
    const uint64_t begin = length * me / world;
    std::vector<float> part(length * (me + 1) / world - begin);
    reader.read(fixture.tensors[t].name, begin, part);
    for (uint64_t i = 0; i < part.size() && !damaged; ++i) {
      EXPECT_EQ(part[i], value_at(t, begin + i));
    }
    elements += part.size();
  }
  return elements;
}

TEST_P(LayoutTest, RanksReadingTheirPartsOnlyVerifyTheWholeFromPartialChecksums) {
  testing::SharedTempDir dir;
  Fixture fixture;
  const fs::path path = dir.path() / "checkpoint-3.h5";
  write_checkpoint(path, fixture.content, {.layout = GetParam()}, MPI_COMM_WORLD);
  CheckpointReader reader(path, MPI_COMM_WORLD);
  const uint64_t elements = read_own_parts(reader, fixture);
  EXPECT_EQ(reader.bytes_read(), elements * sizeof(float));
  EXPECT_TRUE(reader.verify_reads().empty());
}

// Streamed pieces (offload nvme's state) move in parts of at most `part` elements; only even
// ranks stream, so the ranks need different numbers of collective transfers.
TEST_P(LayoutTest, StreamedPiecesAndRangesMoveInPartsAndStoreWhatMemoryPiecesDo) {
  testing::SharedTempDir dir;
  Fixture fixture;
  const fs::path in_memory = dir.path() / "checkpoint-3.h5";
  write_checkpoint(in_memory, fixture.content, {.layout = GetParam()}, MPI_COMM_WORLD);
  const bool streams = world_rank() % 2 == 0;
  constexpr uint64_t kPart = 3;
  uint64_t largest = 0, calls = 0;
  CheckpointContent streamed = fixture.content;
  for (Piece& piece : streamed.pieces) {
    if (!streams || piece.data.empty()) continue;
    const std::span<const float> data = piece.data;
    piece.stream = {data.size(),
                    kPart,
                    [&, data](uint64_t at, std::span<float> out) {
                      ASSERT_LE(at + out.size(), data.size());
                      largest = std::max<uint64_t>(largest, out.size());
                      ++calls;
                      std::copy_n(data.begin() + static_cast<std::ptrdiff_t>(at), out.size(),
                                  out.begin());
                    },
                    {}};
    piece.data = {};
  }
  const fs::path path = dir.path() / "checkpoint-4.h5";
  write_checkpoint(path, streamed, {.layout = GetParam()}, MPI_COMM_WORLD);
  if (streams) {
    EXPECT_EQ(largest, kPart);
    EXPECT_GT(calls, streamed.pieces.size());
  }
  CheckpointReader reference(in_memory, MPI_COMM_WORLD);
  CheckpointReader reader(path, MPI_COMM_WORLD);
  for (size_t t = 0; t < fixture.tensors.size(); ++t) {
    const std::string& name = fixture.tensors[t].name;
    EXPECT_EQ(read_whole(reader, name), fixture.values[t]) << name;
    EXPECT_EQ(reader.find(name)->checksum, reference.find(name)->checksum) << name;
  }
  EXPECT_TRUE(reader.verify_checksums().empty());

  // Read back into streams (parts of 4), each rank its own pieces: delivered in order, whole.
  CheckpointReader again(path, MPI_COMM_WORLD);
  for (size_t t = 0; t < fixture.tensors.size(); ++t) {
    std::vector<float> got(fixture.tensors[t].length, -1.0f);
    std::vector<ReadRange> ranges;
    for (const Piece& piece : fixture.content.pieces) {
      if (piece.tensor != t || piece.data.empty()) continue;
      ReadRange range{piece.offset, {}};
      if (streams) {
        range.stream = {piece.data.size(),
                        4,
                        {},
                        [&, offset = piece.offset](uint64_t at, std::span<const float> in) {
                          ASSERT_LE(in.size(), 4u);
                          std::copy(in.begin(), in.end(), got.begin() + offset + at);
                        }};
      } else {
        range.out = std::span<float>(got.data() + piece.offset, piece.data.size());
      }
      ranges.push_back(std::move(range));
    }
    again.read(fixture.tensors[t].name, ranges);
    for (const Piece& piece : fixture.content.pieces) {
      if (piece.tensor != t) continue;
      for (uint64_t i = 0; i < piece.data.size(); ++i) {
        ASSERT_EQ(got[piece.offset + i], piece.data[i]) << fixture.tensors[t].name << " at " << i;
      }
    }
  }
  EXPECT_TRUE(again.verify_reads().empty());
}

INSTANTIATE_TEST_SUITE_P(BothLayouts, LayoutTest,
                         ::testing::Values(Layout::shared, Layout::per_rank),
                         [](const auto& layout) {
                           return layout.param == Layout::shared ? "Shared" : "PerRank";
                         });

TEST(CheckpointReads, AFlippedBitInTheLastRanksPartFailsItsPartialChecksum) {
  testing::SharedTempDir dir;
  Fixture fixture;
  const fs::path path = dir.path() / "checkpoint-3.h5";
  write_checkpoint(path, fixture.content, {}, MPI_COMM_WORLD);
  // Element 46 of 48: in the last rank's part whatever the world size.
  if (world_rank() == 0) flip_byte(path, "model/transformer.h.0.attn.c_attn.weight", 46 * 4 + 1);
  MPI_Barrier(MPI_COMM_WORLD);
  CheckpointReader reader(path, MPI_COMM_WORLD);
  read_own_parts(reader, fixture, true);
  const std::vector<std::string> problems = reader.verify_reads();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_TRUE(
      problems[0].starts_with("model/transformer.h.0.attn.c_attn.weight: checksum mismatch"))
      << problems[0];
}

TEST(CheckpointReads, ATensorReadInPartIsReportedUnverifiable) {
  testing::SharedTempDir dir;
  Fixture fixture;
  const fs::path path = dir.path() / "checkpoint-3.h5";
  write_checkpoint(path, fixture.content, {}, MPI_COMM_WORLD);
  CheckpointReader reader(path, MPI_COMM_WORLD);
  std::vector<float> half(world_rank() == 0 ? 24 : 0);
  reader.read("model/transformer.h.0.attn.c_attn.weight", 0, half);
  const std::vector<std::string> problems = reader.verify_reads();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("read 24 elements of 48"), std::string::npos) << problems[0];
}

// Runs `body`, expecting an Error whose message contains every fragment.
template <typename Body>
void expect_error(Body&& body, std::initializer_list<std::string> fragments) {
  try {
    body();
    ADD_FAILURE() << "expected an error mentioning " << *fragments.begin();
  } catch (const Error& error) {
    for (const auto& fragment : fragments) {
      EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos)
          << "'" << fragment << "' not in: " << error.what();
    }
  }
}

TEST(CheckpointErrors, TruncatedFileIsRefusedNamingIt) {
  testing::SharedTempDir dir;
  Fixture fixture;
  const fs::path path = dir.path() / "checkpoint-3.h5";
  write_checkpoint(path, fixture.content, {}, MPI_COMM_WORLD);
  if (world_rank() == 0) fs::resize_file(path, fs::file_size(path) / 2);
  MPI_Barrier(MPI_COMM_WORLD);
  expect_error([&] { CheckpointReader reader(path, MPI_COMM_WORLD); }, {path.string()});
}

TEST(CheckpointErrors, NewerFormatVersionAsksToUpgrade) {
  testing::SharedTempDir dir;
  Fixture fixture;
  const fs::path path = dir.path() / "checkpoint-3.h5";
  write_checkpoint(path, fixture.content, {}, MPI_COMM_WORLD);
  if (world_rank() == 0) {
    hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t attribute = H5Aopen(file, "format_version", H5P_DEFAULT);
    const int64_t newer = 2;
    H5Awrite(attribute, H5T_NATIVE_INT64, &newer);
    H5Aclose(attribute);
    H5Fclose(file);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  expect_error([&] { CheckpointReader reader(path, MPI_COMM_WORLD); },
               {path.string(), "format version 2", "upgrade autotrain"});
}

TEST(CheckpointErrors, MissingOrResizedExpectedDatasetIsNamed) {
  testing::SharedTempDir dir;
  Fixture fixture;
  const fs::path path = dir.path() / "checkpoint-3.h5";
  write_checkpoint(path, fixture.content, {}, MPI_COMM_WORLD);
  std::vector<TensorSpec> missing = {{"model/lm_head.weight", 35, {7, 5}}};
  expect_error([&] { CheckpointReader reader(path, MPI_COMM_WORLD, missing); },
               {path.string(), "model/lm_head.weight", "missing"});
  std::vector<TensorSpec> resized = {{"model/transformer.wte.weight", 40, {8, 5}}};
  expect_error([&] { CheckpointReader reader(path, MPI_COMM_WORLD, resized); },
               {"model/transformer.wte.weight", "35 elements, expected 40"});
}

TEST(CheckpointErrors, UnownedElementsAreRejectedOnEveryRank) {
  testing::SharedTempDir dir;
  Fixture fixture;
  fixture.content.pieces.pop_back();  // the last rank's second piece of the last tensor...
  if (world_rank() != world_size() - 1)
    fixture.content.pieces = Fixture().content.pieces;  // ...only there
  // The last chunk of the last tensor is non-empty, so the gap is real on every world size.
  EXPECT_THROW(write_checkpoint(dir.path() / "c.h5", fixture.content, {}, MPI_COMM_WORLD),
               CollectiveError);
}

TEST(CheckpointErrors, DoublyOwnedElementsAreRejected) {
  testing::SharedTempDir dir;
  Fixture fixture;
  fixture.content.pieces.push_back({0, 0, std::span<const float>(fixture.values[0].data(), 1)});
  expect_error([&] { write_checkpoint(dir.path() / "c.h5", fixture.content, {}, MPI_COMM_WORLD); },
               {"model/transformer.wte.weight", "owned by more than one rank"});
}

TEST(CheckpointDirTest, KeepsNewestAndLatestAndSkipsUnfinishedSaves) {
  testing::SharedTempDir dir;
  CheckpointDir folder(dir.path());
  for (int64_t step = 1; step <= 4; ++step) {
    Fixture fixture(step);
    save_checkpoint(folder, fixture.content, {}, 2, MPI_COMM_WORLD);
  }
  // An interrupted save of step 5 leaves its temporary file behind (a prefix of a real one).
  if (world_rank() == 0) {
    fs::copy_file(folder.path_for(4), dir.path() / "checkpoint-5.h5.tmp");
    fs::resize_file(dir.path() / "checkpoint-5.h5.tmp", 1000);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  std::vector<CheckpointEntry> entries = folder.list();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].step, 3);
  EXPECT_EQ(entries[1].step, 4);
  EXPECT_EQ(folder.latest(), folder.path_for(4));
  EXPECT_EQ(folder.resolve_auto(MPI_COMM_WORLD), folder.path_for(4));
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) {
    folder.set_latest(folder.path_for(3));
    folder.prune(1);  // keeps 4 (newest) and 3 (latest)
  }
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(folder.list().size(), 2u);
}

TEST(CheckpointDirTest, AutoResumesTheLatestRunNotTheHighestStepOfAnAbandonedOne) {
  // A run saved 20, 40, 60; it was rolled back (resumed from 20 with new settings) and that
  // run saved 24. The 60 belongs to the abandoned run.
  testing::SharedTempDir dir;
  CheckpointDir folder(dir.path());
  for (int64_t step : {20, 40, 60, 24}) {
    Fixture fixture(step);
    save_checkpoint(folder, fixture.content, {}, 3, MPI_COMM_WORLD);
  }
  EXPECT_EQ(folder.resolve_auto(MPI_COMM_WORLD), folder.path_for(24));
  // save_total_limit 3 removed the oldest commit (20), not the lowest step (24).
  EXPECT_FALSE(fs::exists(folder.path_for(20)));
  EXPECT_TRUE(fs::exists(folder.path_for(24)));
  EXPECT_EQ(folder.newest_first(),
            (std::vector<fs::path>{folder.path_for(24), folder.path_for(60), folder.path_for(40)}));
  MPI_Barrier(MPI_COMM_WORLD);
  // A damaged latest falls back in commit order.
  if (world_rank() == 0) flip_byte(folder.path_for(24), "model/transformer.wte.weight", 0);
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(folder.resolve_auto(MPI_COMM_WORLD), folder.path_for(60));
}

TEST(CheckpointDirTest, ASaveRemovesWhatKilledSavesAndPrunesLeftBehind) {
  testing::SharedTempDir dir;
  CheckpointDir folder(dir.path());
  Fixture first(1);
  save_checkpoint(folder, first.content, {.layout = Layout::per_rank}, 0, MPI_COMM_WORLD);
  if (world_rank() == 0) {
    fs::create_directories(dir.path() / "checkpoint-7.ranks");  // its master was pruned
    fs::create_directories(dir.path() / "checkpoint-8.ranks.tmp");
    std::ofstream(dir.path() / "checkpoint-9.h5.tmp") << "partial";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  Fixture second(2);
  save_checkpoint(folder, second.content, {.layout = Layout::per_rank}, 0, MPI_COMM_WORLD);
  EXPECT_FALSE(fs::exists(dir.path() / "checkpoint-7.ranks"));
  EXPECT_FALSE(fs::exists(dir.path() / "checkpoint-8.ranks.tmp"));
  EXPECT_FALSE(fs::exists(dir.path() / "checkpoint-9.h5.tmp"));
  EXPECT_TRUE(fs::exists(rank_folder(folder.path_for(1))));
  EXPECT_TRUE(fs::exists(rank_folder(folder.path_for(2))));
}

// Rewrites one character of a run_state/json document in place (the length stays).
void alter_run_state(const fs::path& file, const std::string& name, size_t at, char value) {
  hid_t id = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(id, 0) << file;
  hid_t dataset = H5Dopen2(id, ("run_state/json/" + name).c_str(), H5P_DEFAULT);
  ASSERT_GE(dataset, 0) << name;
  hid_t type = H5Dget_type(dataset);
  std::string text(H5Tget_size(type), '\0');
  ASSERT_GE(H5Dread(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, text.data()), 0);
  text[at] = value;
  ASSERT_GE(H5Dwrite(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, text.data()), 0);
  H5Tclose(type);
  H5Dclose(dataset);
  H5Fclose(id);
}

TEST(CheckpointDirTest, AnAlteredRunStateFailsVerificationAndAutoFallsBack) {
  testing::SharedTempDir dir;
  CheckpointDir folder(dir.path());
  for (int64_t step : {10, 20}) {
    Fixture fixture(step);
    fixture.content.state.json["data_position"] = R"({"epoch":1,"sample_in_epoch":640})";
    save_checkpoint(folder, fixture.content, {}, 0, MPI_COMM_WORLD);
  }
  // One digit of the newest checkpoint's data position: 640 -> 740.
  if (world_rank() == 0) alter_run_state(folder.path_for(20), "data_position", 29, '7');
  MPI_Barrier(MPI_COMM_WORLD);
  {
    CheckpointReader reader(folder.path_for(20), MPI_COMM_WORLD);
    EXPECT_EQ(reader.info().json.at("data_position"), R"({"epoch":1,"sample_in_epoch":740})");
    const auto problems = reader.verify_checksums();
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_TRUE(problems[0].starts_with("run_state: checksum mismatch")) << problems[0];
  }
  EXPECT_EQ(folder.resolve_auto(MPI_COMM_WORLD), folder.path_for(10));
}

TEST(CheckpointDirTest, AutoFallsBackToPreviousValidCheckpoint) {
  testing::SharedTempDir dir;
  CheckpointDir folder(dir.path());
  for (int64_t step : {10, 20}) {
    Fixture fixture(step);
    save_checkpoint(folder, fixture.content, {.layout = Layout::per_rank}, 0, MPI_COMM_WORLD);
  }
  if (world_rank() == 0)
    flip_byte(rank_folder(folder.path_for(20)) / "rank-00000.h5", "model/transformer.wte.weight",
              0);
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(folder.resolve_auto(MPI_COMM_WORLD), folder.path_for(10));
}

TEST(CheckpointLayout, LargeDatasetsStartOnTheConfiguredAlignment) {
  testing::SharedTempDir dir;
  Fixture fixture;
  const fs::path path = dir.path() / "checkpoint-3.h5";
  // Every tensor (>= 140 bytes) is above the 64-byte threshold, so each starts on 4 KiB.
  write_checkpoint(path, fixture.content, {.alignment_threshold = 64, .alignment = 4096},
                   MPI_COMM_WORLD);
  if (world_rank() != 0) return;
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  for (const auto& spec : fixture.tensors) {
    hid_t dataset = H5Dopen2(file, spec.name.c_str(), H5P_DEFAULT);
    EXPECT_EQ(H5Dget_offset(dataset) % 4096, 0u) << spec.name;
    H5Dclose(dataset);
  }
  H5Fclose(file);
}

TEST(CheckpointLayout, H5dumpShowsDocumentedGroupsAndAttributes) {
  testing::SharedTempDir dir;
  Fixture fixture;
  const fs::path path = dir.path() / "checkpoint-3.h5";
  write_checkpoint(path, fixture.content, {}, MPI_COMM_WORLD);
  if (world_rank() != 0) return;
  if (std::system("command -v h5dump >/dev/null 2>&1") != 0) GTEST_SKIP() << "no h5dump";
  const fs::path listing = dir.path() / "header.txt";
  ASSERT_EQ(std::system(("h5dump -H " + path.string() + " > " + listing.string()).c_str()), 0);
  const std::string header = testing::read_file(listing);
  for (const char* expected :
       {"ATTRIBUTE \"format\"", "ATTRIBUTE \"format_version\"", "ATTRIBUTE \"step\"",
        "ATTRIBUTE \"world_size\"", "GROUP \"model\"", "DATASET \"transformer.wte.weight\"",
        "H5T_IEEE_F32LE", "DATASPACE  SIMPLE { ( 35 ) / ( 35 ) }", "ATTRIBUTE \"shape\"",
        "ATTRIBUTE \"checksum\"", "GROUP \"optimizer\"", "GROUP \"exp_avg\"", "GROUP \"run_state\"",
        "DATASET \"model_config\"", "DATASET \"rng\""}) {
    EXPECT_NE(header.find(expected), std::string::npos) << expected << "\n" << header;
  }
}

}  // namespace
}  // namespace autotrain::ckpt::checkpoint_mpi_test
