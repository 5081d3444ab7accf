// nlohmann's SAX events built into a DOM the way its own parser does (a repeated key keeps its
// last value), with a detour for the elements of the streamed containers.
#include "autotrain/core/json_stream.hpp"

#include <cstddef>
#include <utility>

namespace autotrain {
namespace {

using Json = nlohmann::json;

class StreamingDomBuilder final : public nlohmann::json_sax<Json> {
 public:
  explicit StreamingDomBuilder(const std::vector<StreamedContainer>& streamed)
      : streamed_(streamed) {}

  Json release() { return std::move(root_); }
  const std::string& error() const { return error_; }

  bool null() override { return value(Json(nullptr)); }
  bool boolean(bool v) override { return value(Json(v)); }
  bool number_integer(number_integer_t v) override { return value(Json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return value(Json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return value(Json(v)); }
  bool string(string_t& v) override { return value(Json(std::move(v))); }
  bool binary(binary_t& v) override { return value(Json::binary(std::move(v))); }
  bool start_object(std::size_t) override { return open(Json::object()); }
  bool start_array(std::size_t) override { return open(Json::array()); }
  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::detail::exception& error) override {
    error_ = error.what();
    return false;
  }

 private:
  struct Level {
    Json* container;
    bool on_key_path;  // reached from the root through object keys only (path_ holds them)
    bool pushed_key;   // path_ has this container's key
  };

  bool streaming_element() const { return stream_ && stack_.size() == stream_level_; }

  // Where a new value goes: the root, the open container, or (a streamed element) element_.
  Json* place(Json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    if (streaming_element()) {
      element_ = std::move(v);
      element_key_ = stream_->object ? key_ : std::string();
      return &element_;
    }
    Json& parent = *stack_.back().container;
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return &parent.back();
    }
    Json& slot = parent[key_];
    slot = std::move(v);
    return &slot;
  }

  bool value(Json&& v) {
    const bool element = streaming_element();
    place(std::move(v));
    if (element) deliver();
    return true;
  }

  bool open(Json&& empty) {
    const bool root = stack_.empty();
    const bool on_key_path =
        !stream_ && (root || (stack_.back().on_key_path && stack_.back().container->is_object()));
    Json* container = place(std::move(empty));
    const bool pushed_key = on_key_path && !root;
    if (pushed_key) path_.push_back(key_);
    stack_.push_back({container, on_key_path, pushed_key});
    if (on_key_path) {
      for (const StreamedContainer& candidate : streamed_) {
        if (candidate.path == path_ && candidate.object == container->is_object()) {
          stream_ = &candidate;
          stream_level_ = stack_.size();
          break;
        }
      }
    }
    return true;
  }

  bool close() {
    if (stack_.back().pushed_key) path_.pop_back();
    stack_.pop_back();
    if (stream_ && stack_.size() + 1 == stream_level_) {
      stream_ = nullptr;  // the streamed container itself ended
    } else if (streaming_element()) {
      deliver();  // an element that is a container ended
    }
    return true;
  }

  void deliver() {
    stream_->element(element_key_, element_);
    element_ = Json();
  }

  const std::vector<StreamedContainer>& streamed_;
  Json root_;
  std::vector<Level> stack_;
  std::vector<std::string> path_;
  std::string key_;
  std::string error_;
  const StreamedContainer* stream_ = nullptr;
  std::size_t stream_level_ = 0;  // stack_'s size while the streamed container is on top
  Json element_;
  std::string element_key_;
};

}  // namespace

Json parse_json_streaming(std::string_view text, const std::vector<StreamedContainer>& streamed) {
  StreamingDomBuilder builder(streamed);
  if (!Json::sax_parse(text, &builder)) throw JsonSyntaxError(builder.error());
  return builder.release();
}

}  // namespace autotrain
