#include "lexer.hpp"

#include <array>
#include <cctype>

#include "autotrain/core/error.hpp"
#include "autotrain/core/utf8.hpp"
#include "strings.hpp"

namespace autotrain::data::jinja {

void fail_at(const std::string& origin, int line, const std::string& message) {
  throw Error(cat(origin, " line ", line, ": ", message));
}

std::string describe(const Token& token) {
  switch (token.type) {
    case TokenType::text:
      return "template text";
    case TokenType::variable_begin:
      return "'{{'";
    case TokenType::variable_end:
      return "'}}'";
    case TokenType::block_begin:
      return "'{%'";
    case TokenType::block_end:
      return "'%}'";
    case TokenType::string:
      return "a string";
    case TokenType::end:
      return "the end of the template";
    default:
      return "'" + token.value + "'";
  }
}

namespace {

// jinja2's newline handling: "\r\n" and "\r" read as "\n", and one trailing newline is dropped
// (keep_trailing_newline is false).
std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// Python's str.rstrip() of template text before a `{%-` tag.
void strip_trailing_space(std::string& text) {
  text = strip(text, std::nullopt, false, true);
}

bool all_space(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const utf8::Decoded d = utf8::decode_utf8(text, pos);
    if (!is_python_space(d.code_point)) return false;
    pos += d.length;
  }
  return true;
}

bool is_name_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string encode(uint32_t code_point) {
  std::string out;
  auto byte = [&](uint32_t b) { out += static_cast<char>(b); };
  if (code_point < 0x80) {
    byte(code_point);
  } else if (code_point < 0x800) {
    byte(0xC0 | (code_point >> 6)), byte(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    byte(0xE0 | (code_point >> 12)), byte(0x80 | ((code_point >> 6) & 0x3F));
    byte(0x80 | (code_point & 0x3F));
  } else {
    byte(0xF0 | (code_point >> 18)), byte(0x80 | ((code_point >> 12) & 0x3F));
    byte(0x80 | ((code_point >> 6) & 0x3F)), byte(0x80 | (code_point & 0x3F));
  }
  return out;
}

class Lexer {
 public:
  Lexer(std::string source, const std::string& origin) : src_(std::move(source)), origin_(origin) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      const size_t open = find_tag();
      if (open == std::string::npos) {
        add_text(src_.substr(pos_));
        advance(src_.size() - pos_);
        break;
      }
      lex_tag(open);
    }
    tokens_.push_back({TokenType::end, "", line_});
    return std::move(tokens_);
  }

 private:
  [[noreturn]] void fail(int line, const std::string& message) const {
    fail_at(origin_, line, message);
  }

  bool at(std::string_view text) const { return src_.compare(pos_, text.size(), text) == 0; }

  // Advances over `n` bytes of the source, counting lines.
  void advance(size_t n) {
    for (size_t end = pos_ + n; pos_ < end; ++pos_)
      if (src_[pos_] == '\n') ++line_;
  }

  void skip_space() {
    while (pos_ < src_.size()) {
      const utf8::Decoded d = utf8::decode_utf8(src_, pos_);
      if (!is_python_space(d.code_point)) break;
      advance(d.length);
    }
  }

  size_t find_tag() const {
    for (size_t i = src_.find('{', pos_); i != std::string::npos; i = src_.find('{', i + 1)) {
      const char next = i + 1 < src_.size() ? src_[i + 1] : '\0';
      if (next == '{' || next == '%' || next == '#') return i;
    }
    return std::string::npos;
  }

  // Template text from pos_ up to `open`, with the whitespace rules of the tag at `open`.
  void lex_tag(size_t open) {
    const char kind = src_[open + 1];
    const char sign = open + 2 < src_.size() ? src_[open + 2] : '\0';
    std::string text = src_.substr(pos_, open - pos_);
    if (sign == '-') {
      strip_trailing_space(text);
    } else if (sign != '+' && kind != '{') {
      // lstrip_blocks: only whitespace between the line's start and the tag.
      const size_t line_start = text.rfind('\n') + 1;  // 0 when npos
      if ((line_start > 0 || line_starting_) &&
          all_space(std::string_view(text).substr(line_start)))
        text.resize(line_start);
    }
    add_text(std::move(text));
    advance(open - pos_);
    const int tag_line = line_;
    advance(sign == '-' || sign == '+' ? 3 : 2);
    if (kind == '#') {
      lex_comment(tag_line);
    } else {
      tokens_.push_back({kind == '{' ? TokenType::variable_begin : TokenType::block_begin,
                         kind == '{' ? "{{" : "{%", tag_line});
      lex_tag_body(kind, tag_line);
    }
  }

