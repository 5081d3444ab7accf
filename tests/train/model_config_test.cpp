// A model folder's config.json (read_model_config): the shape at full width and in range,
// every bad value named with its file and key.
#include <gtest/gtest.h>

#include <string>

#include "autotrain/train/generate.hpp"
#include "test_support.hpp"

namespace autotrain::train::model_config_test {
namespace {

using autotrain::testing::error_of;

std::string config_error(const std::string& json) {
  const testing::TempDir dir;
  testing::write_file(dir.path() / "config.json", json);
  return error_of([&] { (void)read_model_config(dir.path()); });
}

TEST(ModelConfigJson, ReadsTheGpt2ShapeAndTheTokenizer) {
  const testing::TempDir dir;
  testing::write_file(dir.path() / "config.json",
                      R"({"model_type": "gpt2", "n_layer": 2, "n_head": 4, "n_embd": 64,
                          "n_positions": 128, "vocab_size": 256, "autotrain_tokenizer": "byte"})");
  const ModelFolderConfig config = read_model_config(dir.path());
  EXPECT_EQ(config.shape.n_layer, 2);
  EXPECT_EQ(config.shape.block_size, 128);
  EXPECT_EQ(config.shape.padded_vocab_size, 256);
  EXPECT_EQ(config.tokenizer, "byte");
}

TEST(ModelConfigJson, RefusesTruncatedOrMistypedValuesNamingTheKey) {
  const std::string shape = R"("n_head": 2, "n_embd": 64, "n_positions": 128, "vocab_size": 256)";
  // get<int>() read 4294967298 as 2 layers.
  EXPECT_NE(config_error(R"({"model_type": "gpt2", "n_layer": 4294967298, )" + shape + "}")
                .find("config.json: n_layer should be an integer in [1, 2147483647], got "
                      "4294967298"),
            std::string::npos);
  EXPECT_NE(config_error(R"({"model_type": "gpt2", "n_layer": 2.5, )" + shape + "}")
                .find("n_layer should be an integer"),
            std::string::npos);
  // A model_type that is not a string was a JSON type error naming nothing.
  EXPECT_NE(config_error(R"({"model_type": 7, "n_layer": 2, )" + shape + "}")
                .find("config.json: architectures missing, model_type 7: not supported (expected "
                      "model_type gpt2"),
            std::string::npos);
  EXPECT_NE(config_error("[1, 2]").find("expected a JSON object, got array"), std::string::npos);
  EXPECT_NE(config_error(R"({"model_type": "gpt2", "n_layer": 2, "autotrain_tokenizer": 1, )" +
                         shape + "}")
                .find("autotrain_tokenizer should be a string"),
            std::string::npos);
  // The vocabulary rounded up to a multiple of 128 must still fit an int.
  EXPECT_NE(config_error(R"({"model_type": "gpt2", "n_layer": 2, "n_head": 2, "n_embd": 64,
                             "n_positions": 128, "vocab_size": 2147483600})")
                .find("vocab_size 2147483600 is too large"),
            std::string::npos);
}

}  // namespace
}  // namespace autotrain::train::model_config_test
