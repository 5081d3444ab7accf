#include "evaluator.hpp"

#include <new>
#include <stdexcept>
#include <unordered_set>
#include <vector>

#include "autotrain/core/error.hpp"
#include "builtins.hpp"
#include "lexer.hpp"

namespace autotrain::data::jinja {
namespace {

// Variables of one scope, over its parent's.
class Scope {
 public:
  explicit Scope(const Scope* parent) : parent_(parent) {}

  const Value* find(std::string_view name) const {
    for (const Scope* scope = this; scope != nullptr; scope = scope->parent_)
      for (const auto& [key, value] : scope->vars_)
        if (key == name) return &value;
    return nullptr;
  }

  void set(const std::string& name, Value value) {
    for (auto& [key, old] : vars_) {
      if (key == name) {
        old = std::move(value);
        return;
      }
    }
    vars_.emplace_back(name, std::move(value));
  }

 private:
  const Scope* parent_;
  std::vector<std::pair<std::string, Value>> vars_;
};

enum class Flow { next, break_loop, continue_loop };

class Evaluator {
 public:
  explicit Evaluator(const std::string& origin) : origin_(origin) {}
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;
  // `set ns.a = ns` (or a list holding ns) makes a cycle of shared pointers: empty every
  // namespace the template wrote to, so nothing it built outlives the render.
  ~Evaluator() {
    for (const Value& ns : written_namespaces_) ns.as_ns().attributes = Dict();
  }

  std::string render(const Program& program, const Dict& variables) {
    Scope root(nullptr);
    for (const auto& [name, value] : variables.entries()) root.set(name, value);
    std::string out;
    exec(program.body, root, out);
    return out;
  }

 private:
  Flow exec(const Body& body, Scope& scope, std::string& out) {
    for (const Stmt& stmt : body) {
      const Flow flow = exec(stmt, scope, out);
      if (flow != Flow::next) return flow;
    }
    return Flow::next;
  }

  // Failures raised by the statement itself (not by its expressions, which name their own
  // line) get the statement's line.
  Flow exec(const Stmt& stmt, Scope& scope, std::string& out) {
    try {
      spend_operations();
      return std::visit([&](const auto& node) { return exec_node(node, stmt.line, scope, out); },
                        stmt.node);
    } catch (const Failure& failure) {
      fail_at(origin_, stmt.line, failure.what());
    }
  }

  // Output captured by `{% set x %}` blocks is output too: each capture is checked alike.
  void append(std::string& out, std::string_view text) {
    check_output(out.size() + text.size());
    spend_scan(text.size());
    out += text;
  }

  Flow exec_node(const Text& node, int, Scope&, std::string& out) {
    append(out, node.text);
    return Flow::next;
  }

  Flow exec_node(const Output& node, int, Scope& scope, std::string& out) {
    append(out, to_str(eval(*node.value, scope)));
    return Flow::next;
  }

  Flow exec_node(const If& node, int, Scope& scope, std::string& out) {
    for (const auto& [condition, body] : node.branches)
      if (truthy(eval(*condition, scope))) return exec(body, scope, out);
    return exec(node.otherwise, scope, out);
  }

  void count_iteration() { spend_operations(); }

  Flow exec_node(const For& node, int, Scope& scope, std::string& out) {
    List items = iterate(eval(*node.iterable, scope));
    if (node.condition) {
      // The `if` filter first: loop.length, loop.last, ... count the items it keeps.
      List kept;
      for (Value& item : items) {
        count_iteration();
        Scope probe(&scope);
        assign(node.target, item, probe);
        if (truthy(eval(*node.condition, probe))) kept.push_back(std::move(item));
      }
      items = std::move(kept);
    }
    const auto shared = std::make_shared<const List>(std::move(items));
    for (size_t i = 0; i < shared->size(); ++i) {
      count_iteration();
      Scope iteration(&scope);
      iteration.set("loop", Value::loop(shared, i));
      assign(node.target, (*shared)[i], iteration);
      if (exec(node.body, iteration, out) == Flow::break_loop) break;
    }
    return shared->empty() ? exec(node.otherwise, scope, out) : Flow::next;
  }

