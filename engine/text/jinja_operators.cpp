// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/text/jinja_operators.h"

#include <cmath>
#include <limits>

#include "engine/text/jinja_format.h"
#include "engine/text/jinja_text.h"

namespace ql::jinja {

namespace {

const char* jinja_op_symbol(ExprType op) {
    switch (op) {
    case ExprType::Add: return "+";
    case ExprType::Sub: return "-";
    case ExprType::Mul: return "*";
    case ExprType::Div: return "/";
    case ExprType::FloorDiv: return "//";
    case ExprType::Mod: return "%";
    case ExprType::Pow: return "** or pow()";
    default: return "?";
    }
}

[[noreturn]] void jinja_unsupported(ExprType op, const Value& a, const Value& b) {
    throw Error("TypeError", std::string("unsupported operand type(s) for ") + jinja_op_symbol(op) + ": '" + type_name(a) +
                                 "' and '" + type_name(b) + "'");
}

[[noreturn]] void jinja_overflow() { throw Error("OverflowError", "integer result does not fit in 64 bits"); }

Value jinja_int_result(bool overflowed, int64_t v) {
    if (overflowed) jinja_overflow();
    return Value::integer(v);
}

Value jinja_repeat(Runtime& rt, const Value& seq, int64_t n) {
    if (n < 0) n = 0;
    if (seq.kind == Kind::String) {
        const std::string& s = seq.str();
        if (!s.empty() && static_cast<uint64_t>(n) > rt.max_string_bytes() / s.size() + 1)
            throw Error("LimitError", "a repeated string would exceed the limit of " + std::to_string(rt.max_string_bytes()) +
                                          " bytes (max_output_bytes)");
        std::string out;
        out.reserve(s.size() * static_cast<size_t>(n));
        for (int64_t k = 0; k < n; ++k) out += s;
        return make_string(rt, std::move(out), seq.flag);
    }
    const auto& items = seq.items();
    if (!items.empty() && static_cast<uint64_t>(n) > rt.max_string_bytes() / items.size() + 1)
        throw Error("LimitError", "a repeated list would exceed the limit of " + std::to_string(rt.max_string_bytes()) +
                                      " items (max_output_bytes)");
    std::vector<Value> out;
    for (int64_t k = 0; k < n; ++k) out.insert(out.end(), items.begin(), items.end());
    return make_list(rt, std::move(out), seq.kind == Kind::Tuple);
}

// CPython float_divmod (Objects/floatobject.c).
void jinja_float_divmod(double vx, double wx, double& floordiv, double& mod) {
    mod = std::fmod(vx, wx);
    double div = (vx - mod) / wx;
    if (mod != 0.0) {
        if ((wx < 0) != (mod < 0)) {
            mod += wx;
            div -= 1.0;
        }
    } else {
        mod = std::copysign(0.0, wx);
    }
    if (div != 0.0) {
        floordiv = std::floor(div);
        if (div - floordiv > 0.5) floordiv += 1.0;
    } else {
        floordiv = std::copysign(0.0, vx / wx);
    }
}

int64_t jinja_int_pow(int64_t base, int64_t exp) {
    int64_t result = 1;
    while (exp > 0) {
        if (exp & 1)
            if (__builtin_mul_overflow(result, base, &result)) jinja_overflow();
        exp >>= 1;
        if (exp > 0 && __builtin_mul_overflow(base, base, &base)) jinja_overflow();
    }
    return result;
}

}  // namespace

Value binary_operation(Runtime& rt, ExprType op, const Value& a, const Value& b) {
    // str.__mod__ runs first and takes any right operand ("%s" % undefined is "").
    if (op == ExprType::Mod && a.kind == Kind::String) return make_string(rt, percent_format(rt, a.str(), b, a.flag), a.flag);
    if (a.is_undefined()) raise_undefined(a);
    if (b.is_undefined()) raise_undefined(b);
    const bool numbers = a.is_number() && b.is_number();
    const bool floats = numbers && (a.kind == Kind::Float || b.kind == Kind::Float);
    switch (op) {
    case ExprType::Add: {
        if (numbers) {
            if (floats) return Value::real(a.as_double() + b.as_double());
            int64_t r = 0;
            const bool overflowed = __builtin_add_overflow(a.as_int(), b.as_int(), &r);
            return jinja_int_result(overflowed, r);
        }
        if (a.kind == Kind::String && b.kind == Kind::String) {
            // markupsafe.Markup.__add__ / __radd__ escape the plain side.
            if (a.flag || b.flag) {
                const std::string left = a.flag ? a.str() : html_escape(a.str());
                const std::string right = b.flag ? b.str() : html_escape(b.str());
                return make_string(rt, left + right, true);
            }
            return make_string(rt, a.str() + b.str());
        }
        if ((a.kind == Kind::List || a.kind == Kind::Tuple) && a.kind == b.kind) {
            std::vector<Value> out = a.items();
            out.insert(out.end(), b.items().begin(), b.items().end());
            return make_list(rt, std::move(out), a.kind == Kind::Tuple);
        }
        if (a.kind == Kind::String && !a.flag)
            throw Error("TypeError", "can only concatenate str (not \"" + type_name(b) + "\") to str");
        if (a.kind == Kind::List || a.kind == Kind::Tuple)
            throw Error("TypeError", "can only concatenate " + type_name(a) + " (not \"" + type_name(b) + "\") to " +
                                         type_name(a));
        jinja_unsupported(op, a, b);
    }
    case ExprType::Sub: {
        if (!numbers) jinja_unsupported(op, a, b);
        if (floats) return Value::real(a.as_double() - b.as_double());
        int64_t r = 0;
        const bool overflowed = __builtin_sub_overflow(a.as_int(), b.as_int(), &r);
        return jinja_int_result(overflowed, r);
    }
    case ExprType::Mul: {
        if (numbers) {
            if (floats) return Value::real(a.as_double() * b.as_double());
            int64_t r = 0;
            const bool overflowed = __builtin_mul_overflow(a.as_int(), b.as_int(), &r);
            return jinja_int_result(overflowed, r);
        }
        const bool a_seq = a.kind == Kind::String || a.kind == Kind::List || a.kind == Kind::Tuple;
        const bool b_seq = b.kind == Kind::String || b.kind == Kind::List || b.kind == Kind::Tuple;
        if (a_seq && b.is_int_like()) return jinja_repeat(rt, a, b.as_int());
        if (b_seq && a.is_int_like()) return jinja_repeat(rt, b, a.as_int());
        if (a_seq || b_seq)
            throw Error("TypeError", "can't multiply sequence by non-int of type '" + type_name(a_seq ? b : a) + "'");
        jinja_unsupported(op, a, b);
    }
    case ExprType::Div: {
        if (!numbers) jinja_unsupported(op, a, b);
        if (b.as_double() == 0.0) throw Error("ZeroDivisionError", floats ? "float division by zero" : "division by zero");
        return Value::real(a.as_double() / b.as_double());
    }
    case ExprType::FloorDiv:
    case ExprType::Mod: {
        if (!numbers) jinja_unsupported(op, a, b);
        if (floats) {
            const double x = a.as_double(), y = b.as_double();
            if (y == 0.0)
                throw Error("ZeroDivisionError", op == ExprType::Mod ? "float modulo" : "float floor division by zero");
            double q, m;
            jinja_float_divmod(x, y, q, m);
            return Value::real(op == ExprType::Mod ? m : q);
        }
        const int64_t x = a.as_int(), y = b.as_int();
        if (y == 0) throw Error("ZeroDivisionError", "integer division or modulo by zero");
        if (x == std::numeric_limits<int64_t>::min() && y == -1) {
            if (op == ExprType::Mod) return Value::integer(0);
            jinja_overflow();
        }
        int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) {
            m += y;
            q -= 1;
        }
        return Value::integer(op == ExprType::Mod ? m : q);
    }
    case ExprType::Pow: {
        if (!numbers) jinja_unsupported(op, a, b);
        if (!floats && b.as_int() >= 0) return Value::integer(jinja_int_pow(a.as_int(), b.as_int()));
        const double x = a.as_double(), y = b.as_double();
        if (x == 0.0 && y < 0) throw Error("ZeroDivisionError", "0.0 cannot be raised to a negative power");
        if (x < 0 && y != std::floor(y))
            throw Error("NotSupported", "a negative number to a fractional power is complex in Python; not supported");
        const double r = std::pow(x, y);
        if (std::isinf(r) && std::isfinite(x) && std::isfinite(y)) throw Error("OverflowError", "(34, 'Numerical result out of range')");
        return Value::real(r);
    }
    default: break;
    }
    jinja_unsupported(op, a, b);
}

