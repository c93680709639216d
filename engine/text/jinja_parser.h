// SPDX-License-Identifier: GPL-3.0-or-later
// Parses a Jinja template into jinja_ast.h nodes as jinja2/parser.py does, and applies the checks
// Jinja2's compiler makes before rendering (jinja2/compiler.py): unknown filters and tests outside
// {% if %} conditions, break/continue outside a loop, assignments to `loop`, a macro's `caller`
// parameter without a default. Nesting deeper than kMaxTemplateNesting is refused (Python would hit
// its recursion limit; here it protects the stack).
#pragma once

#include <string_view>

#include "engine/text/jinja_ast.h"
#include "engine/text/jinja_lexer.h"

namespace ql::jinja {

constexpr int kMaxTemplateNesting = 200;

// Throws SyntaxError with the line and column of the offending token.
Body parse_template(std::string_view source);

}  // namespace ql::jinja