  Flow exec_node(const Set& node, int, Scope& scope, std::string& out) {
    (void)out;
    if (node.value) {
      assign(node.target, eval(*node.value, scope), scope);
    } else {
      Scope block(&scope);
      std::string captured;
      exec(node.body, block, captured);
      assign(node.target, Value::string(std::move(captured)), scope);
    }
    return Flow::next;
  }

  Flow exec_node(const Break&, int, Scope&, std::string&) { return Flow::break_loop; }
  Flow exec_node(const Continue&, int, Scope&, std::string&) { return Flow::continue_loop; }

  Flow exec_node(const Scoped& node, int, Scope& scope, std::string& out) {
    Scope inner(&scope);
    return exec(node.body, inner, out);
  }

  void assign(const Target& target, const Value& value, Scope& scope) {
    if (!target.attribute.empty()) {
      const Value* ns = scope.find(target.names[0]);
      if (ns == nullptr || !ns->is(Kind::ns))
        throw Failure("cannot assign attribute on non-namespace object");
      ns->as_ns().attributes.set(target.attribute, value);
      if (seen_namespaces_.insert(&ns->as_ns()).second) written_namespaces_.push_back(*ns);
    } else if (!target.unpack) {
      scope.set(target.names[0], value);
    } else {
      if (!value.is_sequence() && !value.is(Kind::string) && !value.is(Kind::dict))
        throw Failure(cat("cannot unpack non-iterable ", type_name(value), " object"));
      const List items = iterate(value);
      const size_t expected = target.names.size();
      if (items.size() > expected)
        throw Failure(cat("too many values to unpack (expected ", expected, ")"));
      if (items.size() < expected)
        throw Failure(
            cat("not enough values to unpack (expected ", expected, ", got ", items.size(), ")"));
      for (size_t i = 0; i < expected; ++i) scope.set(target.names[i], items[i]);
    }
  }

  // ---- expressions ----

  Value eval(const Expr& expr, const Scope& scope) {
    try {
      spend_operations();
      return std::visit([&](const auto& node) { return eval_node(node, expr.line, scope); },
                        expr.node);
    } catch (const Failure& failure) {
      fail_at(origin_, expr.line, failure.what());
    }
  }

  Value eval_node(const Literal& node, int, const Scope&) { return node.value; }

  Value eval_node(const Name& node, int, const Scope& scope) {
    if (const Value* value = scope.find(node.name)) return *value;
    if (is_global_function(node.name)) return Value::callable(node.name);
    if (node.name == "cycler" || node.name == "joiner" || node.name == "lipsum")
      throw Failure(cat("the global function \"", node.name, "\" is not supported"));
    return Value::undefined(cat("'", node.name, "' is undefined"));
  }

  Value eval_node(const ListExpr& node, int, const Scope& scope) {
    List items;
    items.reserve(node.items.size());
    for (const ExprPtr& item : node.items) items.push_back(eval(*item, scope));
    return node.tuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
  }

  Value eval_node(const DictExpr& node, int, const Scope& scope) {
    Dict dict;
    for (const auto& [key_expr, value_expr] : node.entries) {
      const Value key = eval(*key_expr, scope);
      if (!key.is(Kind::string))
        throw Failure(cat("dict keys must be strings (got ", type_name(key), ")"));
      dict.set(key.as_string(), eval(*value_expr, scope));
    }
    return Value::dict(std::move(dict));
  }

  Value eval_node(const GetAttr& node, int, const Scope& scope) {
    return get_attribute(eval(*node.object, scope), node.attribute);
  }

  Value eval_node(const GetItem& node, int, const Scope& scope) {
    const Value object = eval(*node.object, scope);
    return get_item(object, eval(*node.key, scope));
  }

