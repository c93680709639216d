// SPDX-License-Identifier: GPL-3.0-or-later
// The syntax tree of a Jinja template: the nodes of jinja2/nodes.py that chat templates can reach
// under transformers' environment (loop controls and the {% generation %} tag included, template
// inheritance and imports not). Built by jinja_parser.cpp, walked by jinja_interpreter.cpp; the
// tree is immutable after parsing, and macros reference their Stmt while a rendering runs.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/text/jinja_value.h"

namespace ql::jinja {

enum class ExprType {
    Const,      // constant; `data` marks template text of an Output
    Name,       // name
    NSRef,      // name.attribute as an assignment target ({% set ns.x = ... %})
    List,       // items
    Tuple,      // items
    Dict,       // items: key, value, key, value ...
    Getattr,    // a.name
    Getitem,    // a[b]
    Slice,      // a:b:c (each may be null)
    Call,       // a(items..., kwargs, *dyn_args, **dyn_kwargs)
    Filter,     // a|name(items...); a is null inside {% filter %} / {% set x | f %}
    Test,       // a is name(items...)
    Neg, Pos, Not,                            // a
    Add, Sub, Mul, Div, FloorDiv, Mod, Pow,   // a, b
    And, Or,                                  // a, b (Python and/or: they return an operand)
    Concat,     // items joined with ~
    Compare,    // a, then ops[k] with items[k]
    CondExpr    // b if a else c (c may be null)
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Keyword {
    std::string name;
    ExprPtr value;
};

struct Expr {
    ExprType type = ExprType::Const;
    int line = 0;
    int column = 0;
    int depth = 1;  // height of the subtree, bounded by kMaxTemplateNesting
    Value constant;
    bool data = false;
    std::string name;  // Name/NSRef name, Getattr attribute, Filter/Test name
    std::string attr;  // NSRef attribute
    ExprPtr a, b, c;
    std::vector<ExprPtr> items;
    std::vector<std::string> ops;
    std::vector<Keyword> kwargs;
    ExprPtr dyn_args, dyn_kwargs;
    // Filter/Test named outside Jinja2's built-ins but inside an {% if %} or inline if (a "soft
    // frame" in jinja2/compiler.py): it fails only when evaluated.
    bool unknown = false;
};

enum class StmtType {
    Output,       // exprs: template data and {{ }} expressions
    If,           // branches (test, body) ..., else_body
    For,          // target in value [if test] [recursive]: body, else_body
    Set,          // target = value
    SetBlock,     // {% set target [| filter] %}body{% endset %}
    Macro,        // name(params = defaults): body
    CallBlock,    // {% call(params) value %}body{% endcall %}: value is the Call
    FilterBlock,  // {% filter filter %}body{% endfilter %}
    With,         // targets = exprs: body
    Generation,   // transformers' AssistantTracker {% generation %}body{% endgeneration %}
    Break,
    Continue
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
    StmtType type = StmtType::Output;
    int line = 0;
    int column = 0;
    std::vector<ExprPtr> exprs;
    std::vector<ExprPtr> targets;
    ExprPtr target, value, test, filter;
    std::vector<std::pair<ExprPtr, Body>> branches;
    Body body, else_body;
    std::string name;
    std::vector<std::string> params;
    std::vector<ExprPtr> defaults;  // for the last defaults.size() params
    bool recursive = false;
    // Macro/CallBlock: the body reads `caller`, `kwargs` or `varargs` (jinja2 macro_body's
    // find_undeclared), which decides what the macro accepts.
    bool catch_kwargs = false;
    bool catch_varargs = false;
    bool caller = false;
};

}  // namespace ql::jinja
