#pragma once
// The parsers' view of the lexer's tokens: the current one, one of lookahead, and checks that
// turn an unexpected token into an Error naming its line.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "autotrain/core/error.hpp"
#include "lexer.hpp"

namespace autotrain::data::jinja {

class TokenStream {
 public:
  // `tokens` ends with a TokenType::end token, which advance() never passes.
  TokenStream(const std::vector<Token>& tokens, const std::string& origin)
      : tokens_(tokens), origin_(origin) {}

  [[noreturn]] void fail(int line, const std::string& message) const {
    fail_at(origin_, line, message);
  }

  const Token& current() const { return tokens_[pos_]; }
  const Token& peek() const { return tokens_[std::min(pos_ + 1, tokens_.size() - 1)]; }
  const Token& advance() {
    const Token& token = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return token;
  }

  bool is_op(std::string_view op) const {
    return current().type == TokenType::op && current().value == op;
  }
  bool is_name(std::string_view name) const {
    return current().type == TokenType::name && current().value == name;
  }
  bool skip_op(std::string_view op) { return is_op(op) ? (advance(), true) : false; }
  bool skip_name(std::string_view name) { return is_name(name) ? (advance(), true) : false; }

  void expect_op(std::string_view op) {
    if (!skip_op(op)) fail(current().line, cat("expected '", op, "', got ", describe(current())));
  }
  std::string expect_name(const char* what) {
    if (current().type != TokenType::name)
      fail(current().line, cat("expected ", what, ", got ", describe(current())));
    return advance().value;
  }
  void expect(TokenType type) {
    if (current().type != type)
      fail(current().line,
           cat("expected ", describe(Token{type, "", 0}), ", got ", describe(current())));
    advance();
  }

 private:
  const std::vector<Token>& tokens_;
  const std::string& origin_;
  size_t pos_ = 0;
};

}  // namespace autotrain::data::jinja
