#include "regex.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "autotrain/core/error.hpp"
#include "autotrain/core/strings.hpp"

namespace autotrain::data {
namespace {

// The first window a match looks at, and its first match limit: enough for nearly every match
// of a real tokenizer pattern, small enough that the budget pays for one per byte.
constexpr size_t kFirstWindow = 32;
constexpr uint32_t kFirstMatchLimit = 16;

bool is_continuation_byte(char c) {
  return (static_cast<uint8_t>(c) & 0xC0) == 0x80;
}

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

// Per-thread match state. A JIT stack of 1 MiB: the default 32 KiB overflows on the long
// alternations of tokenizer patterns matched against long runs of one class.
struct ThreadMatchState {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* stack = nullptr;
  ThreadMatchState() {
    data = pcre2_match_data_create(1, nullptr);
    context = pcre2_match_context_create(nullptr);
    stack = pcre2_jit_stack_create(32 << 10, 1 << 20, nullptr);
    AT_CHECK(data && context && stack, "regex: out of memory creating match data");
    pcre2_jit_stack_assign(context, nullptr, stack);
  }
  ~ThreadMatchState() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
  ThreadMatchState(const ThreadMatchState&) = delete;
  ThreadMatchState& operator=(const ThreadMatchState&) = delete;
};

}  // namespace

struct Regex::Compiled {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Compiled() { pcre2_code_free(code); }
};

// The steps one find_all() call may still spend.
struct Regex::Budget {
  uint64_t limit;
  uint64_t spent = 0;
};

Regex::Regex(std::string_view pattern, std::string_view where)
    : pattern_(pattern), where_(where), compiled_(std::make_unique<Compiled>()) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  compiled_->code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern_.data()), pattern_.size(),
                    PCRE2_UTF | PCRE2_UCP | PCRE2_NEVER_BACKSLASH_C, &error, &offset, nullptr);
  AT_CHECK(compiled_->code != nullptr, where_, ": cannot compile the regex '",
           escape_bytes(pattern_), "' at offset ", offset, ": ", pcre2_message(error));
  // A back reference compares text of any length in one step that PCRE2's match limit does
  // not count, so no work budget could bound such a pattern; tokenizers never use one.
  uint32_t backreferences = 0;
  pcre2_pattern_info(compiled_->code, PCRE2_INFO_BACKREFMAX, &backreferences);
  AT_CHECK(backreferences == 0, where_, ": the regex '", escape_bytes(pattern_),
           "' holds a back reference (\\1, \\k<name>), which is not supported: its matching "
           "time cannot be bounded");
  compiled_->jit =
      pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE | PCRE2_JIT_PARTIAL_HARD) == 0;
}

Regex::~Regex() = default;

bool Regex::find_next(std::string_view text, size_t start, Budget& budget, size_t& begin,
                      size_t& end) const {
  thread_local ThreadMatchState state;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t window = kFirstWindow;
  uint32_t match_limit = kFirstMatchLimit;
  while (start < text.size()) {
    // The matcher sees text[0, length): a partial match (one that reached the window's end)
    // is retried with a window twice as large, so the result is that of the whole text.
    size_t length = start + std::min(window, text.size() - start);
    while (length < text.size() && is_continuation_byte(text[length])) ++length;
    budget.spent += (length - start) + match_limit;
    if (budget.spent > budget.limit) {
      throw Error(cat(where_, ": the regex '", escape_bytes(pattern_), "' needs more than ",
                      budget.limit, " steps to split a text of ", text.size(), " bytes (",
                      kWorkPerByte,
                      " per byte are allowed): it backtracks without bound (nested quantifiers, "
                      "backreferences, a repeat that fails at the end), so its time would grow "
                      "faster than the text; fix the pattern in the tokenizer file"));
    }
    const uint32_t options = PCRE2_NO_UTF_CHECK | (length < text.size() ? PCRE2_PARTIAL_HARD : 0);
    pcre2_set_match_limit(state.context, match_limit);
    const int rc = compiled_->jit ? pcre2_jit_match(compiled_->code, subject, length, start,
                                                    options, state.data, state.context)
                                  : pcre2_match(compiled_->code, subject, length, start, options,
                                                state.data, state.context);
    if (rc == PCRE2_ERROR_PARTIAL) {
      window *= 2;
    } else if (rc == PCRE2_ERROR_MATCHLIMIT) {
      match_limit = match_limit > UINT32_MAX / 4 ? UINT32_MAX : match_limit * 4;
    } else if (rc == PCRE2_ERROR_NOMATCH) {
      if (length == text.size()) return false;
      start = length;  // no match starts in the window (none even reached its end)
    } else {
      AT_CHECK(rc >= 0, where_, ": matching the regex '", escape_bytes(pattern_),
               "' failed: ", pcre2_message(rc));
      const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
      begin = ovector[0];
      end = ovector[1];
      return true;
    }
  }
  return false;
}

void Regex::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& matches) const {
  Budget budget{kWorkBase + kWorkPerByte * text.size()};
  size_t start = 0;
  size_t begin = 0;
  size_t end = 0;
  while (start < text.size() && find_next(text, start, budget, begin, end)) {
    if (end > begin) {
      matches.emplace_back(begin, end);
      start = end;
      continue;
    }
    // An empty match: step over one whole UTF-8 character and look again.
    start = begin + 1;
    while (start < text.size() && is_continuation_byte(text[start])) ++start;
  }
}

}  // namespace autotrain::data
