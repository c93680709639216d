// SPDX-License-Identifier: GPL-3.0-or-later
// Python's operators on template values as the sandbox applies them (SandboxedEnvironment's
// binop_table is Python's operator module): int/float promotion, floor division and modulo with
// Python's signs, str/list/tuple concatenation and repetition, markupsafe.Markup's escaping `+`,
// printf-style `str % args`, and comparisons. Integers are 64-bit here: a result beyond that raises
// OverflowError where Python would grow a big integer.
#pragma once

#include <string>

#include "engine/text/jinja_ast.h"
#include "engine/text/jinja_value.h"

namespace ql::jinja {

// op is one of Add, Sub, Mul, Div, FloorDiv, Mod, Pow.
Value binary_operation(Runtime& rt, ExprType op, const Value& a, const Value& b);
// op is Neg or Pos.
Value unary_operation(ExprType op, const Value& a);
// op is ==, !=, <, <=, >, >=, in, notin.
bool compare_operation(Runtime& rt, const std::string& op, const Value& a, const Value& b);

}  // namespace ql::jinja
