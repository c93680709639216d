// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/text/jinja_is_tests.h"

#include <functional>
#include <unordered_map>

#include "engine/text/jinja_access.h"
#include "engine/text/jinja_filters.h"
#include "engine/text/jinja_objects.h"
#include "engine/text/jinja_operators.h"

namespace ql::jinja {

namespace {

using JinjaTest = std::function<bool(Runtime&, const Value&, CallArgs&)>;

const Value& jinja_one_arg(CallArgs& a, const char* name) {
    if (a.args.size() + a.kwargs.size() != 1)
        throw Error("TypeError", std::string(name) + "() takes exactly one argument besides the value");
    return a.args.empty() ? a.kwargs[0].second : a.args[0];
}

void jinja_no_arg(CallArgs& a, const char* name) {
    if (!a.args.empty() || !a.kwargs.empty()) throw Error("TypeError", std::string(name) + "() takes no arguments besides the value");
}

bool jinja_is_callable(const Value& v) {
    if (v.is_undefined()) return true;  // Undefined defines __call__ (which raises)
    return v.kind == Kind::Object && v.obj->callable();
}

// test_sequence: len(value) and value.__getitem__ both exist.
bool jinja_is_sequence(const Value& v) {
    switch (v.kind) {
    case Kind::Undefined:
    case Kind::String:
    case Kind::List:
    case Kind::Tuple:
    case Kind::Dict: return true;
    case Kind::Object: return v.obj->length().has_value() && v.obj->has_getitem();
    default: return false;
    }
}

bool jinja_same(const Value& a, const Value& b) {
    // Python `is`: singletons and small ints compare by value, shared containers by identity.
    if (a.kind != b.kind) return false;
    switch (a.kind) {
    case Kind::None:
    case Kind::Undefined: return a.kind == Kind::None || a.text == b.text;
    case Kind::Bool: return a.flag == b.flag;
    case Kind::Int: return a.i == b.i && a.i >= -5 && a.i <= 256;  // CPython's cached small ints
    case Kind::Float: return false;
    case Kind::String: return a.text == b.text;
    case Kind::List:
    case Kind::Tuple: return a.seq == b.seq;
    case Kind::Dict: return a.map == b.map;
    case Kind::Object: return a.obj == b.obj;
    }
    return false;
}

bool jinja_compare_test(Runtime& rt, CallArgs& a, const Value& v, const char* op, const char* name) {
    return compare_operation(rt, op, v, jinja_one_arg(a, name));
}

const std::unordered_map<std::string, JinjaTest>& jinja_tests() {
    static const std::unordered_map<std::string, JinjaTest> t = {
        {"odd", [](Runtime& rt, const Value& v, CallArgs& a) {
             jinja_no_arg(a, "odd");
             return equals(binary_operation(rt, ExprType::Mod, v, Value::integer(2)), Value::integer(1)); }},
        {"even", [](Runtime& rt, const Value& v, CallArgs& a) {
             jinja_no_arg(a, "even");
             return equals(binary_operation(rt, ExprType::Mod, v, Value::integer(2)), Value::integer(0)); }},
        {"divisibleby", [](Runtime& rt, const Value& v, CallArgs& a) {
             return equals(binary_operation(rt, ExprType::Mod, v, jinja_one_arg(a, "divisibleby")), Value::integer(0)); }},
        {"defined", [](Runtime&, const Value& v, CallArgs& a) { jinja_no_arg(a, "defined"); return !v.is_undefined(); }},
        {"undefined", [](Runtime&, const Value& v, CallArgs& a) { jinja_no_arg(a, "undefined"); return v.is_undefined(); }},
        {"filter", [](Runtime&, const Value& v, CallArgs& a) {
             jinja_no_arg(a, "filter");
             require_hashable(v);
             return v.kind == Kind::String && is_jinja_filter(v.str()); }},
        {"test", [](Runtime&, const Value& v, CallArgs& a) {
             jinja_no_arg(a, "test");
             require_hashable(v);
             return v.kind == Kind::String && is_jinja_test(v.str()); }},
        {"none", [](Runtime&, const Value& v, CallArgs& a) { jinja_no_arg(a, "none"); return v.is_none(); }},
        {"boolean", [](Runtime&, const Value& v, CallArgs& a) { jinja_no_arg(a, "boolean"); return v.kind == Kind::Bool; }},
        {"false", [](Runtime&, const Value& v, CallArgs& a) { jinja_no_arg(a, "false"); return v.kind == Kind::Bool && !v.flag; }},
        {"true", [](Runtime&, const Value& v, CallArgs& a) { jinja_no_arg(a, "true"); return v.kind == Kind::Bool && v.flag; }},
        {"integer", [](Runtime&, const Value& v, CallArgs& a) { jinja_no_arg(a, "integer"); return v.kind == Kind::Int; }},
        {"float", [](Runtime&, const Value& v, CallArgs& a) { jinja_no_arg(a, "float"); return v.kind == Kind::Float; }},
        {"lower", [](Runtime& rt, const Value& v, CallArgs& a) {
             jinja_no_arg(a, "lower");
             CallArgs none;
             bool unsafe = false;
             return truthy(rt.call(*builtin_method(Value::string(to_str(v)), "islower", unsafe), none)); }},
        {"upper", [](Runtime& rt, const Value& v, CallArgs& a) {
             jinja_no_arg(a, "upper");
             CallArgs none;
             bool unsafe = false;
             return truthy(rt.call(*builtin_method(Value::string(to_str(v)), "isupper", unsafe), none)); }},
        {"string", [](Runtime&, const Value& v, CallArgs& a) { jinja_no_arg(a, "string"); return v.kind == Kind::String; }},
        {"mapping", [](Runtime&, const Value& v, CallArgs& a) { jinja_no_arg(a, "mapping"); return v.kind == Kind::Dict; }},
        {"number", [](Runtime&, const Value& v, CallArgs& a) { jinja_no_arg(a, "number"); return v.is_number(); }},
        {"sequence", [](Runtime&, const Value& v, CallArgs& a) { jinja_no_arg(a, "sequence"); return jinja_is_sequence(v); }},
        {"iterable", [](Runtime&, const Value& v, CallArgs& a) { jinja_no_arg(a, "iterable"); return is_iterable(v); }},
        {"callable", [](Runtime&, const Value& v, CallArgs& a) { jinja_no_arg(a, "callable"); return jinja_is_callable(v); }},
        {"sameas", [](Runtime&, const Value& v, CallArgs& a) { return jinja_same(v, jinja_one_arg(a, "sameas")); }},
        {"escaped", [](Runtime&, const Value& v, CallArgs& a) { jinja_no_arg(a, "escaped"); return v.is_markup(); }},
        {"in", [](Runtime& rt, const Value& v, CallArgs& a) { return contains(rt, jinja_one_arg(a, "in"), v); }},
        {"==", [](Runtime& rt, const Value& v, CallArgs& a) { return jinja_compare_test(rt, a, v, "==", "eq"); }},
        {"eq", [](Runtime& rt, const Value& v, CallArgs& a) { return jinja_compare_test(rt, a, v, "==", "eq"); }},
        {"equalto", [](Runtime& rt, const Value& v, CallArgs& a) { return jinja_compare_test(rt, a, v, "==", "eq"); }},
        {"!=", [](Runtime& rt, const Value& v, CallArgs& a) { return jinja_compare_test(rt, a, v, "!=", "ne"); }},
        {"ne", [](Runtime& rt, const Value& v, CallArgs& a) { return jinja_compare_test(rt, a, v, "!=", "ne"); }},
        {">", [](Runtime& rt, const Value& v, CallArgs& a) { return jinja_compare_test(rt, a, v, ">", "gt"); }},
        {"gt", [](Runtime& rt, const Value& v, CallArgs& a) { return jinja_compare_test(rt, a, v, ">", "gt"); }},
        {"greaterthan", [](Runtime& rt, const Value& v, CallArgs& a) { return jinja_compare_test(rt, a, v, ">", "gt"); }},
        {">=", [](Runtime& rt, const Value& v, CallArgs& a) { return jinja_compare_test(rt, a, v, ">=", "ge"); }},
        {"ge", [](Runtime& rt, const Value& v, CallArgs& a) { return jinja_compare_test(rt, a, v, ">=", "ge"); }},
        {"<", [](Runtime& rt, const Value& v, CallArgs& a) { return jinja_compare_test(rt, a, v, "<", "lt"); }},
        {"lt", [](Runtime& rt, const Value& v, CallArgs& a) { return jinja_compare_test(rt, a, v, "<", "lt"); }},
        {"lessthan", [](Runtime& rt, const Value& v, CallArgs& a) { return jinja_compare_test(rt, a, v, "<", "lt"); }},
        {"<=", [](Runtime& rt, const Value& v, CallArgs& a) { return jinja_compare_test(rt, a, v, "<=", "le"); }},
        {"le", [](Runtime& rt, const Value& v, CallArgs& a) { return jinja_compare_test(rt, a, v, "<=", "le"); }},
    };
    return t;
}

}  // namespace

bool is_jinja_test(const std::string& name) { return jinja_tests().count(name) != 0; }

bool apply_test(Runtime& rt, const std::string& name, const Value& value, CallArgs& args) {
    const auto& t = jinja_tests();
    const auto it = t.find(name);
    if (it == t.end()) throw Error("TemplateRuntimeError", "No test named '" + name + "'.");
    return it->second(rt, value, args);
}

}  // namespace ql::jinja
