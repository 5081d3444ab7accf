#pragma once
// The Jinja parser: tokens to a Program, following jinja2's grammar (expressions in
// expressions.hpp). Tags: if/elif/else, for/else (with an `if` filter and tuple targets),
// set (= value, ns.attr, block set), break, continue, and transformers' generation. Every other
// tag, and nesting deeper than kMaxNesting, is an Error naming the line and the construct.
#include <string>
#include <vector>

#include "ast.hpp"
#include "lexer.hpp"

namespace autotrain::data::jinja {

Program parse_program(const std::vector<Token>& tokens, const std::string& origin);

}  // namespace autotrain::data::jinja