  // Template text starting at pos_ (which the caller then advances over).
  void add_text(std::string text) {
    if (!text.empty()) tokens_.push_back({TokenType::text, std::move(text), line_});
  }

  void lex_comment(int tag_line) {
    for (;;) {
      if (pos_ >= src_.size())
        fail(tag_line, "the comment opened here is not closed (missing \"#}\")");
      if (at("+#}") || at("-#}") || at("#}")) break;
      advance(1);
    }
    close_tag(src_[pos_] == '#' ? '\0' : src_[pos_], true);
  }

  // After a tag's closing delimiter (`sign` its '-' or '+', or '\0'): trim_blocks for blocks and
  // comments, `-` strips all whitespace; remembers whether the next text starts a line.
  void close_tag(char sign, bool block) {
    advance(sign ? 3 : 2);
    if (sign == '-') {
      const size_t before = pos_;
      skip_space();
      line_starting_ = pos_ > before && src_[pos_ - 1] == '\n';
    } else if (sign == '\0' && block && pos_ < src_.size() && src_[pos_] == '\n') {
      advance(1);
      line_starting_ = true;
    } else {
      line_starting_ = false;
    }
  }

  // Tokens up to the `}}` or `%}` that closes the tag (outside brackets).
  void lex_tag_body(char kind, int tag_line) {
    const bool block = kind == '%';
    const std::string end = block ? "%}" : "}}";
    for (;;) {
      skip_space();
      if (pos_ >= src_.size())
        fail(tag_line, cat("the \"", block ? "{%" : "{{",
                           "\" opened here is not closed (missing \"", end, "\")"));
      if (brackets_.empty()) {
        const bool plus = block && at("+%}");
        if (plus || at("-" + end) || at(end)) {
          tokens_.push_back({block ? TokenType::block_end : TokenType::variable_end, end, line_});
          close_tag(plus ? '+' : src_[pos_] == '-' ? '-' : '\0', block);
          return;
        }
      }
      lex_token();
    }
  }

  void lex_token() {
    const char c = src_[pos_];
    if (is_name_start(c)) {
      const size_t begin = pos_;
      while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
      tokens_.push_back({TokenType::name, src_.substr(begin, pos_ - begin), line_});
    } else if (is_digit(c)) {
      lex_number();
    } else if (c == '\'' || c == '"') {
      lex_string();
    } else {
      lex_operator();
    }
  }

  // Digits with single underscores between them, from pos_; "" when there are none.
  std::string digits() {
    std::string out;
    while (pos_ < src_.size()) {
      if (is_digit(src_[pos_])) {
        out += src_[pos_++];
      } else if (src_[pos_] == '_' && !out.empty() && pos_ + 1 < src_.size() &&
                 is_digit(src_[pos_ + 1])) {
        ++pos_;
      } else {
        break;
      }
    }
    return out;
  }

  void lex_number() {
    // jinja2 reads no fraction after a '.' (`messages.0.content` is two subscripts).
    const bool after_dot = pos_ > 0 && src_[pos_ - 1] == '.';
    std::string number = digits();
    bool is_float = false;
    if (!after_dot && at(".") && pos_ + 1 < src_.size() && is_digit(src_[pos_ + 1])) {
      ++pos_;
      number += "." + digits();
      is_float = true;
    }
    if (!after_dot && (at("e") || at("E"))) {
      const size_t mark = pos_;
      ++pos_;
      std::string exponent = (at("+") || at("-")) ? std::string(1, src_[pos_++]) : "";
      const std::string exponent_digits = digits();
      if (exponent_digits.empty()) {
        pos_ = mark;
      } else {
        number += "e" + exponent + exponent_digits;
        is_float = true;
      }
    }
    tokens_.push_back({is_float ? TokenType::floating : TokenType::integer, number, line_});
  }

