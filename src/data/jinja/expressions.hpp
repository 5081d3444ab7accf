#pragma once
// Jinja expressions, parsed as jinja2 parses them, with its precedence (lowest first):
// `x if c else y`, or, and, not, comparisons and `in`, + -, ~, * / // %, **, unary - +, then
// postfix `.attr` `[key]` `[a:b:c]` `(args)`, filters `|f` and tests `is t`. Unknown filters and
// tests are Errors here, naming what is supported.
#include <initializer_list>
#include <optional>
#include <string_view>
#include <utility>

#include "ast.hpp"
#include "token_stream.hpp"

namespace autotrain::data::jinja {

// The deepest nesting of blocks, and the tallest expression tree, a template may have: the
// evaluator recurses this deep, so a malformed template cannot exhaust the stack.
constexpr int kMaxNesting = 128;

class ExpressionParser : public TokenStream {
 public:
  using TokenStream::TokenStream;

  // Expressions separated by commas: a tuple when there is a comma, else the one expression.
  // The list ends at "}}", "%}", ")" or a name in `extra_end`; an empty one is an error unless
  // in `explicit_parentheses` (`()`).
  ExprPtr parse_tuple(bool with_condexpr, std::initializer_list<std::string_view> extra_end,
                      bool explicit_parentheses);
  ExprPtr parse_expression();  // with `x if c else y`
  ExprPtr parse_or();          // without

 private:
  // Counts the recursion of parenthesised, unary and `not` chains.
  struct Nesting {
    Nesting(ExpressionParser& owner, int line);
    ~Nesting() { --parser.depth_; }
    ExpressionParser& parser;
  };

  template <typename Node>
  ExprPtr make(int line, Node node);

  bool tuple_end(std::initializer_list<std::string_view> extra_end) const;
  ExprPtr parse_and();
  ExprPtr parse_not();
  std::optional<CompareOp> compare_op();
  ExprPtr parse_compare();
  template <typename Next>
  ExprPtr parse_binary(std::initializer_list<std::pair<std::string_view, BinaryOp>> ops, Next next);
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary_filtered();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  Value number(const Token& token) const;
  ExprPtr parse_list();
  ExprPtr parse_dict();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filter_expr(ExprPtr node);
  ExprPtr parse_dot(ExprPtr object);
  ExprPtr parse_subscript(ExprPtr object);
  Arguments parse_arguments();
  ExprPtr parse_filter(ExprPtr node);
  ExprPtr parse_test(ExprPtr node);

  int depth_ = 0;  // expression recursion
};

}  // namespace autotrain::data::jinja
