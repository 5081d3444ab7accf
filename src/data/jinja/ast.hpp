#pragma once
// The syntax tree of a chat template: expressions and statements, each with its template line
// (for errors). Built once by the parser, then only read (render is const and thread-safe).
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "operators.hpp"
#include "value.hpp"

namespace autotrain::data::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<const Expr>;

struct Arguments {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
};

struct Literal {
  Value value;
};
struct Name {
  std::string name;
};
struct ListExpr {
  std::vector<ExprPtr> items;
  bool tuple = false;
};
struct DictExpr {
  std::vector<std::pair<ExprPtr, ExprPtr>> entries;
};
struct GetAttr {
  ExprPtr object;
  std::string attribute;
};
struct GetItem {
  ExprPtr object;
  ExprPtr key;
};
struct SliceExpr {
  ExprPtr object;
  ExprPtr start, stop, step;  // null when omitted
};
struct Call {
  ExprPtr callee;
  Arguments args;
};
struct FilterExpr {
  ExprPtr operand;
  std::string name;
  Arguments args;
};
struct TestExpr {
  ExprPtr operand;
  std::string name;
  Arguments args;
  bool negated = false;
};
struct Unary {
  enum class Op { minus, plus, logical_not } op;
  ExprPtr operand;
};
struct Binary {
  BinaryOp op;
  ExprPtr left, right;
};
struct Logical {  // and / or: Python's short-circuit, returning an operand
  bool is_and;
  ExprPtr left, right;
};
struct Compare {  // a < b < c compares pairwise, as Python chains
  ExprPtr first;
  std::vector<std::pair<CompareOp, ExprPtr>> rest;
};
struct Conditional {  // then if condition else otherwise (otherwise may be null)
  ExprPtr condition, then, otherwise;
};

struct Expr {
  using Node = std::variant<Literal, Name, ListExpr, DictExpr, GetAttr, GetItem, SliceExpr, Call,
                            FilterExpr, TestExpr, Unary, Binary, Logical, Compare, Conditional>;
  int line;
  Node node;
  int height = 1;  // of the tree below: evaluation recurses this deep (the parser bounds it)
};

struct Stmt;
using Body = std::vector<Stmt>;

// What a for loop or a set assigns: one name, several (tuple unpacking), or ns.attribute.
struct Target {
  std::vector<std::string> names;
  std::string attribute;  // set: names[0] is the namespace
  bool unpack = false;
};

struct Text {
  std::string text;
};
struct Output {
  ExprPtr value;
};
struct If {
  std::vector<std::pair<ExprPtr, Body>> branches;  // if, then each elif
  Body otherwise;
};
struct For {
  Target target;
  ExprPtr iterable;
  ExprPtr condition;  // the loop's `if` filter, or null
  Body body;
  Body otherwise;  // the else block: runs when the loop visited nothing
};
struct Set {
  Target target;
  ExprPtr value;  // null for a block set, whose rendered body is the value
  Body body;
};
struct Break {};
struct Continue {};
struct Scoped {  // transformers' {% generation %}: its body, in a scope of its own
  Body body;
};

struct Stmt {
  template <typename Node>
  Stmt(int at, Node statement) : line(at), node(std::move(statement)) {}
  int line;
  std::variant<Text, Output, If, For, Set, Break, Continue, Scoped> node;
};

struct Program {
  Body body;
};

}  // namespace autotrain::data::jinja
