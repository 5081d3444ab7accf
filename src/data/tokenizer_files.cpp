#include "tokenizer_files.hpp"

#include <fstream>

#include "autotrain/core/error.hpp"
#include "autotrain/core/json_stream.hpp"
#include "pipeline_tokenizer.hpp"
#include "tokenizer_json.hpp"

namespace autotrain::data {
namespace {

namespace fs = std::filesystem;
using tokenizer_json::Json;
using tokenizer_json::path;

std::string read_text(const fs::path& file, const char* what) {
  std::ifstream in(file, std::ios::binary);
  AT_CHECK(in, "cannot open ", what, " ", file.string());
  std::string text;
  in.seekg(0, std::ios::end);
  const auto size = in.tellg();
  AT_CHECK(size >= 0, "cannot read ", what, " ", file.string());
  text.resize(static_cast<size_t>(size));
  in.seekg(0);
  in.read(text.data(), size);
  AT_CHECK(in, "cannot read ", what, " ", file.string());
  return text;
}

// Parsed from memory (nlohmann's stream reader is several times slower on a 10 MB file); the
// containers in `streamed` go to their callbacks instead of the DOM.
Json read_json(const fs::path& file, const char* what,
               const std::vector<StreamedContainer>& streamed = {}) {
  const std::string text = read_text(file, what);
  try {
    return parse_json_streaming(text, streamed);
  } catch (const JsonSyntaxError& error) {
    throw Error(cat(file.string(), ": not valid JSON (", error.what(),
                    "); is the file complete? Download it again"));
  }
}

// merges[index] of the model at `where`.
std::pair<std::string, std::string> parse_merge(const Json& merge, const std::string& where,
                                                size_t index) {
  if (merge.is_string()) {
    const std::string& text = merge.get_ref<const std::string&>();
    const size_t space = text.find(' ');
    AT_CHECK(space != std::string::npos && space > 0 && space + 1 < text.size() &&
                 text.find(' ', space + 1) == std::string::npos,
             path(path(where, "merges"), index), ": expected \"left right\", got \"", text, "\"");
    return {text.substr(0, space), text.substr(space + 1)};
  }
  AT_CHECK(merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string(),
           path(path(where, "merges"), index), ": expected \"left right\" or [\"left\", ",
           "\"right\"], got ", merge.dump());
  return {merge[0].get<std::string>(), merge[1].get<std::string>()};
}

// A BPE model's vocab and merges as BpeModel takes them, streamed out of the file rather than
// copied out of a DOM. An entry's error waits in vocab_error / merges_error for make_model, which
// checks the model's type and options first, as it would have with the DOM.
struct BpeTables {
  TokenMap vocab;
  std::vector<std::pair<std::string, std::string>> merges;
  std::string vocab_error, merges_error;  // the first bad entry's

  // `where` names the model ("tokenizer.json: model") for errors.
  StreamedContainer vocab_stream(std::vector<std::string> at, const std::string& where) {
    return {std::move(at), true, [this, where](const std::string& spelling, Json& id) {
              if (!vocab_error.empty()) return;
              if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
                  id.get<int64_t>() >= tokenizer_json::kMaxTokenIds) {
                vocab_error =
                    cat(path(where, "vocab"), ": id of '", spelling, "' must be an integer in [0, ",
                        tokenizer_json::kMaxTokenIds, "), got ", id.dump());
                return;
              }
              vocab.insert_or_assign(spelling, id.get<TokenId>());  // a repeated key: the last
            }};
  }
  StreamedContainer merges_stream(std::vector<std::string> at, const std::string& where) {
    return {std::move(at), false, [this, where](const std::string&, Json& merge) {
              if (!merges_error.empty()) return;
              try {
                merges.push_back(parse_merge(merge, where, merges.size()));
              } catch (const Error& error) {
                merges_error = error.what();
              }
            }};
  }
};

// `model` is the model object with its vocab and merges left empty: they are in `tables`.
std::unique_ptr<BpeModel> make_model(const Json& model, BpeTables tables, bool byte_level,
                                     const std::string& where) {
  const std::string type = tokenizer_json::type_of(model, where);
  if (type != "BPE") tokenizer_json::unsupported(where, "model", type, "BPE");
  const auto dropout = model.find("dropout");
  AT_CHECK(dropout == model.end() || dropout->is_null() ||
               (dropout->is_number() && dropout->get<double>() == 0),
           path(where, "dropout"), ": BPE dropout ", dropout->dump(),
           " is not supported (tokenizing for training must be deterministic)");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const auto value = tokenizer_json::optional_string(model, key, where);
    AT_CHECK(!value || value->empty(), path(where, key), ": '", *value,
             "' is not supported (autotrain implements BPE without subword affixes)");
  }
  AT_CHECK(tokenizer_json::member(model, "vocab", where).is_object(), path(where, "vocab"),
           ": expected an object token -> id");
  AT_CHECK(tables.vocab_error.empty(), tables.vocab_error);
  AT_CHECK(tokenizer_json::member(model, "merges", where).is_array(), path(where, "merges"),
           ": expected a list");
  AT_CHECK(tables.merges_error.empty(), tables.merges_error);
  BpeOptions options;
  options.byte_level = byte_level;
  options.byte_fallback = tokenizer_json::bool_member(model, "byte_fallback", false, where);
  options.ignore_merges = tokenizer_json::bool_member(model, "ignore_merges", false, where);
  options.fuse_unk = tokenizer_json::bool_member(model, "fuse_unk", false, where);
  options.unk_token = tokenizer_json::optional_string(model, "unk_token", where);
  return std::make_unique<BpeModel>(std::move(tables.vocab), tables.merges, std::move(options),
                                    where);
}

