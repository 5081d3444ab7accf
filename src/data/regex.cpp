#include "regex.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "autotrain/core/error.hpp"

namespace autotrain::data {
namespace {

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

Regex::Regex(std::string_view pattern, std::string_view where)
    : pattern_(pattern), where_(where), compiled_(std::make_unique<Compiled>()) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  compiled_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern_.data()), pattern_.size(),
                                  PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  AT_CHECK(compiled_->code != nullptr, where_, ": cannot compile the regex '", pattern_,
           "' at offset ", offset, ": ", pcre2_message(error));
  compiled_->jit = pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() = default;

void Regex::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& matches) const {
  thread_local ThreadMatchState state;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  // The caller has validated the UTF-8 once for the whole text.
  const uint32_t options = PCRE2_NO_UTF_CHECK;
  while (start < text.size()) {
    const int rc = compiled_->jit ? pcre2_jit_match(compiled_->code, subject, text.size(), start,
                                                    options, state.data, state.context)
                                  : pcre2_match(compiled_->code, subject, text.size(), start,
                                                options, state.data, state.context);
    if (rc == PCRE2_ERROR_NOMATCH) return;
    AT_CHECK(rc >= 0, where_, ": matching the regex '", pattern_, "' failed: ", pcre2_message(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
    const size_t begin = ovector[0];
    const size_t end = ovector[1];
    if (end > begin) {
      matches.emplace_back(begin, end);
      start = end;
      continue;
    }
    // An empty match: step over one whole UTF-8 character and look again.
    start = begin + 1;
    while (start < text.size() && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) ++start;
  }
}

}  // namespace autotrain::data