  void lex_string() {
    const int start_line = line_;
    const char quote = src_[pos_];
    advance(1);
    std::string value;
    for (;;) {
      if (pos_ >= src_.size()) fail(start_line, "unterminated string literal");
      const char c = src_[pos_];
      if (c == quote) break;
      if (c == '\\') {
        lex_escape(value, start_line);
      } else {
        value += c;
        advance(1);
      }
    }
    advance(1);
    tokens_.push_back({TokenType::string, std::move(value), start_line});
  }

  // Python's string escapes (jinja2 decodes literals with "unicode-escape"); an unknown escape
  // keeps its backslash, as Python does.
  void lex_escape(std::string& value, int start_line) {
    advance(1);
    if (pos_ >= src_.size()) fail(start_line, "unterminated string literal");
    const char c = src_[pos_];
    advance(1);
    static constexpr std::string_view kSimple = "\\'\"abfnrtv";
    static constexpr std::string_view kDecoded = "\\'\"\a\b\f\n\r\t\v";
    if (const size_t i = kSimple.find(c); i != std::string_view::npos) {
      value += kDecoded[i];
    } else if (c == '\n') {
      // A backslash at the end of a line continues the literal.
    } else if (c >= '0' && c <= '7') {
      uint32_t code = static_cast<uint32_t>(c - '0');
      for (int n = 1; n < 3 && pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '7'; ++n)
        code = code * 8 + static_cast<uint32_t>(src_[pos_++] - '0');
      value += encode(code);
    } else if (c == 'x' || c == 'u' || c == 'U') {
      value += encode(hex_escape(c == 'x' ? 2 : c == 'u' ? 4 : 8, c, start_line));
    } else if (c == 'N') {
      fail(start_line, "\\N{...} escapes are not supported");
    } else {
      value += '\\';
      value += c;
    }
  }

  uint32_t hex_escape(int length, char kind, int start_line) {
    uint32_t code = 0;
    for (int i = 0; i < length; ++i) {
      const int digit = pos_ < src_.size() ? hex_value(src_[pos_]) : -1;
      if (digit < 0) fail(start_line, cat("truncated \\", kind, " escape in a string literal"));
      code = code * 16 + static_cast<uint32_t>(digit);
      ++pos_;
    }
    if (code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF))
      fail(start_line, cat("the escape \\", kind, " gives no Unicode character"));
    return code;
  }

  void lex_operator() {
    static constexpr std::array<std::string_view, 6> kPairs = {"//", "**", "==", "!=", ">=", "<="};
    for (const std::string_view op : kPairs) {
      if (at(op)) {
        tokens_.push_back({TokenType::op, std::string(op), line_});
        pos_ += 2;
        return;
      }
    }
    const char c = src_[pos_];
    static constexpr std::string_view kSingle = "+-/*%~[](){}><=.:|,;";
    if (kSingle.find(c) == std::string_view::npos) {
      const utf8::Decoded d = utf8::decode_utf8(src_, pos_);
      fail(line_, cat("unexpected character '", src_.substr(pos_, d.length), "' in a tag"));
    }
    track_bracket(c);
    tokens_.push_back({TokenType::op, std::string(1, c), line_});
    ++pos_;
  }

  void track_bracket(char c) {
    static constexpr std::string_view kOpen = "([{", kClose = ")]}";
    if (kOpen.find(c) != std::string_view::npos) {
      brackets_.push_back(c);
    } else if (const size_t i = kClose.find(c); i != std::string_view::npos) {
      if (brackets_.empty()) fail(line_, cat("unexpected '", c, "'"));
      const char expected = kClose[kOpen.find(brackets_.back())];
      if (c != expected) fail(line_, cat("unexpected '", c, "', expected '", expected, "'"));
      brackets_.pop_back();
    }
  }

  std::string src_;
  const std::string& origin_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;  // the text after the last tag starts a line (jinja2's lstrip rule)
  std::string brackets_;       // open brackets inside the current tag
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> lex(std::string_view source, const std::string& origin) {
  return Lexer(normalize_newlines(source), origin).run();
}

}  // namespace autotrain::data::jinja
