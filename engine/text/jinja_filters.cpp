// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/text/jinja_filters.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <unordered_map>

#include "engine/text/jinja_access.h"
#include "engine/text/jinja_format.h"
#include "engine/text/jinja_is_tests.h"
#include "engine/text/jinja_json.h"
#include "engine/text/jinja_objects.h"
#include "engine/text/jinja_operators.h"
#include "engine/text/jinja_text.h"

namespace ql::jinja {

namespace {

using JinjaFilter = std::function<Value(Runtime&, const Value&, CallArgs&)>;

// markupsafe.soft_str: str (Markup included) stays, anything else becomes str(x).
Value jinja_soft_str(const Value& v) { return v.kind == Kind::String ? v : Value::string(to_str(v)); }

// filters.ignore_case.
Value jinja_ignore_case(const Value& v) { return v.kind == Kind::String ? Value::string(py_lower(v.str())) : v; }

// filters._prepare_attribute_parts: "a.0.b" -> ["a", 0, "b"].
std::vector<Value> jinja_attribute_parts(const std::optional<Value>& attr) {
    std::vector<Value> parts;
    if (!attr || attr->is_none()) return parts;
    if (attr->kind != Kind::String) {
        parts.push_back(*attr);
        return parts;
    }
    for (const std::string& p : py_split(attr->str(), std::string("."), -1)) {
        const bool digits = !p.empty() && std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (digits) {
            try {
                parts.push_back(Value::integer(*py_parse_int(p, 10)));
                continue;
            } catch (const std::overflow_error&) {
            }
        }
        parts.push_back(Value::string(p));
    }
    return parts;
}

// filters.make_attrgetter: environment.getitem per part, then the default and postprocessing.
Value jinja_get_path(Runtime& rt, Value item, const std::vector<Value>& parts, const std::optional<Value>& dflt,
                     bool ignore_case) {
    for (const Value& part : parts) {
        item = get_item(rt, item, part);
        if (dflt && !dflt->is_none() && item.is_undefined()) item = *dflt;
    }
    return ignore_case ? jinja_ignore_case(item) : item;
}

bool jinja_flag(const std::optional<Value>& v) { return v && truthy(*v); }

int64_t jinja_int_arg(const std::optional<Value>& v, int64_t dflt, const char* what) {
    if (!v) return dflt;
    if (!v->is_int_like()) throw Error("TypeError", std::string(what) + ": an integer is required, not " + type_name(*v));
    return v->as_int();
}

bool jinja_sort_less(const Value& a, const Value& b) { return ordered_compare("<", a, b); }

Value jinja_sorted(Runtime& rt, std::vector<Value> items, const std::function<Value(const Value&)>& key, bool reverse) {
    std::vector<std::pair<Value, Value>> keyed;
    keyed.reserve(items.size());
    for (auto& x : items) keyed.emplace_back(key(x), std::move(x));
    rt.charge(static_cast<int64_t>(keyed.size()) * 4);
    std::stable_sort(keyed.begin(), keyed.end(), [reverse](const auto& x, const auto& y) {
        return reverse ? jinja_sort_less(y.first, x.first) : jinja_sort_less(x.first, y.first);
    });
    std::vector<Value> out;
    out.reserve(keyed.size());
    for (auto& kv : keyed) out.push_back(std::move(kv.second));
    return make_list(rt, std::move(out));
}

// A lazy generator over `source` (iterated when first pulled), mapping each item through `step`,
// which returns nullopt to skip an item. `prepare` runs at the first pull (Jinja2's generator
// filters check their arguments lazily).
Value jinja_lazy(const std::string& type, Value source, std::function<void(Runtime&)> prepare,
                 std::function<std::optional<Value>(Runtime&, const Value&)> step) {
    struct State {
        bool started = false;
        std::vector<Value> items;
        size_t pos = 0;
    };
    auto st = std::make_shared<State>();
    return Value::object(std::make_shared<GeneratorObject>(
        type, [st, source, prepare, step](Runtime& rt) -> std::optional<Value> {
            if (!st->started) {
                st->started = true;
                if (prepare) prepare(rt);
                st->items = iterate(rt, source);
            }
            while (st->pos < st->items.size()) {
                rt.charge(1);
                if (auto v = step(rt, st->items[st->pos++])) return v;
            }
            return std::nullopt;
        }));
}

Value jinja_empty_generator(const std::string& type) { return make_generator(type, {}); }

// filters.prepare_select_or_reject + select_or_reject.
Value jinja_select(Runtime&, const Value& value, CallArgs& a, bool select, bool attr, const char* type) {
    if (!truthy(value)) return jinja_empty_generator(type);
    auto args = std::make_shared<CallArgs>(a);
    auto path = std::make_shared<std::vector<Value>>();
    auto test = std::make_shared<std::optional<std::string>>();
    auto prepare = [args, path, test, attr](Runtime&) {
        size_t off = 0;
        if (attr) {
            if (args->args.empty()) throw Error("FilterArgumentError", "Missing parameter for attribute name");
            *path = jinja_attribute_parts(args->args[0]);
            off = 1;
        }
        if (args->args.size() > off) {
            if (args->args[off].kind != Kind::String) throw Error("TypeError", "test name must be a string");
            *test = args->args[off].str();
            args->args.erase(args->args.begin(), args->args.begin() + static_cast<long>(off) + 1);
        } else {
            args->args.clear();
        }
    };
    return jinja_lazy(type, value, prepare, [args, path, test, select](Runtime& rt, const Value& item) -> std::optional<Value> {
        const Value probe = jinja_get_path(rt, item, *path, std::nullopt, false);
        bool ok;
        if (*test) {
            CallArgs call = *args;
            ok = rt.call_test(**test, probe, call);
        } else {
            ok = truthy(probe);
        }
        if (ok == select) return item;
        return std::nullopt;
    });
}

Value jinja_round(const Value& v, const std::optional<Value>& prec_arg, const std::optional<Value>& method_arg) {
    std::string method = "common";
    if (method_arg) {
        if (method_arg->kind != Kind::String) throw Error("FilterArgumentError", "method must be common, ceil or floor");
        method = method_arg->str();
    }
    if (method != "common" && method != "ceil" && method != "floor")
        throw Error("FilterArgumentError", "method must be common, ceil or floor");
    const int64_t precision = jinja_int_arg(prec_arg, 0, "round");
    if (!v.is_number()) throw Error("TypeError", "type " + type_name(v) + " doesn't define __round__ method");
    if (method != "common") {
        // math.ceil/floor(value * 10**precision) / 10**precision: int / int is true division.
        const double scale = std::pow(10.0, static_cast<double>(precision));
        const double scaled = v.as_double() * scale;
        const double r = method == "ceil" ? std::ceil(scaled) : std::floor(scaled);
        return Value::real(r / scale);
    }
    if (v.kind != Kind::Float) {
        // round(int, n): n >= 0 keeps the int; n < 0 rounds half to even at 10**-n.
        if (precision >= 0) return Value::integer(v.as_int());
        if (precision < -18) return Value::integer(0);
        int64_t p = 1;
        for (int64_t k = 0; k < -precision; ++k) p *= 10;
        const int64_t x = v.as_int();
        int64_t q = x / p, r = x % p;
        if (r < 0) {
            r += p;
            q -= 1;
        }
        if (2 * r > p || (2 * r == p && (q & 1))) ++q;
        return Value::integer(q * p);
    }
    const double x = v.f;
    if (!std::isfinite(x) || precision > 308) return Value::real(x);
    if (precision < -308) return Value::real(0.0 * x);
    // CPython double_round: correctly rounded to `precision` decimals, ties to even, which is what
    // printf's %.*f gives in glibc.
    char buf[512];
    if (precision >= 0) {
        std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(precision), x);
    } else {
        const double p = std::pow(10.0, static_cast<double>(-precision));
        std::snprintf(buf, sizeof buf, "%.0f", x / p);
        return Value::real(std::strtod(buf, nullptr) * p);
    }
    return Value::real(*py_parse_float(buf));
}

[[noreturn]] void jinja_unsupported_filter(const std::string& name) {
    throw Error("NotSupported", "the '" + name + "' filter is not supported by QuantLab's chat-template engine");
}

const std::unordered_map<std::string, JinjaFilter>& jinja_filters() {
    static const std::unordered_map<std::string, JinjaFilter> f = {
        {"abs", [](Runtime&, const Value& v, CallArgs& a) -> Value {
             bind_args("abs", a, {}, 0);
             if (v.kind == Kind::Float) return Value::real(std::fabs(v.f));
             if (v.is_int_like()) {
                 if (v.as_int() == std::numeric_limits<int64_t>::min()) throw Error("OverflowError", "integer result does not fit in 64 bits");
                 return Value::integer(v.as_int() < 0 ? -v.as_int() : v.as_int());
             }
             throw Error("TypeError", "bad operand type for abs(): '" + type_name(v) + "'"); }},
        {"attr", [](Runtime& rt, const Value& v, CallArgs& a) -> Value {
             auto args = bind_args("attr", a, {"name"}, 1);
             if (args[0]->kind != Kind::String) throw Error("TypeError", "attribute name must be string");
             if (v.is_undefined()) raise_undefined(v);
             bool unsafe = false;
             if (auto x = python_attribute(rt, v, args[0]->str(), unsafe)) return *x;
             if (unsafe) return Value::undefined("access to attribute '" + args[0]->str() + "' of '" + type_name(v) + "' object is unsafe.", true);
             return Value::undefined("'" + type_name(v) + " object' has no attribute '" + args[0]->str() + "'"); }},
        {"batch", [](Runtime&, const Value& v, CallArgs& a) -> Value {
             auto args = bind_args("batch", a, {"linecount", "fill_with"}, 1);
             const int64_t n = jinja_int_arg(args[0], 0, "batch");
             const std::optional<Value> fill = args[1] && !args[1]->is_none() ? args[1] : std::nullopt;
             auto st = std::make_shared<std::pair<bool, std::vector<Value>>>(false, std::vector<Value>());
             auto pos = std::make_shared<size_t>(0);
             return Value::object(std::make_shared<GeneratorObject>("generator", [v, n, fill, st, pos](Runtime& rt) -> std::optional<Value> {
                 if (!st->first) {
                     st->first = true;
                     st->second = iterate(rt, v);
                 }
                 auto& items = st->second;
                 if (*pos >= items.size()) return std::nullopt;
                 std::vector<Value> chunk;
                 if (n <= 0) {
                     // len(tmp) == linecount never holds: one batch of everything.
                     chunk.assign(items.begin() + static_cast<long>(*pos), items.end());
                     *pos = items.size();
                     return make_list(rt, std::move(chunk));
                 }
                 while (*pos < items.size() && static_cast<int64_t>(chunk.size()) < n) chunk.push_back(items[(*pos)++]);
                 if (fill && static_cast<int64_t>(chunk.size()) < n)
                     while (static_cast<int64_t>(chunk.size()) < n) chunk.push_back(*fill);
                 return make_list(rt, std::move(chunk));
             })); }},
        {"capitalize", [](Runtime& rt, const Value& v, CallArgs& a) {
             bind_args("capitalize", a, {}, 0);
             const Value s = jinja_soft_str(v);
             return make_string(rt, py_capitalize(s.str()), s.flag); }},
        {"center", [](Runtime& rt, const Value& v, CallArgs& a) {
             auto args = bind_args("center", a, {"width"}, 0);
             const int64_t width = jinja_int_arg(args[0], 80, "center");
             if (width > static_cast<int64_t>(rt.max_string_bytes())) throw Error("LimitError", "center width beyond the output limit");
             const Value s = jinja_soft_str(v);
             return make_string(rt, py_pad(s.str(), width, ' ', 0), s.flag); }},
        {"count", [](Runtime&, const Value& v, CallArgs& a) { bind_args("count", a, {}, 0); return Value::integer(length_of(v)); }},
        {"length", [](Runtime&, const Value& v, CallArgs& a) { bind_args("length", a, {}, 0); return Value::integer(length_of(v)); }},
        {"default", [](Runtime&, const Value& v, CallArgs& a) {
             auto args = bind_args("default", a, {"default_value", "boolean"}, 0);
             if (v.is_undefined() || (jinja_flag(args[1]) && !truthy(v))) return args[0] ? *args[0] : Value::string("");
             return v; }},
        {"dictsort", [](Runtime& rt, const Value& v, CallArgs& a) -> Value {
             auto args = bind_args("dictsort", a, {"case_sensitive", "by", "reverse"}, 0);
             const bool case_sensitive = jinja_flag(args[0]);
             int pos = 0;
             if (args[1]) {
                 if (args[1]->kind == Kind::String && args[1]->str() == "value") pos = 1;
                 else if (!(args[1]->kind == Kind::String && args[1]->str() == "key"))
                     throw Error("FilterArgumentError", "You can only sort by either \"key\" or \"value\"");
             }
             if (v.is_undefined()) raise_undefined(v);
             if (v.kind != Kind::Dict) throw Error("AttributeError", "'" + type_name(v) + "' object has no attribute 'items'");
             std::vector<Value> items;
             for (const auto& kv : v.pairs()) items.push_back(Value::tuple({kv.first, kv.second}));
             return jinja_sorted(rt, std::move(items), [pos, case_sensitive](const Value& item) {
                 const Value& x = item.items()[static_cast<size_t>(pos)];
                 return case_sensitive ? x : jinja_ignore_case(x);
             }, jinja_flag(args[2])); }},
        {"escape", [](Runtime& rt, const Value& v, CallArgs& a) {
             bind_args("escape", a, {}, 0);
             if (v.is_markup()) return v;
             return make_string(rt, html_escape(to_str(v)), true); }},
        {"forceescape", [](Runtime& rt, const Value& v, CallArgs& a) {
             bind_args("forceescape", a, {}, 0);
             return make_string(rt, html_escape(to_str(v)), true); }},
        {"first", [](Runtime& rt, const Value& v, CallArgs& a) -> Value {
             bind_args("first", a, {}, 0);
             if (v.kind == Kind::Object) {
                 if (auto* g = dynamic_cast<GeneratorObject*>(v.obj.get())) {
                     if (auto x = g->pull(rt)) return *x;
                     return Value::undefined("No first item, sequence was empty.");
                 }
             }
             std::vector<Value> items = iterate(rt, v);
             if (items.empty()) return Value::undefined("No first item, sequence was empty.");
             return items.front(); }},
        {"last", [](Runtime& rt, const Value& v, CallArgs& a) -> Value {
             bind_args("last", a, {}, 0);
             if (v.kind == Kind::Object && dynamic_cast<GeneratorObject*>(v.obj.get()))
                 throw Error("TypeError", "'" + type_name(v) + "' object is not reversible");
             std::vector<Value> items = iterate(rt, v);
             if (items.empty()) return Value::undefined("No last item, sequence was empty.");
             return items.back(); }},
        {"float", [](Runtime&, const Value& v, CallArgs& a) -> Value {
             auto args = bind_args("float", a, {"default"}, 0);
             const Value dflt = args[0] ? *args[0] : Value::real(0.0);
             if (v.is_undefined()) raise_undefined(v);
             if (v.is_number()) return Value::real(v.as_double());
             if (v.kind == Kind::String) {
                 if (auto d = py_parse_float(v.str())) return Value::real(*d);
             }
             return dflt; }},
        {"int", [](Runtime&, const Value& v, CallArgs& a) -> Value {
             auto args = bind_args("int", a, {"default", "base"}, 0);
             const Value dflt = args[0] ? *args[0] : Value::integer(0);
             const int64_t base = jinja_int_arg(args[1], 10, "int");
             if (v.is_undefined()) raise_undefined(v);
             if (v.is_int_like()) return Value::integer(v.as_int());
             if (v.kind == Kind::Float) {
                 // int(nan) is a ValueError (the default); int(inf) an OverflowError, which do_int lets through.
                 if (std::isnan(v.f)) return dflt;
                 if (std::isinf(v.f) || std::fabs(v.f) >= 9.2e18) throw Error("OverflowError", "cannot convert float to a 64-bit integer");
                 return Value::integer(static_cast<int64_t>(std::trunc(v.f)));
             }
             if (v.kind == Kind::String) {
                 if (base != 0 && (base < 2 || base > 36)) throw Error("ValueError", "int() base must be >= 2 and <= 36, or 0");
                 try {
                     if (auto i = py_parse_int(v.str(), static_cast<int>(base))) return Value::integer(*i);
                 } catch (const std::overflow_error&) {
                     throw Error("OverflowError", "int beyond 64 bits");
                 }
                 // "42.23"|int gives 42: int(float(value)).
                 if (auto d = py_parse_float(v.str())) {
                     if (std::isfinite(*d) && std::fabs(*d) < 9.2e18) return Value::integer(static_cast<int64_t>(std::trunc(*d)));
                     if (std::isfinite(*d)) throw Error("OverflowError", "int beyond 64 bits");
                 }
             }
             return dflt; }},
        {"format", [](Runtime& rt, const Value& v, CallArgs& a) {
             if (!a.args.empty() && !a.kwargs.empty())
                 throw Error("FilterArgumentError", "can't handle positional and keyword arguments at the same time");
             const Value s = jinja_soft_str(v);
             Value args;
             if (!a.kwargs.empty()) {
                 std::vector<std::pair<Value, Value>> items;
                 for (auto& kw : a.kwargs) items.emplace_back(Value::string(kw.first), kw.second);
                 args = Value::dict(std::move(items), true);
             } else {
                 args = Value::tuple(a.args);
             }
             return make_string(rt, percent_format(rt, s.str(), args, s.flag), s.flag); }},
        {"groupby", [](Runtime& rt, const Value& v, CallArgs& a) {
             auto args = bind_args("groupby", a, {"attribute", "default", "case_sensitive"}, 1);
             const auto parts = jinja_attribute_parts(args[0]);
             const std::optional<Value> dflt = args[1];
             const bool case_sensitive = jinja_flag(args[2]);
             auto key = [&](const Value& item) { return jinja_get_path(rt, item, parts, dflt, !case_sensitive); };
             const Value sorted = jinja_sorted(rt, iterate(rt, v), key, false);
             std::vector<Value> groups;
             const auto& items = sorted.items();
             for (size_t k = 0; k < items.size();) {
                 const Value gk = key(items[k]);
                 std::vector<Value> members;
                 size_t e = k;
                 while (e < items.size() && equals(key(items[e]), gk)) members.push_back(items[e++]);
                 const Value shown = case_sensitive ? gk : jinja_get_path(rt, members[0], parts, dflt, false);
                 // _GroupTuple(grouper, list): a namedtuple that prints as a plain tuple.
                 Value group = Value::tuple({shown, Value::list(std::move(members))});
                 auto named = std::make_shared<Sequence>(*group.seq);
                 named->fields = {"grouper", "list"};
                 group.seq = std::move(named);
                 groups.push_back(std::move(group));
                 k = e;
             }
             return make_list(rt, std::move(groups)); }},
        {"indent", [](Runtime& rt, const Value& v, CallArgs& a) -> Value {
             auto args = bind_args("indent", a, {"width", "first", "blank"}, 0);
             std::string indention = "    ";
             if (args[0]) {
                 if (args[0]->kind == Kind::String) {
                     indention = args[0]->str();
                 } else if (args[0]->is_int_like()) {
                     const int64_t w = args[0]->as_int();
                     if (w > 10000) throw Error("LimitError", "indent width too large");
                     indention = std::string(static_cast<size_t>(std::max<int64_t>(w, 0)), ' ');
                 } else {
                     throw Error("TypeError", "can't multiply sequence by non-int of type '" + type_name(*args[0]) + "'");
                 }
             }
             if (v.is_undefined()) raise_undefined(v);
             if (v.kind != Kind::String) throw Error("TypeError", "unsupported operand type(s) for +=: '" + type_name(v) + "' and 'str'");
             std::string s = v.str() + "\n";  // "this quirk is necessary for splitlines method"
             const std::vector<std::string> lines = py_splitlines(s, false);
             std::string rv;
             if (jinja_flag(args[2])) {
                 for (size_t k = 0; k < lines.size(); ++k) {
                     if (k) rv += "\n" + indention;
                     rv += lines[k];
                 }
             } else {
                 for (size_t k = 0; k < lines.size(); ++k) {
                     if (k == 0) {
                         rv = lines[0];
                         continue;
                     }
                     rv += "\n";
                     if (!lines[k].empty()) rv += indention;
                     rv += lines[k];
                 }
             }
             if (jinja_flag(args[1])) rv = indention + rv;
             return make_string(rt, std::move(rv), v.flag); }},
        {"join", [](Runtime& rt, const Value& v, CallArgs& a) {
             auto args = bind_args("join", a, {"d", "attribute"}, 0);
             const std::string d = args[0] ? to_str(*args[0]) : std::string();
             const auto parts = jinja_attribute_parts(args[1]);
             std::string out;
             bool first = true;
             for (const Value& x : iterate(rt, v)) {
                 if (!first) out += d;
                 first = false;
                 out += to_str(args[1] ? jinja_get_path(rt, x, parts, std::nullopt, false) : x);
                 if (out.size() > rt.max_string_bytes())
                     throw Error("LimitError", "join result exceeds the limit of " + std::to_string(rt.max_string_bytes()) + " bytes");
             }
             return make_string(rt, std::move(out)); }},
        {"list", [](Runtime& rt, const Value& v, CallArgs& a) {
             bind_args("list", a, {}, 0);
             return make_list(rt, iterate(rt, v)); }},
        {"lower", [](Runtime& rt, const Value& v, CallArgs& a) {
             bind_args("lower", a, {}, 0);
             const Value s = jinja_soft_str(v);
             return make_string(rt, py_lower(s.str()), s.flag); }},
        {"upper", [](Runtime& rt, const Value& v, CallArgs& a) {
             bind_args("upper", a, {}, 0);
             const Value s = jinja_soft_str(v);
             return make_string(rt, py_upper(s.str()), s.flag); }},
        {"items", [](Runtime&, const Value& v, CallArgs& a) -> Value {
             bind_args("items", a, {}, 0);
             if (v.is_undefined()) return jinja_empty_generator("generator");
             auto pos = std::make_shared<size_t>(0);
             return Value::object(std::make_shared<GeneratorObject>("generator", [v, pos](Runtime&) -> std::optional<Value> {
                 if (v.kind != Kind::Dict) throw Error("TypeError", "Can only get item pairs from a mapping.");
                 if (*pos >= v.pairs().size()) return std::nullopt;
                 const auto& kv = v.pairs()[(*pos)++];
                 return Value::tuple({kv.first, kv.second});
             })); }},
        {"map", [](Runtime&, const Value& v, CallArgs& a) -> Value {
             if (!truthy(v)) return jinja_empty_generator("generator");
             auto args = std::make_shared<CallArgs>(a);
             auto mode = std::make_shared<int>(0);  // 1: attribute, 2: filter
             auto parts = std::make_shared<std::vector<Value>>();
             auto dflt = std::make_shared<std::optional<Value>>();
             auto filter = std::make_shared<std::string>();
             auto prepare = [args, mode, parts, dflt, filter](Runtime&) {
                 // filters.prepare_map
                 auto find_kw = [&](const char* k) -> std::optional<Value> {
                     for (auto it = args->kwargs.begin(); it != args->kwargs.end(); ++it)
                         if (it->first == k) {
                             Value x = it->second;
                             args->kwargs.erase(it);
                             return x;
                         }
                     return std::nullopt;
                 };
                 const bool has_attribute = std::any_of(args->kwargs.begin(), args->kwargs.end(), [](const auto& kw) { return kw.first == "attribute"; });
                 if (args->args.empty() && has_attribute) {
                     *parts = jinja_attribute_parts(find_kw("attribute"));
                     *dflt = find_kw("default");
                     if (!args->kwargs.empty())
                         throw Error("FilterArgumentError", "Unexpected keyword argument '" + args->kwargs[0].first + "'");
                     *mode = 1;
                 } else {
                     if (args->args.empty()) throw Error("FilterArgumentError", "map requires a filter argument");
                     if (args->args[0].kind != Kind::String) throw Error("TypeError", "filter name must be a string");
                     *filter = args->args[0].str();
                     args->args.erase(args->args.begin());
                     *mode = 2;
                 }
             };
             return jinja_lazy("generator", v, prepare, [args, mode, parts, dflt, filter](Runtime& rt, const Value& item) -> std::optional<Value> {
                 if (*mode == 1) return jinja_get_path(rt, item, *parts, *dflt, false);
                 CallArgs call = *args;
                 return rt.call_filter(*filter, item, call);
             }); }},
        {"min", [](Runtime& rt, const Value& v, CallArgs& a) -> Value {
             auto args = bind_args("min", a, {"case_sensitive", "attribute"}, 0);
             const auto parts = jinja_attribute_parts(args[1]);
             const bool ci = !jinja_flag(args[0]);
             const std::vector<Value> items = iterate(rt, v);
             if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
             size_t best = 0;
             Value best_key = jinja_get_path(rt, items[0], parts, std::nullopt, ci);
             for (size_t k = 1; k < items.size(); ++k) {
                 Value key = jinja_get_path(rt, items[k], parts, std::nullopt, ci);
                 if (ordered_compare("<", key, best_key)) {
                     best = k;
                     best_key = key;
                 }
             }
             return items[best]; }},
        {"max", [](Runtime& rt, const Value& v, CallArgs& a) -> Value {
             auto args = bind_args("max", a, {"case_sensitive", "attribute"}, 0);
             const auto parts = jinja_attribute_parts(args[1]);
             const bool ci = !jinja_flag(args[0]);
             const std::vector<Value> items = iterate(rt, v);
             if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
             size_t best = 0;
             Value best_key = jinja_get_path(rt, items[0], parts, std::nullopt, ci);
             for (size_t k = 1; k < items.size(); ++k) {
                 Value key = jinja_get_path(rt, items[k], parts, std::nullopt, ci);
                 if (ordered_compare(">", key, best_key)) {
                     best = k;
                     best_key = key;
                 }
             }
             return items[best]; }},
        {"reject", [](Runtime& rt, const Value& v, CallArgs& a) { return jinja_select(rt, v, a, false, false, "generator"); }},
        {"select", [](Runtime& rt, const Value& v, CallArgs& a) { return jinja_select(rt, v, a, true, false, "generator"); }},
        {"rejectattr", [](Runtime& rt, const Value& v, CallArgs& a) { return jinja_select(rt, v, a, false, true, "generator"); }},
        {"selectattr", [](Runtime& rt, const Value& v, CallArgs& a) { return jinja_select(rt, v, a, true, true, "generator"); }},
        {"replace", [](Runtime& rt, const Value& v, CallArgs& a) {
             auto args = bind_args("replace", a, {"old", "new", "count"}, 2);
             const std::string s = to_str(v), old_text = to_str(*args[0]), new_text = to_str(*args[1]);
             const int64_t count = args[2] && !args[2]->is_none() ? jinja_int_arg(args[2], -1, "replace") : -1;
             if (old_text.empty() || new_text.size() > old_text.size()) {
                 const uint64_t hits = old_text.empty() ? static_cast<uint64_t>(code_point_count(s)) + 1
                                                        : static_cast<uint64_t>(py_count(s, old_text, 0, std::numeric_limits<int64_t>::max()));
                 if (s.size() + hits * new_text.size() > rt.max_string_bytes())
                     throw Error("LimitError", "replace result exceeds the limit of " + std::to_string(rt.max_string_bytes()) + " bytes");
             }
             return make_string(rt, py_replace(s, old_text, new_text, count)); }},
        {"reverse", [](Runtime& rt, const Value& v, CallArgs& a) -> Value {
             bind_args("reverse", a, {}, 0);
             if (v.kind == Kind::String) {
                 std::u32string u = decode_utf8(v.str());
                 std::reverse(u.begin(), u.end());
                 return make_string(rt, encode_utf8(u), v.flag);
             }
             const bool generator = v.kind == Kind::Object && dynamic_cast<GeneratorObject*>(v.obj.get());
             std::vector<Value> items = iterate(rt, v);
             std::reverse(items.begin(), items.end());
             if (generator) return make_list(rt, std::move(items));  // the list(value); rv.reverse() fallback
             const char* type = v.kind == Kind::List ? "list_reverseiterator"
                                : v.kind == Kind::Dict ? "dict_reversekeyiterator"
                                : (v.kind == Kind::Object && dynamic_cast<RangeObject*>(v.obj.get())) ? "range_iterator"
                                                                                                       : "reversed";
             if (!is_iterable(v)) throw Error("FilterArgumentError", "argument must be iterable");
             return make_generator(type, std::move(items)); }},
        {"round", [](Runtime&, const Value& v, CallArgs& a) {
             auto args = bind_args("round", a, {"precision", "method"}, 0);
             return jinja_round(v, args[0], args[1]); }},
        {"safe", [](Runtime& rt, const Value& v, CallArgs& a) {
             bind_args("safe", a, {}, 0);
             if (v.is_markup()) return v;
             return make_string(rt, to_str(v), true); }},
        {"slice", [](Runtime& rt, const Value& v, CallArgs& a) -> Value {
             // sync_do_slice is a generator: nothing is read (or raised) before the first pull.
             auto args = bind_args("slice", a, {"slices", "fill_with"}, 1);
             const int64_t slices = jinja_int_arg(args[0], 1, "slice");
             const std::optional<Value> fill = args[1] && !args[1]->is_none() ? args[1] : std::nullopt;
             auto out = std::make_shared<std::vector<Value>>();
             auto pos = std::make_shared<size_t>(0);
             auto started = std::make_shared<bool>(false);
             (void)rt;
             return Value::object(std::make_shared<GeneratorObject>("generator", [v, slices, fill, out, pos, started](Runtime& r) -> std::optional<Value> {
                 if (!*started) {
                     *started = true;
                     const std::vector<Value> seq = iterate(r, v);
                     if (slices == 0) throw Error("ZeroDivisionError", "integer division or modulo by zero");
                     const int64_t length = static_cast<int64_t>(seq.size());
                     // Python's // and % with a negative divisor round toward minus infinity.
                     auto floordiv = [](int64_t x, int64_t y) { int64_t q = x / y; if ((x % y != 0) && ((x < 0) != (y < 0))) --q; return q; };
                     const int64_t per = floordiv(length, slices), extra = length - per * slices;
                     int64_t offset = 0;
                     for (int64_t n = 0; n < slices && n < 100000; ++n) {
                         const int64_t start = offset + n * per;
                         if (n < extra) ++offset;
                         const int64_t end = offset + (n + 1) * per;
                         std::vector<Value> tmp;
                         for (int64_t k = std::max<int64_t>(start, 0); k < std::min(end, length); ++k) tmp.push_back(seq[static_cast<size_t>(k)]);
                         if (fill && n >= extra) tmp.push_back(*fill);
                         out->push_back(make_list(r, std::move(tmp)));
                     }
                 }
                 if (*pos >= out->size()) return std::nullopt;
                 return (*out)[(*pos)++];
             })); }},
        {"sort", [](Runtime& rt, const Value& v, CallArgs& a) {
             auto args = bind_args("sort", a, {"reverse", "case_sensitive", "attribute"}, 0);
             const bool ci = !jinja_flag(args[1]);
             // make_multi_attrgetter: "a,b" sorts by several attributes.
             std::vector<std::vector<Value>> keys;
             if (args[2] && args[2]->kind == Kind::String) {
                 for (const std::string& p : py_split(args[2]->str(), std::string(","), -1))
                     keys.push_back(jinja_attribute_parts(Value::string(p)));
             } else {
                 keys.push_back(jinja_attribute_parts(args[2]));
             }
             return jinja_sorted(rt, iterate(rt, v), [&](const Value& item) {
                 std::vector<Value> k;
                 for (const auto& parts : keys) k.push_back(jinja_get_path(rt, item, parts, std::nullopt, ci));
                 return Value::list(std::move(k));
             }, jinja_flag(args[0])); }},
        {"string", [](Runtime&, const Value& v, CallArgs& a) { bind_args("string", a, {}, 0); return jinja_soft_str(v); }},
        {"sum", [](Runtime& rt, const Value& v, CallArgs& a) {
             auto args = bind_args("sum", a, {"attribute", "start"}, 0);
             const auto parts = jinja_attribute_parts(args[0]);
             Value total = args[1] ? *args[1] : Value::integer(0);
             if (total.kind == Kind::String) throw Error("TypeError", "sum() can't sum strings [use ''.join(seq) instead]");
             for (const Value& x : iterate(rt, v))
                 total = binary_operation(rt, ExprType::Add, total, args[0] ? jinja_get_path(rt, x, parts, std::nullopt, false) : x);
             return total; }},
        {"title", [](Runtime& rt, const Value& v, CallArgs& a) {
             bind_args("title", a, {}, 0);
             // filters.do_title: split on ([-\s({\[<]+), then item[0].upper() + item[1:].lower().
             const Value s = jinja_soft_str(v);
             const std::u32string u = decode_utf8(s.str());
             auto sep = [](char32_t c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py_isspace(c); };
             std::string out;
             size_t k = 0;
             while (k < u.size()) {
                 size_t e = k;
                 const bool is_sep = sep(u[k]);
                 while (e < u.size() && sep(u[e]) == is_sep) ++e;
                 const std::u32string_view part = std::u32string_view(u).substr(k, e - k);
                 if (is_sep) {
                     out += encode_utf8(part);
                 } else {
                     out += py_upper(encode_utf8(part.substr(0, 1)));
                     out += py_lower(encode_utf8(part.substr(1)));
                 }
                 k = e;
             }
             return make_string(rt, std::move(out), s.flag); }},
        {"trim", [](Runtime& rt, const Value& v, CallArgs& a) {
             auto args = bind_args("trim", a, {"chars"}, 0);
             const Value s = jinja_soft_str(v);
             std::optional<std::string> chars;
             if (args[0] && !args[0]->is_none()) {
                 if (args[0]->kind != Kind::String) throw Error("TypeError", "strip arg must be None or str");
                 chars = args[0]->str();
             }
             return make_string(rt, py_strip(s.str(), chars, true, true), s.flag); }},
        {"truncate", [](Runtime& rt, const Value& v, CallArgs& a) -> Value {
             auto args = bind_args("truncate", a, {"length", "killwords", "end", "leeway"}, 0);
             const int64_t length = jinja_int_arg(args[0], 255, "truncate");
             const std::string end = args[2] ? to_str(*args[2]) : std::string("...");
             const int64_t leeway = jinja_int_arg(args[3], 5, "truncate");
             const int64_t end_len = code_point_count(end);
             if (length < end_len) throw Error("AssertionError", "expected length >= " + std::to_string(end_len) + ", got " + std::to_string(length));
             if (leeway < 0) throw Error("AssertionError", "expected leeway >= 0, got " + std::to_string(leeway));
             if (length_of(v) <= length + leeway) return v;
             if (v.kind != Kind::String) throw Error("TypeError", "truncate needs a string");
             const std::u32string u = decode_utf8(v.str());
             std::u32string head = u.substr(0, static_cast<size_t>(length - end_len));
             if (!jinja_flag(args[1])) {
                 const size_t sp = head.rfind(U' ');
                 if (sp != std::u32string::npos) head = head.substr(0, sp);
             }
             return make_string(rt, encode_utf8(head) + end); }},
        {"unique", [](Runtime&, const Value& v, CallArgs& a) {
             auto args = bind_args("unique", a, {"case_sensitive", "attribute"}, 0);
             const auto parts = jinja_attribute_parts(args[1]);
             const bool ci = !jinja_flag(args[0]);
             auto seen = std::make_shared<std::vector<Value>>();
             return jinja_lazy("generator", v, nullptr, [parts, ci, seen](Runtime& rt, const Value& item) -> std::optional<Value> {
                 const Value key = jinja_get_path(rt, item, parts, std::nullopt, ci);
                 require_hashable(key);
                 for (const Value& s : *seen)
                     if (equals(s, key)) return std::nullopt;
                 rt.charge(static_cast<int64_t>(seen->size()));
                 seen->push_back(key);
                 return item;
             }); }},
        {"wordcount", [](Runtime&, const Value& v, CallArgs& a) {
             bind_args("wordcount", a, {}, 0);
             // len(re.findall(r"\w+", soft_str(s))): runs of letters, digits and underscores.
             int64_t n = 0;
             bool in_word = false;
             for (char32_t c : decode_utf8(to_str(v))) {
                 const bool w = c == '_' || py_isalpha(c) || py_isnumeric(c);
                 if (w && !in_word) ++n;
                 in_word = w;
             }
             return Value::integer(n); }},
        {"tojson", [](Runtime& rt, const Value& v, CallArgs& a) {
             // transformers chat_template_utils tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
             auto args = bind_args("tojson", a, {"ensure_ascii", "indent", "separators", "sort_keys"}, 0);
             JsonDumpOptions o;
             o.ensure_ascii = jinja_flag(args[0]);
             if (args[1] && !args[1]->is_none()) {
                 if (args[1]->kind == Kind::String) {
                     o.indent = args[1]->str();
                 } else if (args[1]->is_int_like()) {
                     const int64_t n = args[1]->as_int();
                     if (n > 10000) throw Error("LimitError", "tojson indent too large");
                     o.indent = std::string(static_cast<size_t>(std::max<int64_t>(n, 0)), ' ');
                 } else {
                     throw Error("TypeError", "can't multiply sequence by non-int of type '" + type_name(*args[1]) + "'");
                 }
                 o.item_separator = ",";
             }
             if (args[2] && !args[2]->is_none()) {
                 const std::vector<Value> seps = iterate(rt, *args[2]);
                 if (seps.size() != 2) throw Error("ValueError", "separators must be a pair of strings");
                 if (seps[0].kind != Kind::String || seps[1].kind != Kind::String) throw Error("TypeError", "separators must be strings");
                 o.item_separator = seps[0].str();
                 o.key_separator = seps[1].str();
             }
             o.sort_keys = jinja_flag(args[3]);
             return make_string(rt, json_dumps(rt, v, o)); }},
        {"filesizeformat", [](Runtime&, const Value&, CallArgs&) -> Value { jinja_unsupported_filter("filesizeformat"); }},
        {"pprint", [](Runtime&, const Value&, CallArgs&) -> Value { jinja_unsupported_filter("pprint"); }},
        {"random", [](Runtime&, const Value&, CallArgs&) -> Value { jinja_unsupported_filter("random"); }},
        {"striptags", [](Runtime&, const Value&, CallArgs&) -> Value { jinja_unsupported_filter("striptags"); }},
        {"urlencode", [](Runtime&, const Value&, CallArgs&) -> Value { jinja_unsupported_filter("urlencode"); }},
        {"urlize", [](Runtime&, const Value&, CallArgs&) -> Value { jinja_unsupported_filter("urlize"); }},
        {"wordwrap", [](Runtime&, const Value&, CallArgs&) -> Value { jinja_unsupported_filter("wordwrap"); }},
        {"xmlattr", [](Runtime&, const Value&, CallArgs&) -> Value { jinja_unsupported_filter("xmlattr"); }},
    };
    return f;
}

}  // namespace

bool is_jinja_filter(const std::string& name) {
    return name == "d" || name == "e" || jinja_filters().count(name) != 0;
}

Value apply_filter(Runtime& rt, const std::string& name, const Value& value, CallArgs& args) {
    const std::string& key = name == "d" ? std::string("default") : name == "e" ? std::string("escape") : name;
    const auto& f = jinja_filters();
    const auto it = f.find(key);
    if (it == f.end()) throw Error("TemplateRuntimeError", "No filter named '" + name + "' found.");
    if (value.kind == Kind::String) rt.charge(static_cast<int64_t>(value.str().size() / 64));
    return it->second(rt, value, args);
}

}  // namespace ql::jinja
