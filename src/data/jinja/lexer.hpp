#pragma once
// The Jinja lexer, with the whitespace rules transformers configures (jinja2's trim_blocks and
// lstrip_blocks) applied as jinja2 applies them:
//   - newlines are normalised to "\n" and one trailing newline of the template is dropped;
//   - `{%-` `{{-` `{#-` strip the whitespace before the tag, `-%}` `-}}` `-#}` the whitespace
//     after it;
//   - trim_blocks: a block or comment tag eats the one newline right after it (not after `+%}`);
//   - lstrip_blocks: spaces and tabs from the start of a line to a block or comment tag are
//     dropped (not before `{%+`, and never before `{{`).
// Inside tags, `}}` and `%}` end the tag only outside brackets, so `{{ {'a': {'b': 1}} }}` works.
#include <string>
#include <string_view>
#include <vector>

namespace autotrain::data::jinja {

enum class TokenType {
  text,            // template text between tags
  variable_begin,  // {{
  variable_end,    // }}
  block_begin,     // {%
  block_end,       // %}
  name,
  string,   // value: the decoded literal
  integer,  // value: the digits, underscores removed
  floating,
  op,  // value: the operator ("(", "==", "//", ...)
  end  // end of the template
};

struct Token {
  TokenType type;
  std::string value;
  int line;
};

// How an error names a token: "'}}'", "'if'", "a string", "the end of the template".
std::string describe(const Token& token);

// An Error "<origin> line <line>: <message>" (the one form of every template error).
[[noreturn]] void fail_at(const std::string& origin, int line, const std::string& message);

std::vector<Token> lex(std::string_view source, const std::string& origin);

}  // namespace autotrain::data::jinja
