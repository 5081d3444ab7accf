// The files the end-of-run summary names for each kind of export.
#include <gtest/gtest.h>

#include "autotrain/train/export.hpp"
#include "test_support.hpp"

namespace autotrain::train::export_summary_test {
namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ExportSummary, AnAdapterFolderNamesTheAdapterFiles) {
  const std::string text = describe_export("run", /*peft=*/true, /*merge_adapter=*/false);
  EXPECT_EQ(text, "run (adapter_model.safetensors, adapter_config.json)");
}

TEST(ExportSummary, AMergedRunNamesTheModelThenTheAdapterFolder) {
  const std::string text = describe_export("run", true, true);
  EXPECT_TRUE(has(text,
                  "run (model.safetensors, config.json); adapters in run/adapter "
                  "(adapter_model.safetensors, adapter_config.json)"))
      << text;
}

TEST(ExportSummary, AShardedModelNamesTheShardsAndTheIndex) {
  testing::TempDir dir;
  EXPECT_EQ(describe_export(dir.path(), false, false),
            dir.path().string() + " (model.safetensors, config.json)");
  testing::write_file(dir / "model.safetensors.index.json", "{}");
  EXPECT_TRUE(has(describe_export(dir.path(), false, false),
                  "(model-*-of-*.safetensors, model.safetensors.index.json, config.json)"));
}

}  // namespace
}  // namespace autotrain::train::export_summary_test
