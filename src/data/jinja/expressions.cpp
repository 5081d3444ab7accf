#include "expressions.hpp"

#include <algorithm>
#include <array>
#include <charconv>

#include "autotrain/core/error.hpp"
#include "builtins.hpp"

namespace autotrain::data::jinja {
namespace {

int height(const ExprPtr& e) {
  return e ? e->height : 0;
}

int height(const Arguments& args) {
  int h = 0;
  for (const ExprPtr& e : args.positional) h = std::max(h, height(e));
  for (const auto& [key, e] : args.keyword) h = std::max(h, height(e));
  return h;
}

// 1 + the tallest child of `node`.
int height_of(const Expr::Node& node) {
  struct Visitor {
    int operator()(const Literal&) const { return 0; }
    int operator()(const Name&) const { return 0; }
    int operator()(const ListExpr& n) const {
      int h = 0;
      for (const ExprPtr& e : n.items) h = std::max(h, height(e));
      return h;
    }
    int operator()(const DictExpr& n) const {
      int h = 0;
      for (const auto& [k, v] : n.entries) h = std::max({h, height(k), height(v)});
      return h;
    }
    int operator()(const GetAttr& n) const { return height(n.object); }
    int operator()(const GetItem& n) const { return std::max(height(n.object), height(n.key)); }
    int operator()(const SliceExpr& n) const {
      return std::max({height(n.object), height(n.start), height(n.stop), height(n.step)});
    }
    int operator()(const Call& n) const { return std::max(height(n.callee), height(n.args)); }
    int operator()(const FilterExpr& n) const {
      return std::max(height(n.operand), height(n.args));
    }
    int operator()(const TestExpr& n) const { return std::max(height(n.operand), height(n.args)); }
    int operator()(const Unary& n) const { return height(n.operand); }
    int operator()(const Binary& n) const { return std::max(height(n.left), height(n.right)); }
    int operator()(const Logical& n) const { return std::max(height(n.left), height(n.right)); }
    int operator()(const Compare& n) const {
      int h = height(n.first);
      for (const auto& [op, e] : n.rest) h = std::max(h, height(e));
      return h;
    }
    int operator()(const Conditional& n) const {
      return std::max({height(n.condition), height(n.then), height(n.otherwise)});
    }
  };
  return 1 + std::visit(Visitor{}, node);
}

}  // namespace

ExpressionParser::Nesting::Nesting(ExpressionParser& owner, int line) : parser(owner) {
  if (++parser.depth_ > kMaxNesting)
    parser.fail(line, cat("an expression nested more than ", kMaxNesting, " levels deep"));
}

template <typename Node>
ExprPtr ExpressionParser::make(int line, Node node) {
  auto expr = std::make_unique<Expr>(Expr{line, Expr::Node(std::move(node))});
  expr->height = height_of(expr->node);
  if (expr->height > kMaxNesting)
    fail(line, cat("an expression nested more than ", kMaxNesting, " levels deep"));
  return expr;
}

bool ExpressionParser::tuple_end(std::initializer_list<std::string_view> extra_end) const {
  const TokenType t = current().type;
  if (t == TokenType::variable_end || t == TokenType::block_end || is_op(")")) return true;
  return std::any_of(extra_end.begin(), extra_end.end(),
                     [&](std::string_view name) { return is_name(name); });
}

// Expressions separated by commas: a tuple when there is a comma, else the one expression.
ExprPtr ExpressionParser::parse_tuple(bool with_condexpr,
                                      std::initializer_list<std::string_view> extra_end,
                                      bool explicit_parentheses) {
  const int line = current().line;
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  for (;;) {
    if (!items.empty()) expect_op(",");
    if (tuple_end(extra_end)) break;
    items.push_back(with_condexpr ? parse_expression() : parse_or());
    if (!is_op(",")) break;
    is_tuple = true;
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items[0]);
    if (!explicit_parentheses)
      fail(current().line, cat("expected an expression, got ", describe(current())));
  }
  return make(line, ListExpr{std::move(items), true});
}

ExprPtr ExpressionParser::parse_expression() {
  const int line = current().line;
  Nesting nesting(*this, line);
  ExprPtr expr = parse_or();
  while (skip_name("if")) {
    ExprPtr condition = parse_or();
    ExprPtr otherwise = skip_name("else") ? parse_expression() : nullptr;
    expr = make(line, Conditional{std::move(condition), std::move(expr), std::move(otherwise)});
  }
  return expr;
}

ExprPtr ExpressionParser::parse_or() {
  ExprPtr left = parse_and();
  while (is_name("or")) {
    const int line = advance().line;
    left = make(line, Logical{false, std::move(left), parse_and()});
  }
  return left;
}

ExprPtr ExpressionParser::parse_and() {
  ExprPtr left = parse_not();
  while (is_name("and")) {
    const int line = advance().line;
    left = make(line, Logical{true, std::move(left), parse_not()});
  }
  return left;
}

