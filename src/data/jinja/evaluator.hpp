#pragma once
// Renders a parsed template: statements append to the output, expressions evaluate to Values.
// Scopes follow jinja2: each for-loop iteration gets a fresh scope over the enclosing one (a
// `set` inside a loop is gone at the next iteration and after the loop; namespace() attributes
// are how templates carry state out), `if` opens none, and names resolve from the innermost
// scope out to the render's variables and then the global functions.
//
// A render stops with an Error when it exceeds its budget (budget.hpp: operations, each
// statement, expression and loop iteration one; bytes allocated; output bytes), so no template
// hangs or fills memory.
#include <string>

#include "ast.hpp"
#include "budget.hpp"

namespace autotrain::data::jinja {

// `variables`: what the template sees (messages, add_generation_prompt, ...). Errors are
// "<origin> line <line>: ...".
std::string render_program(const Program& program, const Dict& variables, const std::string& origin,
                           const BudgetLimits& limits);

}  // namespace autotrain::data::jinja
