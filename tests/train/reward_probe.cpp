// reward_probe FOLDER TOKENS OUT [--new-head SEED] [--export DIR]: what our reward model (the
// score head, model/config.hpp's score_head) computes for a model folder, for the PyTorch
// references (tests/e2e/torch_llama.py and torch_gpt2.py, `reward-check`) to compare with.
// FOLDER is a *ForSequenceClassification folder (load_model_folder, FolderHead::score), or with
// --new-head a causal LM's, whose score head is drawn from SEED as a reward run starts from a
// base model (PretrainedWeights: everything but lm_head.weight). TOKENS holds one sequence of ids
// per line, in pairs: a chosen line, then its rejected one. All run as one batch [2P, T] (T the
// longest sequence), each row right-padded with token 0 and marked at its last real token, as the
// reward trainer marks them. Writes into OUT:
//   rewards.txt  one reward per sequence, in order
//   loss.txt     the mean over the pairs of −log σ(r_chosen − r_rejected)
//   grads.f32    that loss's gradient (backward_weighted, the weights d loss / d r), and
//   layout.json  where each tensor is in it
// With --export, also writes the model's folder into DIR (train::export_model_values, as the
// reward trainer exports: the classifier's config.json, score.weight, no lm_head.weight).
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "autotrain/config/training_params.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/ignore_target.hpp"
#include "autotrain/data/tokenizer.hpp"
#include "autotrain/model/causal_lm.hpp"
#include "autotrain/train/export.hpp"
#include "autotrain/train/generate.hpp"
#include "autotrain/train/model_folder_config.hpp"
#include "autotrain/train/pretrained.hpp"

namespace {

using namespace autotrain;

std::vector<std::vector<std::int32_t>> read_sequences(const std::string& path) {
  std::ifstream in(path);
  AT_CHECK(in.good(), "cannot read ", path);
  std::vector<std::vector<std::int32_t>> sequences;
  for (std::string line; std::getline(in, line);) {
    std::istringstream ids(line);
    std::vector<std::int32_t> sequence;
    for (std::int32_t id; ids >> id;) sequence.push_back(id);
    if (!sequence.empty()) sequences.push_back(std::move(sequence));
  }
  AT_CHECK(!sequences.empty() && sequences.size() % 2 == 0, path,
           ": expected pairs of lines (chosen, rejected), got ", sequences.size(), " sequences");
  return sequences;
}

// A causal LM's folder as the reward model that starts from it: the score head drawn from seed.
train::LoadedModel with_new_head(const std::filesystem::path& folder, std::uint64_t seed) {
  const train::ModelFolderConfig config = train::read_model_config(folder);
  model::ModelConfig shape = config.shape;
  shape.score_head = true;
  train::LoadedModel loaded;
  loaded.layout = std::make_unique<model::ParamLayout>(shape, 1);
  loaded.params.assign(loaded.layout->padded_size(), 0.0f);
  const train::PretrainedWeights weights(folder, *loaded.layout, seed);
  weights.fill(*loaded.layout, loaded.params, 0);
  std::cerr << "reward_probe: " << weights.describe() << "\n";
  const bool own = std::filesystem::exists(folder / "tokenizer.json");
  loaded.tokenizer = data::make_tokenizer(own ? folder.string() : config.tokenizer);
  return loaded;
}

void write_floats(const std::string& path, const std::vector<float>& values) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(float)));
  AT_CHECK(out.good(), "cannot write ", path);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: reward_probe FOLDER TOKENS OUT [--new-head SEED] [--export DIR]\n";
    return 2;
  }
  try {
    const std::filesystem::path folder = argv[1];
    const std::string out = argv[3];
    long long new_head = -1;
    std::filesystem::path export_dir;
    for (int i = 4; i + 1 < argc; i += 2) {
      const std::string option = argv[i];
      if (option == "--new-head") {
        new_head = std::stoll(argv[i + 1]);
      } else if (option == "--export") {
        export_dir = argv[i + 1];
      } else {
        throw Error(cat("reward_probe: unknown option ", option));
      }
    }
    const train::LoadedModel loaded =
        new_head >= 0 ? with_new_head(folder, static_cast<std::uint64_t>(new_head))
                      : train::load_model_folder(folder, train::FolderHead::score);
    const model::ParamLayout& layout = *loaded.layout;

    // The batch: each sequence a row, padded with token 0 after its last token, which is marked.
    const auto sequences = read_sequences(argv[2]);
    const int B = static_cast<int>(sequences.size()), pairs = B / 2;
    std::size_t longest = 0;
    for (const auto& s : sequences) longest = std::max(longest, s.size());
    const int T = static_cast<int>(longest);
    std::vector<std::int32_t> inputs(std::size_t(B) * T, 0), marks(inputs.size(), kIgnoreTarget);
    std::vector<std::size_t> last(sequences.size());
    for (std::size_t b = 0; b < sequences.size(); ++b) {
      std::copy(sequences[b].begin(), sequences[b].end(), inputs.begin() + std::ptrdiff_t(b * T));
      last[b] = b * T + sequences[b].size() - 1;
      marks[last[b]] = 0;
    }

    std::vector<float> params = loaded.params, grads(layout.padded_size(), 0.0f);
    model::FlatUnitAccess access(layout, params.data(), grads.data());
    const auto model = model::make_causal_lm<float>(layout, B, T);
    model->forward(access, inputs.data(), marks.data());
    std::vector<double> rewards;
    for (const std::size_t i : last) rewards.push_back(model->losses()[i]);

    // −log σ(Δ) with Δ = r_chosen − r_rejected: d/dΔ = −σ(−Δ), each pair weighing 1/P.
    double loss = 0;
    std::vector<float> weights(inputs.size(), 0.0f);
    for (int p = 0; p < pairs; ++p) {
      const double margin = rewards[std::size_t(2 * p)] - rewards[std::size_t(2 * p + 1)];
      loss += std::log1p(std::exp(-margin)) / pairs;
      const double d = -1.0 / (1.0 + std::exp(margin)) / pairs;
      weights[last[std::size_t(2 * p)]] = static_cast<float>(d);
      weights[last[std::size_t(2 * p + 1)]] = static_cast<float>(-d);
    }
    model->backward_weighted(access, 1.0f, weights);

    std::ofstream reward_file(out + "/rewards.txt");
    reward_file << std::setprecision(9);
    for (const double r : rewards) reward_file << r << "\n";
    std::ofstream(out + "/loss.txt") << std::setprecision(9) << loss << "\n";
    write_floats(out + "/grads.f32", grads);
    nlohmann::json tensors = nlohmann::json::array();
    for (const auto& tensor : layout.tensors()) {
      tensors.push_back(
          {{"name", tensor.name}, {"offset", tensor.offset}, {"shape", tensor.shape}});
    }
    std::ofstream(out + "/layout.json") << tensors.dump() << "\n";

    if (!export_dir.empty()) {
      config::TrainingParams params_for_export;
      params_for_export.tokenizer = loaded.tokenizer->name();
      train::export_model_values(layout, loaded.params, params_for_export, export_dir, folder);
    }
  } catch (const std::exception& error) {
    std::cerr << "reward_probe: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
