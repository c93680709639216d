// SPDX-License-Identifier: GPL-3.0-or-later
// The checks Jinja2's compiler makes before a template renders (jinja2/compiler.py): an unknown
// filter or test is an error unless it sits inside an {% if %} or inline if (a "soft frame": it
// then fails only when evaluated, and its node is marked `unknown`), break/continue must be inside
// a loop, a for-loop may not assign `loop`, and a macro's `caller` parameter needs a default.
// Also records, per macro and call block, whether its body reads caller/kwargs/varargs
// (macro_body's find_undeclared), which decides what the macro accepts.
#pragma once

#include "engine/text/jinja_ast.h"

namespace ql::jinja {

// Throws SyntaxError with the offending node's line and column.
void check_template(Body& body);

}  // namespace ql::jinja
