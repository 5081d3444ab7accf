// Locating the base model: folders, the offline Hub cache in transformers' order, revisions,
// GPT-2's legacy names, and what resolve_params derives from a folder.
#include "autotrain/config/base_model.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "autotrain/config/load.hpp"
#include "autotrain/model/folder.hpp"
#include "expect_error.hpp"
#include "test_support.hpp"

namespace autotrain::config::base_model_test {
namespace {

namespace fs = std::filesystem;
using testing::contains;
using testing::error_message;
using testing::write_file;

constexpr const char* kGpt2Config =
    R"({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_layer": 3, "n_head": 4,
        "n_embd": 64, "n_positions": 256, "vocab_size": 50257})";

// models--ORG--NAME with refs/main -> snapshots/COMMIT/config.json, as huggingface_hub lays it.
fs::path add_to_cache(const fs::path& cache, const std::string& folder, const std::string& commit,
                      const std::string& ref = "main") {
  const fs::path repo = cache / folder;
  write_file(repo / "refs" / ref, commit + "\n");
  const fs::path snapshot = repo / "snapshots" / commit;
  write_file(snapshot / "config.json", kGpt2Config);
  return snapshot;
}

// Sets the Hub variables for one test and restores them.
class HubEnvironment {
 public:
  HubEnvironment(const fs::path& hf_home, const fs::path& home) {
    for (const char* name : {"HF_HUB_CACHE", "HF_HOME", "HOME"}) {
      const char* value = std::getenv(name);
      saved_.emplace_back(name, value ? std::optional<std::string>(value) : std::nullopt);
    }
    ::unsetenv("HF_HUB_CACHE");
    ::setenv("HF_HOME", hf_home.c_str(), 1);
    ::setenv("HOME", home.c_str(), 1);
  }
  ~HubEnvironment() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST(BaseModel, FindsHubIdsInTransformersOrderAndFollowsRefs) {
  testing::TempDir dir;
  const HubEnvironment env(dir.path() / "hf", dir.path() / "home");
  const fs::path home_cache = dir.path() / "home/.cache/huggingface/hub";
  const fs::path in_home = add_to_cache(home_cache, "models--org--name", "aaaa");
  EXPECT_EQ(locate_base_model("org/name", "main", false).folder, in_home);
  // $HF_HOME/hub comes before ~/.cache.
  const fs::path in_hf_home = add_to_cache(dir.path() / "hf/hub", "models--org--name", "bbbb");
  EXPECT_EQ(locate_base_model("org/name", "main", false).folder, in_hf_home);
  // Another ref, and a commit named directly.
  const fs::path tagged = add_to_cache(dir.path() / "hf/hub", "models--org--name", "cccc", "v1");
  EXPECT_EQ(locate_base_model("org/name", "v1", false).folder, tagged);
  const std::string commit(40, 'e');
  add_to_cache(dir.path() / "hf/hub", "models--org--name", commit, "other");
  EXPECT_EQ(locate_base_model("org/name", commit, false).folder,
            dir.path() / "hf/hub/models--org--name/snapshots" / commit);
  EXPECT_TRUE(locate_base_model("org/name", "v2", false).folder.empty());
}

// adapter_config.json's base_model_name_or_path: the Hub id for a base found in the cache, a
// folder given as a folder (even a snapshot folder given by its path).
TEST(BaseModel, PeftBaseNameIsTheHubIdForACachedBaseAndTheFolderOtherwise) {
  testing::TempDir dir;
  const HubEnvironment env(dir.path() / "hf", dir.path() / "home");
  const fs::path snapshot = add_to_cache(dir.path() / "hf/hub", "models--org--name", "aaaa");
  EXPECT_EQ(locate_base_model("org/name", "main", false).peft_base_name(), "org/name");
  EXPECT_EQ(locate_base_model(snapshot.string(), "main", false).peft_base_name(),
            snapshot.string());
  write_file(dir.path() / "local/config.json", kGpt2Config);
  const BaseModel local = locate_base_model((dir.path() / "local").string(), "main", false);
  EXPECT_EQ(local.peft_base_name(), local.folder.string());
  EXPECT_EQ(peft_base_name("org/name", {}), "");
}

// The cache is untrusted: a refs/ file naming '../x' must not lead outside snapshots/, where a
// folder with a config.json is waiting to be loaded.
TEST(BaseModel, RefusesARefThatLeavesTheSnapshots) {
  testing::TempDir dir;
  const HubEnvironment env(dir.path() / "hf", dir.path() / "home");
  const fs::path repo = dir.path() / "hf/hub/models--org--name";
  add_to_cache(dir.path() / "hf/hub", "models--org--name", "aaaa");
  write_file(repo / "outside/config.json", kGpt2Config);
  write_file(repo / "refs/main", "../outside\n");
  const std::string message = error_message([] { locate_base_model("org/name", "main", false); });
  EXPECT_TRUE(contains(message, (repo / "refs/main").string() + ": names '../outside'")) << message;
  EXPECT_TRUE(contains(message, "expected the commit hash of a snapshot"));
  write_file(repo / "refs/main", "..\n");
  EXPECT_TRUE(
      contains(error_message([] { locate_base_model("org/name", "main", false); }), "names '..'"));
  // A long ref is refused without reading it all.
  write_file(repo / "refs/main", std::string(100000, 'a'));
  EXPECT_TRUE(contains(error_message([] { locate_base_model("org/name", "main", false); }),
                       "longer than 256 bytes"));
  // And the revision itself names a file under refs/.
  EXPECT_TRUE(contains(error_message([] { locate_base_model("org/name", "../outside", false); }),
                       "revision '../outside': expected a branch or tag under refs/"));
}

TEST(BaseModel, FindsGpt2UnderEitherSpelling) {
  testing::TempDir dir;
  const HubEnvironment env(dir.path() / "hf", dir.path() / "home");
  const fs::path snapshot =
      add_to_cache(dir.path() / "hf/hub", "models--openai-community--gpt2", "abc");
  EXPECT_EQ(locate_base_model("gpt2", "main", false).folder, snapshot);
  EXPECT_EQ(locate_base_model("openai-community/gpt2", "main", false).folder, snapshot);
}

TEST(BaseModel, SaysWhereItLookedAndHowToDownload) {
  testing::TempDir dir;
  const HubEnvironment env(dir.path() / "hf", dir.path() / "home");
  const BaseModel base = locate_base_model("gpt2", "main", false);
  ASSERT_TRUE(base.weights_missing());
  const std::string message = base.missing_message();
  EXPECT_NE(message.find((dir.path() / "hf/hub").string()), std::string::npos) << message;
  EXPECT_NE(message.find("huggingface-cli download openai-community/gpt2"), std::string::npos);
  EXPECT_NE(message.find("from_scratch"), std::string::npos);
  EXPECT_NE(locate_base_model("tiny", "main", false).missing_message().find("architecture preset"),
            std::string::npos);
}

TEST(BaseModel, RefusesAFolderWithoutConfigJson) {
  testing::TempDir dir;
  fs::create_directories(dir.path() / "empty");
  EXPECT_NE(error_message([&] {
              locate_base_model((dir.path() / "empty").string(), "main", false);
            }).find("has no config.json"),
            std::string::npos);
}

TEST(BaseModel, ResolveTakesTheShapeAndTokenizerFromTheFolder) {
  testing::TempDir dir;
  const fs::path folder = dir.path() / "model";
  write_file(folder / "config.json", kGpt2Config);
  write_file(folder / "tokenizer_config.json", R"({"model_max_length": 128})");
  write_file(folder / "tokenizer.json", R"({"model": {"vocab": {"a": 0, "b": 1}}})");
  ResolvedParams resolved = default_params();
  apply_flags(resolved, {{"model", "--model", folder.string()}});
  resolve_params(resolved, model::folder_shape);
  EXPECT_EQ(resolved.params.n_layer, 3);
  EXPECT_EQ(resolved.params.n_embd, 64);
  EXPECT_EQ(resolved.params.vocab_size, 50257);
  EXPECT_EQ(resolved.params.tokenizer, folder.string());  // the folder's tokenizer.json
  EXPECT_EQ(resolved.params.block_size, 128);  // min(model_max_length, n_positions, 1024)
  EXPECT_EQ(resolved.base_model.folder, folder);

  // Pretrained weights fix the shape; from scratch, a given key wins.
  ResolvedParams wider = default_params();
  apply_flags(wider, {{"model", "--model", folder.string()}, {"n_embd", "--n-embd", "128"}});
  EXPECT_NE(error_message([&] {
              resolve_params(wider, model::folder_shape);
            }).find("n_embd 128 (from --n-embd) differs from the base model's 64"),
            std::string::npos);
  ResolvedParams scratch = default_params();
  apply_flags(scratch, {{"model", "--model", folder.string()},
                        {"n_embd", "--n-embd", "128"},
                        {"from_scratch", "--from-scratch", "true"}});
  resolve_params(scratch, model::folder_shape);
  EXPECT_EQ(scratch.params.n_embd, 128);
}

TEST(BaseModel, RefusesOtherArchitecturesNamingThem) {
  testing::TempDir dir;
  write_file(dir.path() / "config.json",
             R"({"model_type": "mamba", "architectures": ["MambaForCausalLM"]})");
  const std::string message = error_message([&] { model::folder_shape(dir.path()); });
  EXPECT_NE(
      message.find(R"(architectures ["MambaForCausalLM"], model_type "mamba": not supported)"),
      std::string::npos)
      << message;
}

}  // namespace
}  // namespace autotrain::config::base_model_test
