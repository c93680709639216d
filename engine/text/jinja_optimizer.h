// SPDX-License-Identifier: GPL-3.0-or-later
// Jinja2's compile-time constant folding (jinja2/optimizer.py and the Output branch of
// compiler.visit_Output), which is observable: an expression built only from literals is evaluated
// once when the template compiles, with nodes' as_const() semantics, which differ from run time in
// a few corners -- `3[1:]` is environment.getitem(3, slice) there (Undefined) but a TypeError at
// run time, and a {{ }} whose constant value is Undefined prints "" where evaluating it would
// raise. Folded subtrees become Const nodes when their value has a "safe repr"
// (compiler.has_safe_repr); a {{ }} child whose as_const succeeds becomes its str() text.
#pragma once

#include "engine/text/jinja_ast.h"
#include "engine/text/jinja_interpreter.h"

namespace ql::jinja {

// Folds every constant expression of `body` in place. Each attempt runs within `limits` (an
// attempt that fails or stops at a limit leaves the node for run time, as Impossible does).
void fold_constants(Body& body, const Limits& limits);

}  // namespace ql::jinja