Value unary_operation(ExprType op, const Value& a) {
    if (a.is_undefined()) raise_undefined(a);
    if (!a.is_number())
        throw Error("TypeError", std::string("bad operand type for unary ") + (op == ExprType::Neg ? "-" : "+") + ": '" +
                                     type_name(a) + "'");
    if (a.kind == Kind::Float) return Value::real(op == ExprType::Neg ? -a.f : a.f);
    if (op == ExprType::Pos) return Value::integer(a.as_int());
    if (a.as_int() == std::numeric_limits<int64_t>::min()) jinja_overflow();
    return Value::integer(-a.as_int());
}

bool compare_operation(Runtime& rt, const std::string& op, const Value& a, const Value& b) {
    // Comparing or searching strings reads them: charge their size as work.
    if (a.kind == Kind::String || b.kind == Kind::String)
        rt.charge(static_cast<int64_t>(((a.kind == Kind::String ? a.str().size() : 0) +
                                        (b.kind == Kind::String ? b.str().size() : 0)) / 64));
    if (op == "==") return equals(a, b);
    if (op == "!=") return !equals(a, b);
    if (op == "in") return contains(rt, b, a);
    if (op == "notin") return !contains(rt, b, a);
    return ordered_compare(op, a, b);
}

}  // namespace ql::jinja
