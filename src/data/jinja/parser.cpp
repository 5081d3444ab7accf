#include "parser.hpp"

#include <algorithm>
#include <array>

#include "autotrain/core/error.hpp"
#include "expressions.hpp"

namespace autotrain::data::jinja {
namespace {

constexpr const char* kSupportedTags = "if, elif, else, for, set, break, continue, generation";
// Jinja's other tags, refused by name.
constexpr std::array kOtherTags = {"macro",  "call",       "filter",  "raw",      "include",
                                   "import", "from",       "extends", "block",    "with",
                                   "do",     "autoescape", "trans",   "pluralize"};

bool is_constant(std::string_view name) {
  return name == "true" || name == "false" || name == "none" || name == "True" || name == "False" ||
         name == "None";
}

class Parser : public ExpressionParser {
 public:
  using ExpressionParser::ExpressionParser;

  Program run() { return Program{parse_body({})}; }

 private:
  // A block being parsed: its tag, line and the tags that may end it.
  struct Open {
    std::string tag;
    int line;
    std::vector<std::string> ends;
  };

  // Statements up to a block tag named in `ends` (left as the current token) or, with no
  // ends, to the end of the template.
  Body parse_body(const std::vector<std::string>& ends) {
    Body body;
    for (;;) {
      const Token& token = current();
      if (token.type == TokenType::text) {
        body.emplace_back(token.line, Text{token.value});
        advance();
      } else if (token.type == TokenType::variable_begin) {
        advance();
        ExprPtr value = parse_tuple(true, {}, false);
        expect(TokenType::variable_end);
        body.emplace_back(token.line, Output{std::move(value)});
      } else if (token.type == TokenType::block_begin) {
        advance();
        if (current().type == TokenType::name &&
            std::find(ends.begin(), ends.end(), current().value) != ends.end())
          return body;
        body.push_back(parse_statement(token.line));
        expect(TokenType::block_end);
      } else if (token.type == TokenType::end) {
        if (!ends.empty()) unclosed();
        return body;
      } else {
        fail(token.line, "unexpected " + describe(token));
      }
    }
  }

  [[noreturn]] void unclosed() const {
    const Open& open = open_.back();
    std::string expected;
    for (size_t i = 0; i < open.ends.size(); ++i)
      expected += cat(i == 0                      ? ""
                      : i + 1 == open.ends.size() ? " or "
                                                  : ", ",
                      "\"", open.ends[i], "\"");
    fail(open.line, cat("the \"", open.tag, "\" block opened here is not closed (expected ",
                        expected, " before the end of the template)"));
  }

  // The header's "%}", then the body up to one of `ends`.
  Body parse_block(const std::vector<std::string>& ends) {
    open_.back().ends = ends;
    expect(TokenType::block_end);
    return parse_body(ends);
  }

  void open(const std::string& tag, int line) {
    if (static_cast<int>(open_.size()) >= kMaxNesting)
      fail(line, cat("blocks nested more than ", kMaxNesting, " levels deep"));
    open_.push_back(Open{tag, line, {}});
  }

  Stmt parse_statement(int line) {
    if (current().type != TokenType::name)
      fail(line, cat("expected a tag name after '{%', got ", describe(current())));
    const std::string tag = current().value;
    if (tag == "if") return parse_if(line);
    if (tag == "for") return parse_for(line);
    if (tag == "set") return parse_set(line);
    if (tag == "break" || tag == "continue") {
      if (loops_ == 0) fail(line, cat("\"", tag, "\" outside a for loop"));
      advance();
      return tag == "break" ? Stmt{line, Break{}} : Stmt{line, Continue{}};
    }
    if (tag == "generation") {
      advance();
      open(tag, line);
      Scoped scoped{parse_block({"endgeneration"})};
      advance();
      open_.pop_back();
      return Stmt{line, std::move(scoped)};
    }
    unknown_tag(line, tag);
  }

  [[noreturn]] void unknown_tag(int line, const std::string& tag) const {
    const bool closes = tag.rfind("end", 0) == 0 || tag == "else" || tag == "elif";
    if (closes && !open_.empty())
      fail(line, cat("unexpected \"", tag, "\": the innermost open block is the \"",
                     open_.back().tag, "\" of line ", open_.back().line));
    if (closes && std::none_of(kOtherTags.begin(), kOtherTags.end(),
                               [&](const char* t) { return tag == cat("end", t); }))
      fail(line, cat("unexpected \"", tag, "\": no block is open"));
    const bool known = std::any_of(kOtherTags.begin(), kOtherTags.end(),
                                   [&](const char* t) { return tag == t || tag == cat("end", t); });
    fail(line,
         cat(known ? "the \"" + tag + "\" tag is not supported" : "unknown tag \"" + tag + "\"",
             " (supported: ", kSupportedTags, ")"));
  }

  Stmt parse_if(int line) {
    advance();
    open("if", line);
    If node;
    for (;;) {
      ExprPtr condition = parse_tuple(false, {}, false);
      Body body = parse_block({"elif", "else", "endif"});
      node.branches.emplace_back(std::move(condition), std::move(body));
      const std::string tag = advance().value;
      if (tag == "elif") continue;
      if (tag == "else") {
        node.otherwise = parse_block({"endif"});
        advance();
      }
      break;
    }
    open_.pop_back();
    return Stmt{line, std::move(node)};
  }

  Stmt parse_for(int line) {
    advance();
    open("for", line);
    For node;
    node.target = parse_target(false, "in");
    if (!skip_name("in")) fail(current().line, cat("expected 'in', got ", describe(current())));
    node.iterable = parse_tuple(false, {"recursive"}, false);
    if (skip_name("if")) node.condition = parse_expression();
    if (is_name("recursive")) fail(line, "recursive for loops are not supported");
    ++loops_;
    node.body = parse_block({"endfor", "else"});
    --loops_;
    if (advance().value == "else") {
      node.otherwise = parse_block({"endfor"});
      advance();
    }
    open_.pop_back();
    return Stmt{line, std::move(node)};
  }

  Stmt parse_set(int line) {
    advance();
    Set node;
    node.target = parse_target(true, "");
    if (skip_op("=")) {
      node.value = parse_tuple(true, {}, false);
      return Stmt{line, std::move(node)};
    }
    if (is_op("|")) fail(line, "a filter on a block set is not supported");
    open("set", line);
    node.body = parse_block({"endset"});
    advance();
    open_.pop_back();
    return Stmt{line, std::move(node)};
  }

  // A for loop's or a set's target: names (a tuple to unpack when separated by commas) or, for
  // set, namespace.attribute.
  Target parse_target(bool with_namespace, std::string_view end_word) {
    Target target;
    if (with_namespace && current().type == TokenType::name && peek().type == TokenType::op &&
        peek().value == ".") {
      target.names.push_back(advance().value);
      advance();
      target.attribute = expect_name("an attribute name");
      return target;
    }
    for (;;) {
      if (current().type != TokenType::name || is_constant(current().value))
        fail(current().line, cat("can't assign to ", describe(current())));
      target.names.push_back(advance().value);
      if (!skip_op(",")) break;
      target.unpack = true;
      if (is_name(end_word) || is_op("=")) break;
    }
    return target;
  }

  std::vector<Open> open_;
  int loops_ = 0;  // for loops around the current statement (break and continue need one)
};

}  // namespace

Program parse_program(const std::vector<Token>& tokens, const std::string& origin) {
  return Parser(tokens, origin).run();
}

}  // namespace autotrain::data::jinja
