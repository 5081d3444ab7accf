#include "autotrain/ckpt/safetensors.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "autotrain/core/error.hpp"
#include "test_support.hpp"

namespace autotrain::ckpt::safetensors_test {
namespace {

std::vector<SafetensorsEntry> three_tensors() {
  return {{"transformer.wte.weight", DType::fp32, {3, 4}},
          {"transformer.h.0.ln_1.weight", DType::bf16, {5}},
          {"lm_head.bias", DType::fp16, {2, 3}}};
}

std::vector<float> ramp(size_t count, float start) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = start + 0.125f * static_cast<float>(i);
  return values;
}

TEST(Safetensors, StreamedChunksRoundTripWithDtypeConversion) {
  testing::TempDir dir;
  const auto path = dir / "model.safetensors";
  const std::vector<float> all = ramp(12 + 5 + 6, -1.0f);
  {
    SafetensorsWriter writer(path, three_tensors(), {{"format", "pt"}});
    // Chunks that straddle tensor boundaries, as a ZeRO-3 export delivers them.
    writer.append(std::span(all).first(7));
    writer.append(std::span(all).subspan(7, 9));
    writer.append(std::span(all).subspan(16));
    writer.finish();
  }
  SafetensorsFile file(path);
  EXPECT_EQ(file.metadata().at("format"), "pt");
  EXPECT_EQ(file.read("transformer.wte.weight"), std::vector<float>(all.begin(), all.begin() + 12));
  // Multiples of 1/8 near 1 are exact in bf16 and fp16.
  EXPECT_EQ(file.read("transformer.h.0.ln_1.weight"),
            std::vector<float>(all.begin() + 12, all.begin() + 17));
  EXPECT_EQ(file.read("lm_head.bias"), std::vector<float>(all.begin() + 17, all.end()));
  EXPECT_EQ(file.entry("lm_head.bias").shape, (std::vector<uint64_t>{2, 3}));
}

TEST(Safetensors, BF16RoundsToNearestEven) {
  testing::TempDir dir;
  const auto path = dir / "m.safetensors";
  // 1 + 2^-8 lies halfway between bf16 neighbours 1 and 1 + 2^-7: ties go to even (1).
  const std::vector<float> values = {1.0f + 1.0f / 256.0f, 3.0f};
  SafetensorsWriter writer(path, {{"w", DType::bf16, {2}}});
  writer.append(values);
  writer.finish();
  EXPECT_EQ(SafetensorsFile(path).read("w"), (std::vector<float>{1.0f, 3.0f}));
}

TEST(Safetensors, HeaderIsPaddedJsonWithContiguousOffsets) {
  testing::TempDir dir;
  const auto path = dir / "model.safetensors";
  SafetensorsWriter writer(path, three_tensors());
  writer.append(ramp(23, 0.0f));
  writer.finish();
  const std::string bytes = testing::read_file(path);
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i)
    length = (length << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  EXPECT_EQ(length % 8, 0u);
  EXPECT_EQ(length, writer.header_bytes());
  const auto header = nlohmann::json::parse(bytes.substr(8, length));
  EXPECT_EQ(header["transformer.wte.weight"]["dtype"], "F32");
  EXPECT_EQ(header["transformer.wte.weight"]["data_offsets"], nlohmann::json({0, 48}));
  EXPECT_EQ(header["transformer.h.0.ln_1.weight"]["dtype"], "BF16");
  EXPECT_EQ(header["transformer.h.0.ln_1.weight"]["data_offsets"], nlohmann::json({48, 58}));
  EXPECT_EQ(header["lm_head.bias"]["data_offsets"], nlohmann::json({58, 70}));
  EXPECT_EQ(bytes.size(), 8 + length + 70);
}

TEST(Safetensors, PythonSafetensorsLoadsTheFileWhenInstalled) {
  if (std::system("python3 -c 'import safetensors, numpy' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "python3 safetensors not installed (the structural test covers the header)";
  }
  testing::TempDir dir;
  const auto path = dir / "m.safetensors";
  SafetensorsWriter writer(path, {{"w", DType::fp32, {2}}});
  writer.append(std::vector<float>{1.5f, -2.0f});
  writer.finish();
  const std::string command =
      "python3 -c \"from safetensors.numpy import load_file; "
      "t = load_file('" +
      path.string() + "'); assert t['w'].tolist() == [1.5, -2.0]\"";
  EXPECT_EQ(std::system(command.c_str()), 0);
}

TEST(Safetensors, FinishBeforeAllValuesNamesTheIncompleteTensor) {
  testing::TempDir dir;
  SafetensorsWriter writer(dir / "m.safetensors", three_tensors());
  writer.append(ramp(14, 0.0f));
  try {
    writer.finish();
    FAIL() << "finish accepted an incomplete file";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("transformer.h.0.ln_1.weight' received 2 of its 5"),
              std::string::npos)
        << error.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "m.safetensors"));
}

TEST(Safetensors, ReaderRejectsHeaderLongerThanFile) {
  testing::TempDir dir;
  const auto path = dir / "bad.safetensors";
  testing::write_file(path, std::string("\xff\x00\x00\x00\x00\x00\x00\x00{}", 10));
  EXPECT_THROW(SafetensorsFile{path}, Error);
}

// The file really is 3 GB long (sparse), so only the cap stops the reader from reading it all.
TEST(Safetensors, ReaderRefusesAHugeDeclaredHeaderBeforeReadingIt) {
  testing::TempDir dir;
  const auto path = dir / "huge.safetensors";
  const uint64_t declared = uint64_t{3} << 30;
  std::string length(8, '\0');
  for (int i = 0; i < 8; ++i) length[size_t(i)] = static_cast<char>(declared >> (8 * i));
  testing::write_file(path, length + "{}");
  std::filesystem::resize_file(path, declared + 8);
  std::string message;
  try {
    SafetensorsFile file(path);
    ADD_FAILURE() << "a 3 GB header was accepted";
  } catch (const Error& error) {
    message = error.what();
  }
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("declares a header of 3221225472 bytes, more than the 100000000"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace autotrain::ckpt::safetensors_test
