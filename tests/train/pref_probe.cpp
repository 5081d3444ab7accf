// pref_probe KIND BETA POLICY REFERENCE PAIRS OUT: what our CPU model and preference losses
// (train/preference_loss.hpp, model::CausalLM::backward_weighted) compute for one batch of pairs,
// for the PyTorch reference tests/e2e/torch_preference.py to compare with. KIND is dpo or orpo;
// POLICY and REFERENCE are Hugging Face model folders of one shape (REFERENCE is read for dpo
// only). PAIRS holds three lines a pair (prompt, chosen, rejected: space-separated token ids).
// Rows are built as the trainer's (data/preference.hpp's load_pair_rows): row b = prompt + chosen
// of pair b, row B + b = prompt + rejected, padded with 0, only the completion's targets carry
// loss. Writes into OUT:
//   loss.txt     the batch's loss (the mean pair term, plus orpo's NLL mean)
//   metrics.json the rewards and log-probabilities TRL logs (train/preference_loss.hpp)
//   grads.f32    the gradient of that loss by every parameter; layout.json says where
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "autotrain/core/ignore_target.hpp"
#include "autotrain/model/causal_lm.hpp"
#include "autotrain/train/generate.hpp"
#include "autotrain/train/preference_loss.hpp"

namespace {

using autotrain::kIgnoreTarget;

struct Rows {
  int B = 0, T = 0;
  std::vector<std::int32_t> inputs, targets;
};

std::vector<std::int32_t> read_ids(const std::string& line) {
  std::vector<std::int32_t> ids;
  std::istringstream in(line);
  for (std::int32_t id; in >> id;) ids.push_back(id);
  return ids;
}

Rows read_rows(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::int32_t>> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(read_ids(line));
  if (lines.empty() || lines.size() % 3 != 0) throw std::runtime_error(path + ": 3 lines a pair");
  Rows rows;
  rows.B = static_cast<int>(lines.size() / 3);
  for (std::size_t p = 0; p < lines.size(); p += 3) {
    for (int c = 1; c <= 2; ++c) {
      rows.T = std::max(rows.T, static_cast<int>(lines[p].size() + lines[p + c].size()));
    }
  }
  rows.inputs.assign(std::size_t(2 * rows.B * rows.T), 0);
  rows.targets.assign(rows.inputs.size(), kIgnoreTarget);
  for (int b = 0; b < rows.B; ++b) {
    const auto& prompt = lines[std::size_t(3 * b)];
    for (int c = 0; c < 2; ++c) {
      std::vector<std::int32_t> seq = prompt;
      const auto& completion = lines[std::size_t(3 * b + 1 + c)];
      seq.insert(seq.end(), completion.begin(), completion.end());
      const std::size_t row = std::size_t(c * rows.B + b) * std::size_t(rows.T);
      for (std::size_t t = 0; t < seq.size(); ++t) rows.inputs[row + t] = seq[t];
      for (std::size_t t = prompt.size(); t < seq.size(); ++t) rows.targets[row + t - 1] = seq[t];
    }
  }
  return rows;
}

void write_floats(const std::string& path, const std::vector<float>& data) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data.data()),
            static_cast<std::streamsize>(data.size() * 4));
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace autotrain;
  if (argc != 7) {
    std::cerr << "usage: pref_probe dpo|orpo BETA POLICY REFERENCE PAIRS OUT\n";
    return 2;
  }
  try {
    const std::string kind_name = argv[1];
    const auto kind =
        kind_name == "orpo" ? train::PreferenceKind::orpo : train::PreferenceKind::dpo;
    const double beta = std::stod(argv[2]);
    const Rows rows = read_rows(argv[5]);
    const std::string out = argv[6];
    train::LoadedModel policy = train::load_model_folder(argv[3]);
    const model::ParamLayout& layout = *policy.layout;
    const auto model = model::make_causal_lm<float>(layout, 2 * rows.B, rows.T);

    std::vector<double> reference;
    if (kind == train::PreferenceKind::dpo) {
      train::LoadedModel ref = train::load_model_folder(argv[4]);
      model::FlatUnitAccess frozen(*ref.layout, ref.params.data(), nullptr);
      model->forward(frozen, rows.inputs.data(), rows.targets.data());
      for (const auto& logp :
           train::completion_logps(model->losses(), rows.targets, 2 * rows.B, rows.T)) {
        reference.push_back(logp.sum);
      }
    }
    std::vector<float> grads(layout.padded_size(), 0.0f);
    model::FlatUnitAccess access(layout, policy.params.data(), grads.data());
    model->forward(access, rows.inputs.data(), rows.targets.data());
    double chosen_tokens = 0;
    for (int b = 0; b < rows.B; ++b) {
      for (int t = 0; t < rows.T; ++t) {
        chosen_tokens += rows.targets[std::size_t(b * rows.T + t)] != kIgnoreTarget ? 1 : 0;
      }
    }
    std::vector<float> weights(rows.inputs.size());
    train::PreferenceSums sums;
    const train::PreferenceBatch batch{rows.B,       rows.T,    model->losses(),
                                       rows.targets, reference, rows.B};
    train::weigh_preference_batch(kind, beta, batch, 1.0 / rows.B, 1.0 / chosen_tokens, weights,
                                  sums);
    model->backward_weighted(access, 1.0f, weights);

    std::ofstream(out + "/loss.txt") << std::setprecision(12) << sums.loss() << "\n";
    nlohmann::json metrics;
    for (const auto& [name, value] : sums.metrics(kind)) metrics[name] = value;
    std::ofstream(out + "/metrics.json") << metrics.dump() << "\n";
    write_floats(out + "/grads.f32", grads);
    nlohmann::json tensors = nlohmann::json::array();
    for (const auto& tensor : layout.tensors()) {
      tensors.push_back(
          {{"name", tensor.name}, {"offset", tensor.offset}, {"shape", tensor.shape}});
    }
    std::ofstream(out + "/layout.json") << tensors.dump() << "\n";
  } catch (const std::exception& error) {
    std::cerr << "pref_probe: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