ExprPtr ExpressionParser::parse_not() {
  if (!is_name("not")) return parse_compare();
  const int line = advance().line;
  Nesting nesting(*this, line);
  return make(line, Unary{Unary::Op::logical_not, parse_not()});
}

std::optional<CompareOp> ExpressionParser::compare_op() {
  static constexpr std::array<std::pair<std::string_view, CompareOp>, 6> kOps = {{
      {"==", CompareOp::equal},
      {"!=", CompareOp::not_equal},
      {"<", CompareOp::less},
      {"<=", CompareOp::less_equal},
      {">", CompareOp::greater},
      {">=", CompareOp::greater_equal},
  }};
  for (const auto& [text, op] : kOps)
    if (skip_op(text)) return op;
  if (skip_name("in")) return CompareOp::in;
  if (is_name("not") && peek().type == TokenType::name && peek().value == "in") {
    advance(), advance();
    return CompareOp::not_in;
  }
  return std::nullopt;
}

ExprPtr ExpressionParser::parse_compare() {
  const int line = current().line;
  ExprPtr first = parse_math1();
  Compare compare{std::move(first), {}};
  while (const std::optional<CompareOp> op = compare_op())
    compare.rest.emplace_back(*op, parse_math1());
  if (compare.rest.empty()) return std::move(compare.first);
  return make(line, std::move(compare));
}

// One level of left-associative binary operators.
template <typename Next>
ExprPtr ExpressionParser::parse_binary(
    std::initializer_list<std::pair<std::string_view, BinaryOp>> ops, Next next) {
  ExprPtr left = (this->*next)();
  for (;;) {
    const auto it =
        std::find_if(ops.begin(), ops.end(), [&](const auto& op) { return is_op(op.first); });
    if (it == ops.end()) return left;
    const int line = advance().line;
    left = make(line, Binary{it->second, std::move(left), (this->*next)()});
  }
}

ExprPtr ExpressionParser::parse_math1() {
  return parse_binary({{"+", BinaryOp::add}, {"-", BinaryOp::subtract}},
                      &ExpressionParser::parse_concat);
}
ExprPtr ExpressionParser::parse_concat() {
  return parse_binary({{"~", BinaryOp::concat}}, &ExpressionParser::parse_math2);
}
ExprPtr ExpressionParser::parse_math2() {
  return parse_binary({{"*", BinaryOp::multiply},
                       {"/", BinaryOp::divide},
                       {"//", BinaryOp::floor_divide},
                       {"%", BinaryOp::modulo}},
                      &ExpressionParser::parse_pow);
}
ExprPtr ExpressionParser::parse_pow() {
  return parse_binary({{"**", BinaryOp::power}}, &ExpressionParser::parse_unary_filtered);
}
ExprPtr ExpressionParser::parse_unary_filtered() {
  return parse_unary(true);
}