  std::optional<int64_t> bound(const ExprPtr& expr, const Scope& scope) {
    if (!expr) return std::nullopt;
    const Value value = eval(*expr, scope);
    if (value.is(Kind::none)) return std::nullopt;
    if (value.is(Kind::integer)) return value.as_int();
    if (value.is(Kind::boolean)) return value.as_bool() ? 1 : 0;
    throw Failure("slice indices must be integers or None");
  }

  Value eval_node(const SliceExpr& node, int, const Scope& scope) {
    const Value object = eval(*node.object, scope);
    const std::optional<int64_t> start = bound(node.start, scope);
    const std::optional<int64_t> stop = bound(node.stop, scope);
    return slice(object, start, stop, bound(node.step, scope));
  }

  CallArgs arguments(const Arguments& args, const Scope& scope) {
    CallArgs values;
    for (const ExprPtr& arg : args.positional) values.positional.push_back(eval(*arg, scope));
    for (const auto& [key, arg] : args.keyword) values.keyword.emplace_back(key, eval(*arg, scope));
    return values;
  }

  Value eval_node(const Call& node, int, const Scope& scope) {
    const Value callee = eval(*node.callee, scope);
    if (callee.is_undefined()) fail_undefined(callee);
    if (!callee.is(Kind::callable))
      throw Failure(cat("'", type_name(callee), "' object is not callable"));
    return call(callee, arguments(node.args, scope));
  }

  Value eval_node(const FilterExpr& node, int, const Scope& scope) {
    const Value operand = eval(*node.operand, scope);
    return apply_filter(node.name, operand, arguments(node.args, scope));
  }

  Value eval_node(const TestExpr& node, int, const Scope& scope) {
    const Value operand = eval(*node.operand, scope);
    return Value::boolean(apply_test(node.name, operand, arguments(node.args, scope)) !=
                          node.negated);
  }

  Value eval_node(const Unary& node, int, const Scope& scope) {
    const Value operand = eval(*node.operand, scope);
    if (node.op == Unary::Op::logical_not) return Value::boolean(!truthy(operand));
    return negate(operand, node.op == Unary::Op::minus);
  }

  Value eval_node(const Binary& node, int, const Scope& scope) {
    const Value left = eval(*node.left, scope);
    return binary(node.op, left, eval(*node.right, scope));
  }

  Value eval_node(const Logical& node, int, const Scope& scope) {
    Value left = eval(*node.left, scope);
    if (truthy(left) != node.is_and) return left;
    return eval(*node.right, scope);
  }

  Value eval_node(const Compare& node, int, const Scope& scope) {
    Value left = eval(*node.first, scope);
    for (const auto& [op, right_expr] : node.rest) {
      Value right = eval(*right_expr, scope);
      if (!compare(op, left, right)) return Value::boolean(false);
      left = std::move(right);
    }
    return Value::boolean(true);
  }

  Value eval_node(const Conditional& node, int line, const Scope& scope) {
    if (truthy(eval(*node.condition, scope))) return eval(*node.then, scope);
    if (node.otherwise) return eval(*node.otherwise, scope);
    return Value::undefined(cat("the inline if-expression on line ", line,
                                " evaluated to false and no else section was defined."));
  }

  const std::string& origin_;
  std::vector<Value> written_namespaces_;
  std::unordered_set<const Namespace*> seen_namespaces_;
};

}  // namespace

std::string render_program(const Program& program, const Dict& variables, const std::string& origin,
                           const BudgetLimits& limits) {
  Budget budget(limits);
  const BudgetScope scope(budget);
  try {
    return Evaluator(origin).render(program, variables);
  } catch (const std::bad_alloc&) {
    // The budget checks before each allocation it knows of; this is the last guard.
    throw Error(cat(origin, ": the template ran out of memory while rendering"));
  } catch (const std::length_error&) {
    throw Error(cat(origin, ": the template built a value larger than memory allows"));
  }
}

}  // namespace autotrain::data::jinja
