#pragma once
// A JSON document read into nlohmann's DOM, except for the containers named by a path of object
// keys, whose elements go to a callback one at a time: a tokenizer.json's vocab and merges are
// hundreds of thousands of entries that a DOM would hold as map nodes and strings only for the
// reader to copy them out (the tokenizer) or look at their ids once (the configuration's vocab
// size) and destroy them: the DOM's parse and destruction were half of loading Qwen3's tokenizer.
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace autotrain {

// The text is not JSON; what() is nlohmann's message (with the byte position).
struct JsonSyntaxError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct StreamedContainer {
  // Object keys from the root ({} is the root itself); only a container of the given kind there
  // is streamed: one of another kind stays in the DOM, where the reader's checks find it.
  std::vector<std::string> path;
  bool object = true;
  // Each element in document order: an object's member (key, value) or an array's element ("",
  // value); a nested value comes as its own small DOM. The DOM keeps the container, empty.
  std::function<void(const std::string& key, nlohmann::json& value)> element;
};

// Parses as nlohmann::json::parse(text) does (strict, no comments), streaming `streamed`.
// Throws JsonSyntaxError; an exception a callback throws propagates.
nlohmann::json parse_json_streaming(std::string_view text,
                                    const std::vector<StreamedContainer>& streamed);

}  // namespace autotrain
