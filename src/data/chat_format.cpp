#include "autotrain/data/chat_format.hpp"

#include <algorithm>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/data/chat_template.hpp"

namespace autotrain::data {
namespace {

// U+E000 and U+E001 (private use) in UTF-8: never whitespace, so trim and strip keep them.
constexpr std::string_view kOpen = "\xEE\x80\x80";
constexpr std::string_view kClose = "\xEE\x80\x81";

// Where the loss-carrying parts of a rendering lie: [begin, end) byte ranges.
using Spans = std::vector<std::pair<size_t, size_t>>;

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

// The assistant contents between the markers of `marked`, found again in `plain`: exactly when
// removing the markers gives `plain`, else by searching each trimmed content in order.
Spans find_contents(std::string_view marked, std::string_view plain, const std::string& where) {
  Spans inner;  // in `marked`, between the markers
  std::string unmarked;
  for (size_t at = 0;;) {
    const size_t open = marked.find(kOpen, at);
    const size_t close = marked.find(kClose, at);
    if (open == std::string_view::npos && close == std::string_view::npos) {
      unmarked += marked.substr(at);
      break;
    }
    const size_t next_close =
        open == std::string_view::npos ? std::string_view::npos : marked.find(kClose, open);
    const size_t next_open =
        open == std::string_view::npos ? open : marked.find(kOpen, open + kOpen.size());
    AT_CHECK(open < close && next_close != std::string_view::npos && next_close < next_open, where,
             ": train_on_completions_only cannot find the assistant turns in what the chat "
             "template renders (the template rewrites or splits their content, e.g. moving a "
             "<think> block); train on the whole text, or give the content in the form the "
             "template keeps as it is");
    unmarked += marked.substr(at, open - at);
    const size_t begin = unmarked.size();
    unmarked += marked.substr(open + kOpen.size(), next_close - open - kOpen.size());
    inner.emplace_back(begin, unmarked.size());
    at = next_close + kClose.size();
  }
  if (unmarked == plain) return inner;
  // The template trimmed something: `plain` is `unmarked` less at most `slack` bytes, so a
  // content starts in `plain` at most `slack` bytes before it does in `unmarked`.
  const size_t slack = unmarked.size() > plain.size() ? unmarked.size() - plain.size() : 0;
  Spans found;
  size_t cursor = 0;
  for (const auto& [begin, end] : inner) {
    const std::string_view untrimmed = std::string_view(unmarked).substr(begin, end - begin);
    const std::string_view content = trimmed(untrimmed);
    if (content.empty()) continue;
    const size_t in_unmarked = begin + static_cast<size_t>(content.data() - untrimmed.data());
    const size_t from = std::max(cursor, in_unmarked > slack ? in_unmarked - slack : 0);
    const size_t at = plain.find(content, from);
    AT_CHECK(at != std::string_view::npos, where,
             ": train_on_completions_only cannot find an assistant turn's content in what the "
             "chat template renders (the template changes it beyond trimming)");
    found.emplace_back(at, at + content.size());
    cursor = at + content.size();
  }
  return found;
}

}  // namespace

ChatFormatter::ChatFormatter(std::string_view chat_template, const Tokenizer& tokenizer) {
  const ChatSettings settings = tokenizer.chat_settings();
  bos_token_ = settings.bos_token;
  eos_token_ = settings.eos_token;
  if (chat_template == "tokenizer") {
    AT_CHECK(!settings.chat_template.empty(), "chat_template tokenizer: the tokenizer ",
             tokenizer.name(),
             " has no chat template (no chat_template in its tokenizer_config.json, no "
             "chat_template.jinja); use chatml or zephyr, or a tokenizer that has one");
    source_ = settings.chat_template;
    origin_ = settings.origin;
    template_ = std::make_unique<ChatTemplate>(ChatTemplate::parse(source_, origin_));
  } else {
    template_ = std::make_unique<ChatTemplate>(ChatTemplate::builtin(chat_template));
    source_ = template_->source();
    origin_ = cat("autotrain's built-in ", chat_template, " template");
    // The tokenizer's own special tokens where it has them, else those AutoTrain sets.
    const ChatContext builtin = ChatTemplate::builtin_context(chat_template);
    if (bos_token_.empty()) bos_token_ = builtin.bos_token.value_or("");
    if (eos_token_.empty()) eos_token_ = builtin.eos_token.value_or("");
    if (chat_template == "chatml") turn_ends_.push_back("<|im_end|>");
  }
  if (!eos_token_.empty()) turn_ends_.push_back(eos_token_);
  for (const TokenId id : tokenizer.stop_tokens()) {
    const std::string spelling = tokenizer.decode(std::vector<TokenId>{id});
    if (!spelling.empty()) turn_ends_.push_back(spelling);
  }
  // The longest spelling first, where one is the start of another.
  std::sort(turn_ends_.begin(), turn_ends_.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
}

ChatFormatter::~ChatFormatter() = default;
ChatFormatter::ChatFormatter(ChatFormatter&&) noexcept = default;
ChatFormatter& ChatFormatter::operator=(ChatFormatter&&) noexcept = default;

std::vector<ChatSegment> ChatFormatter::render(const nlohmann::ordered_json& messages,
                                               bool completions_only,
                                               const std::string& where) const {
  ChatContext context;
  if (!bos_token_.empty()) context.bos_token = bos_token_;
  if (!eos_token_.empty()) context.eos_token = eos_token_;
  std::string plain;
  try {
    plain = template_->render(messages, context);
  } catch (const std::exception& error) {
    throw Error(cat(where, ": ", error.what()));
  }
  if (!completions_only) return {{std::move(plain), true}};
  AT_CHECK(plain.find(kOpen) == std::string::npos && plain.find(kClose) == std::string::npos, where,
           ": the conversation holds U+E000 or U+E001, which completion-only loss uses as markers");

  nlohmann::ordered_json marked_messages = messages;
  for (auto& message : marked_messages) {
    if (message.value("role", "") != "assistant" || !message.contains("content") ||
        !message["content"].is_string())
      continue;
    message["content"] = cat(kOpen, message["content"].get<std::string>(), kClose);
  }
  const std::string marked = template_->render(marked_messages, context);
  Spans spans = find_contents(marked, plain, where);

  std::vector<ChatSegment> segments;
  size_t at = 0;
  for (auto [begin, end] : spans) {
    for (const std::string& turn_end : turn_ends_) {
      if (std::string_view(plain).substr(end).starts_with(turn_end)) {
        end += turn_end.size();
        break;
      }
    }
    if (begin > at) segments.push_back({plain.substr(at, begin - at), false});
    if (end > begin) segments.push_back({plain.substr(begin, end - begin), true});
    at = end;
  }
  if (at < plain.size()) segments.push_back({plain.substr(at), false});
  return segments;
}

}  // namespace autotrain::data