std::vector<AddedToken> make_added_tokens(const Json& json, const std::string& where) {
  std::vector<AddedToken> tokens;
  if (json.is_null()) return tokens;
  AT_CHECK(json.is_array(), where, ": expected a list");
  for (size_t i = 0; i < json.size(); ++i) {
    const std::string at = path(where, i);
    const Json& entry = json[i];
    AddedToken token;
    token.id = tokenizer_json::int_member(entry, "id", -1, at);
    AT_CHECK(token.id >= 0, at, ": missing 'id'");
    AT_CHECK(token.id < tokenizer_json::kMaxTokenIds, path(at, "id"), ": ", token.id,
             " is not below ", tokenizer_json::kMaxTokenIds);
    token.content = tokenizer_json::string_member(entry, "content", at);
    token.special = tokenizer_json::bool_member(entry, "special", false, at);
    token.single_word = tokenizer_json::bool_member(entry, "single_word", false, at);
    token.lstrip = tokenizer_json::bool_member(entry, "lstrip", false, at);
    token.rstrip = tokenizer_json::bool_member(entry, "rstrip", false, at);
    token.normalized = tokenizer_json::bool_member(entry, "normalized", !token.special, at);
    tokens.push_back(std::move(token));
  }
  return tokens;
}

// The ids of the special tokens the single-sequence template puts before and after $A.
DocumentFrame make_template_frame(const Json& json, const std::string& where) {
  DocumentFrame frame;
  if (json.is_null()) return frame;
  const std::string type = tokenizer_json::type_of(json, where);
  if (type == "ByteLevel") return frame;  // only trims offsets
  if (type == "Sequence") {
    const Json& list = tokenizer_json::member(json, "processors", where);
    AT_CHECK(list.is_array(), path(where, "processors"), ": expected a list");
    for (size_t i = 0; i < list.size(); ++i) {
      const DocumentFrame step = make_template_frame(list[i], path(path(where, "processors"), i));
      frame.prefix.insert(frame.prefix.begin(), step.prefix.begin(), step.prefix.end());
      frame.suffix.insert(frame.suffix.end(), step.suffix.begin(), step.suffix.end());
    }
    return frame;
  }
  if (type != "TemplateProcessing") {
    tokenizer_json::unsupported(where, "post-processor", type,
                                "TemplateProcessing, ByteLevel, Sequence");
  }
  const Json& single = tokenizer_json::member(json, "single", where);
  const Json& specials = tokenizer_json::member(json, "special_tokens", where);
  AT_CHECK(single.is_array(), path(where, "single"), ": expected a list");
  bool seen_sequence = false;
  for (size_t i = 0; i < single.size(); ++i) {
    const std::string at = path(path(where, "single"), i);
    if (single[i].contains("Sequence")) {
      seen_sequence = true;
      continue;
    }
    const std::string name = tokenizer_json::string_member(
        tokenizer_json::member(single[i], "SpecialToken", at), "id", path(at, "SpecialToken"));
    const std::string special_at = path(path(where, "special_tokens"), name);
    const Json& ids = tokenizer_json::member(
        tokenizer_json::member(specials, name.c_str(), path(where, "special_tokens")), "ids",
        special_at);
    AT_CHECK(ids.is_array(), path(special_at, "ids"), ": expected a list of ids");
    for (const auto& id : ids) {
      AT_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0 &&
                   id.get<int64_t>() < tokenizer_json::kMaxTokenIds,
               path(special_at, "ids"), ": expected ids in [0, ", tokenizer_json::kMaxTokenIds,
               "), got ", id.dump());
      (seen_sequence ? frame.suffix : frame.prefix).push_back(id.get<TokenId>());
    }
  }
  return frame;
}