// `-x|f` is `(-x)|f`, as in jinja2: the sign applies before postfix filters and tests.
ExprPtr ExpressionParser::parse_unary(bool with_filter) {
  const int line = current().line;
  Nesting nesting(*this, line);
  ExprPtr node;
  if (is_op("-") || is_op("+")) {
    const Unary::Op op = advance().value == "-" ? Unary::Op::minus : Unary::Op::plus;
    node = make(line, Unary{op, parse_unary(false)});
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  return with_filter ? parse_filter_expr(std::move(node)) : std::move(node);
}

ExprPtr ExpressionParser::parse_primary() {
  const Token& token = current();
  const int line = token.line;
  switch (token.type) {
    case TokenType::name: {
      const std::string name = advance().value;
      if (name == "true" || name == "True") return make(line, Literal{Value::boolean(true)});
      if (name == "false" || name == "False") return make(line, Literal{Value::boolean(false)});
      if (name == "none" || name == "None") return make(line, Literal{Value::none()});
      return make(line, Name{name});
    }
    case TokenType::string: {
      std::string text;
      while (current().type == TokenType::string) text += advance().value;  // 'a' 'b' is 'ab'
      return make(line, Literal{Value::string(std::move(text))});
    }
    case TokenType::integer:
    case TokenType::floating:
      return make(line, Literal{number(advance())});
    default:
      break;
  }
  if (skip_op("(")) {
    ExprPtr inner = parse_tuple(true, {}, true);
    expect_op(")");
    return inner;
  }
  if (is_op("[")) return parse_list();
  if (is_op("{")) return parse_dict();
  fail(line, "unexpected " + describe(token));
}

Value ExpressionParser::number(const Token& token) const {
  const char* begin = token.value.data();
  const char* end = begin + token.value.size();
  if (token.type == TokenType::integer) {
    int64_t value = 0;
    if (std::from_chars(begin, end, value).ec != std::errc())
      fail(token.line, cat("the integer ", token.value, " is beyond 64 bits (not supported)"));
    return Value::integer(value);
  }
  double value = 0;
  std::from_chars(begin, end, value);
  return Value::floating(value);
}

ExprPtr ExpressionParser::parse_list() {
  const int line = advance().line;
  std::vector<ExprPtr> items;
  while (!is_op("]")) {
    if (!items.empty()) expect_op(",");
    if (is_op("]")) break;
    items.push_back(parse_expression());
  }
  expect_op("]");
  return make(line, ListExpr{std::move(items), false});
}

ExprPtr ExpressionParser::parse_dict() {
  const int line = advance().line;
  DictExpr dict;
  while (!is_op("}")) {
    if (!dict.entries.empty()) expect_op(",");
    if (is_op("}")) break;
    ExprPtr key = parse_expression();
    expect_op(":");
    dict.entries.emplace_back(std::move(key), parse_expression());
  }
  expect_op("}");
  return make(line, std::move(dict));
}

ExprPtr ExpressionParser::parse_postfix(ExprPtr node) {
  for (;;) {
    if (is_op(".")) {
      node = parse_dot(std::move(node));
    } else if (is_op("[")) {
      node = parse_subscript(std::move(node));
    } else if (is_op("(")) {
      const int line = current().line;
      node = make(line, Call{std::move(node), parse_arguments()});
    } else {
      return node;
    }
  }
}

ExprPtr ExpressionParser::parse_filter_expr(ExprPtr node) {
  for (;;) {
    if (is_op("|")) {
      node = parse_filter(std::move(node));
    } else if (is_name("is")) {
      node = parse_test(std::move(node));
    } else if (is_op("(")) {
      const int line = current().line;
      node = make(line, Call{std::move(node), parse_arguments()});
    } else {
      return node;
    }
  }
}

ExprPtr ExpressionParser::parse_dot(ExprPtr object) {
  const int line = advance().line;
  const Token& token = current();
  if (token.type == TokenType::name) return make(line, GetAttr{std::move(object), advance().value});
  if (token.type == TokenType::integer)
    return make(line, GetItem{std::move(object), make(line, Literal{number(advance())})});
  fail(line, cat("expected a name or a number after '.', got ", describe(token)));
}

ExprPtr ExpressionParser::parse_subscript(ExprPtr object) {
  const int line = advance().line;
  ExprPtr start;
  if (!is_op(":")) {
    start = parse_expression();
    if (is_op(",")) fail(line, "tuple subscripts (x[a, b]) are not supported");
    if (!is_op(":")) {
      expect_op("]");
      return make(line, GetItem{std::move(object), std::move(start)});
    }
  }
  advance();  // ':'
  ExprPtr stop, step;
  if (!is_op(":") && !is_op("]")) stop = parse_expression();
  if (skip_op(":") && !is_op("]")) step = parse_expression();
  expect_op("]");
  return make(line,
              SliceExpr{std::move(object), std::move(start), std::move(stop), std::move(step)});
}

Arguments ExpressionParser::parse_arguments() {
  const int line = current().line;
  expect_op("(");
  Arguments args;
  for (bool need_comma = false; !is_op(")"); need_comma = true) {
    if (need_comma) {
      expect_op(",");
      if (is_op(")")) break;
    }
    if (is_op("*") || is_op("**")) fail(line, "argument unpacking (* and **) is not supported");
    if (current().type == TokenType::name && peek().type == TokenType::op && peek().value == "=") {
      std::string key = advance().value;
      advance();
      args.keyword.emplace_back(std::move(key), parse_expression());
    } else {
      if (!args.keyword.empty()) fail(line, "a positional argument after a keyword argument");
      args.positional.push_back(parse_expression());
    }
  }
  expect_op(")");
  return args;
}

ExprPtr ExpressionParser::parse_filter(ExprPtr node) {
  while (skip_op("|")) {
    const int line = current().line;
    const std::string name = expect_name("a filter name after '|'");
    if (!is_filter(name))
      fail(line,
           cat("the \"", name, "\" filter is not supported (supported: ", filter_names(), ")"));
    Arguments args = is_op("(") ? parse_arguments() : Arguments{};
    node = make(line, FilterExpr{std::move(node), name, std::move(args)});
  }
  return node;
}

ExprPtr ExpressionParser::parse_test(ExprPtr node) {
  const int line = advance().line;
  const bool negated = skip_name("not");
  const std::string name = expect_name("a test name after 'is'");
  if (!is_test(name))
    fail(line, cat("the \"", name, "\" test is not supported (supported: ", test_names(), ")"));
  Arguments args;
  const TokenType t = current().type;
  if (is_op("(")) {
    args = parse_arguments();
  } else if ((t == TokenType::name || t == TokenType::string || t == TokenType::integer ||
              t == TokenType::floating || is_op("[") || is_op("{")) &&
             !is_name("else") && !is_name("or") && !is_name("and")) {
    // jinja2 takes one argument without parentheses: `x is divisibleby 3`.
    if (is_name("is")) fail(line, "tests cannot be chained with 'is'");
    args.positional.push_back(parse_postfix(parse_primary()));
  }
  return make(line, TestExpr{std::move(node), name, std::move(args), negated});
}

}  // namespace autotrain::data::jinja