// tokenizer_config.json's bos_token / eos_token: a string, or an AddedToken object.
std::optional<std::string> special_token_name(const Json& config, const char* key,
                                              const std::string& where) {
  if (!config.is_object()) return {};
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return {};
  if (it->is_object()) return tokenizer_json::string_member(*it, "content", path(where, key));
  AT_CHECK(it->is_string(), path(where, key), ": expected a string, an object or null");
  return it->get<std::string>();
}

std::optional<TokenId> find_id(const std::string& spelling, const TokenizerParts& parts) {
  for (const auto& token : parts.added_tokens)
    if (token.content == spelling) return token.id;
  return parts.model->find(spelling);
}

TokenId id_of(const std::string& spelling, const TokenizerParts& parts, const std::string& where) {
  const auto id = find_id(spelling, parts);
  AT_CHECK(id.has_value(), where, ": '", spelling, "' is not a token of the vocabulary");
  return *id;
}

// The chat template: chat_template.jinja (transformers >= 4.43 saves it apart), else
// tokenizer_config.json's chat_template, a string or a list of {name, template} (the one named
// "default" is the chat template).
void read_chat_template(TokenizerParts& parts, const Json& config, const fs::path& folder) {
  const fs::path jinja_file = folder / "chat_template.jinja";
  if (fs::exists(jinja_file)) {
    std::ifstream in(jinja_file, std::ios::binary);
    AT_CHECK(in, "cannot open ", jinja_file.string());
    parts.chat.chat_template.assign(std::istreambuf_iterator<char>(in), {});
    parts.chat.origin = jinja_file.string();
    parts.files.push_back(jinja_file);
    return;
  }
  const auto it = config.is_object() ? config.find("chat_template") : config.end();
  if (!config.is_object() || it == config.end() || it->is_null()) return;
  const std::string where = cat((folder / "tokenizer_config.json").string(), " chat_template");
  if (it->is_string()) {
    parts.chat.chat_template = it->get<std::string>();
  } else {
    AT_CHECK(it->is_array(), where, ": expected a string or a list of {name, template}, got ",
             it->type_name());
    for (const auto& entry : *it) {
      if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") &&
          entry["template"].is_string())
        parts.chat.chat_template = entry["template"].get<std::string>();
    }
    AT_CHECK(!parts.chat.chat_template.empty(), where,
             ": the list has no template named \"default\"");
  }
  parts.chat.origin = where;
}

// tokenizer_config.json and generation_config.json: the end-of-text token, the ids that end
// generation, add_bos_token / add_eos_token applied to the template, and the chat settings.
void apply_configs(TokenizerParts& parts, const fs::path& folder) {
  const fs::path config_file = folder / "tokenizer_config.json";
  const fs::path generation_file = folder / "generation_config.json";
  Json config;
  if (fs::exists(config_file)) {
    config = read_json(config_file, "tokenizer config");
    parts.files.push_back(config_file);
  }
  const std::string config_where = config_file.string();
  if (auto eos = special_token_name(config, "eos_token", config_where))
    parts.eot = id_of(*eos, parts, cat(config_where, ": eos_token"));
  // A pad_token the vocabulary lacks is left unset, as transformers leaves its id None.
  if (auto pad = special_token_name(config, "pad_token", config_where))
    parts.pad = find_id(*pad, parts);
  const auto bos = special_token_name(config, "bos_token", config_where);
  parts.chat.bos_token = bos.value_or("");
  if (auto eos = special_token_name(config, "eos_token", config_where)) parts.chat.eos_token = *eos;
  read_chat_template(parts, config, folder);
  if (bos && tokenizer_json::bool_member(config, "add_bos_token", false, config_where)) {
    const TokenId bos_id = id_of(*bos, parts, cat(config_where, ": bos_token"));
    auto& prefix = parts.template_frame.prefix;
    if (prefix.empty() || prefix.front() != bos_id) prefix.insert(prefix.begin(), bos_id);
  }
  if (parts.eot >= 0 && tokenizer_json::bool_member(config, "add_eos_token", false, config_where)) {
    auto& suffix = parts.template_frame.suffix;
    if (suffix.empty() || suffix.back() != parts.eot) suffix.push_back(parts.eot);
  }
  if (fs::exists(generation_file)) {
    const Json generation = read_json(generation_file, "generation config");
    parts.files.push_back(generation_file);
    const auto it = generation.find("eos_token_id");
    if (it != generation.end() && !it->is_null()) {
      const Json list = it->is_array() ? *it : Json::array({*it});
      for (const auto& id : list) {
        AT_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0 &&
                     id.get<int64_t>() < tokenizer_json::kMaxTokenIds,
                 generation_file.string(), ": eos_token_id: expected an id or a list of ids, got ",
                 it->dump());
        parts.stop_tokens.push_back(id.get<TokenId>());
      }
      if (parts.eot < 0 && !parts.stop_tokens.empty()) parts.eot = parts.stop_tokens.front();
    }
  }
  if (parts.eot >= 0 && std::find(parts.stop_tokens.begin(), parts.stop_tokens.end(), parts.eot) ==
                            parts.stop_tokens.end())
    parts.stop_tokens.insert(parts.stop_tokens.begin(), parts.eot);
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer_json(const fs::path& file,
                                               const TokenizerOptions& options) {
  const std::string where = file.string() + ":";
  BpeTables tables;
  const Json json = read_json(file, "tokenizer",
                              {tables.vocab_stream({"model", "vocab"}, where + " model"),
                               tables.merges_stream({"model", "merges"}, where + " model")});
  AT_CHECK(json.is_object(), where, " expected a JSON object (a Hugging Face tokenizer.json)");
  const auto component = [&](const char* key) -> const Json& {
    static const Json null;
    const auto it = json.find(key);
    return it == json.end() ? null : *it;
  };
  TokenizerParts parts;
  parts.name = file.string();
  parts.files = {file};
  parts.parse_special_tokens = options.parse_special_tokens;
  parts.normalizer = make_normalizer(component("normalizer"), where + " normalizer");
  parts.pre_tokenizer = make_pre_tokenizer(component("pre_tokenizer"), where + " pre_tokenizer");
  const bool byte_level = parts.pre_tokenizer && parts.pre_tokenizer->is_byte_level();
  parts.model = make_model(tokenizer_json::member(json, "model", where), std::move(tables),
                           byte_level, where + " model");
  parts.decoder = make_decoder(component("decoder"), where + " decoder");
  parts.added_tokens = make_added_tokens(component("added_tokens"), where + " added_tokens");
  parts.template_frame =
      make_template_frame(component("post_processor"), where + " post_processor");
  apply_configs(parts, file.parent_path());
  return make_pipeline_tokenizer(std::move(parts));
}

std::unique_ptr<Tokenizer> load_gpt2_tokenizer(const fs::path& dir,
                                               const TokenizerOptions& options) {
  const fs::path encoder_file = dir / "encoder.json";
  const fs::path merges_file = dir / "vocab.bpe";
  AT_CHECK(fs::exists(encoder_file), "cannot open the GPT-2 vocabulary ", encoder_file.string(),
           " (set AUTOTRAIN_DATA_DIR to the folder holding gpt2/encoder.json)");
  const std::string where = merges_file.string() + ":";
  BpeTables tables;
  // An object streams into tables.vocab and leaves {}; anything else stays for make_model to name.
  Json vocab = read_json(encoder_file, "GPT-2 vocabulary", {tables.vocab_stream({}, where)});
  TokenizerParts parts;
  parts.name = "gpt2";
  parts.files = {encoder_file, merges_file};
  parts.parse_special_tokens = options.parse_special_tokens;
  parts.pre_tokenizer = make_gpt2_pre_tokenizer();
  parts.decoder = make_gpt2_decoder();
  std::ifstream merges_in(merges_file);
  AT_CHECK(merges_in, "cannot open the GPT-2 merges ", merges_file.string());
  std::string line;
  while (std::getline(merges_in, line) && tables.merges_error.empty()) {
    if (line.empty() || line.starts_with("#version")) continue;
    try {
      tables.merges.push_back(parse_merge(Json(std::move(line)), where, tables.merges.size()));
    } catch (const Error& error) {
      tables.merges_error = error.what();
    }
  }
  parts.model =
      make_model(Json{{"type", "BPE"}, {"vocab", std::move(vocab)}, {"merges", Json::array()}},
                 std::move(tables), true, where);
  const auto eot = parts.model->find("<|endoftext|>");
  AT_CHECK(eot.has_value(), encoder_file.string(), ": has no <|endoftext|> token");
  parts.added_tokens = {AddedToken{*eot, "<|endoftext|>", true, false, false, false, false}};
  parts.eot = *eot;
  parts.stop_tokens = {*eot};
  parts.eot_before_documents = true;
  parts.chat.bos_token = parts.chat.eos_token = "<|endoftext|>";
  return make_pipeline_tokenizer(std::move(parts));
}

}  // namespace autotrain::data
