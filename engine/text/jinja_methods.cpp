// SPDX-License-Identifier: GPL-3.0-or-later
// The methods of Python's str, list, tuple and dict that chat templates call (CPython
// Objects/unicodeobject.c, listobject.c, dictobject.c), bound to their receiver. The mutating
// methods of list and dict exist but are refused, as ImmutableSandboxedEnvironment refuses them;
// a few str methods that no chat template uses (encode, translate ...) exist and raise when called.
#include <algorithm>
#include <functional>
#include <limits>
#include <unordered_map>

#include "engine/text/jinja_access.h"
#include "engine/text/jinja_format.h"
#include "engine/text/jinja_objects.h"
#include "engine/text/jinja_text.h"

namespace ql::jinja {

namespace {

using JinjaMethod = std::function<Value(Runtime&, const Value&, CallArgs&)>;

std::optional<std::string> jinja_opt_str(const std::optional<Value>& v, const char* fn, const char* what) {
    if (!v || v->is_none()) return std::nullopt;
    if (v->kind != Kind::String)
        throw Error("TypeError", std::string(fn) + " " + what + " must be None or str, not " + type_name(*v));
    return v->str();
}

const std::string& jinja_req_str(const std::optional<Value>& v, const char* fn) {
    if (!v || v->kind != Kind::String)
        throw Error("TypeError", std::string(fn) + "() argument must be str, not " + (v ? type_name(*v) : std::string("None")));
    return v->str();
}

int64_t jinja_req_int(const std::optional<Value>& v, const char* fn) {
    if (!v || !v->is_int_like())
        throw Error("TypeError", std::string("'") + (v ? type_name(*v) : std::string("NoneType")) +
                                     "' object cannot be interpreted as an integer (" + fn + ")");
    return v->as_int();
}

// ADJUST_INDICES of CPython's stringlib for start/end arguments (None or int).
void jinja_adjust(const std::optional<Value>& start, const std::optional<Value>& end, int64_t len, int64_t& b, int64_t& e) {
    auto get = [](const std::optional<Value>& v, int64_t dflt) {
        if (!v || v->is_none()) return dflt;
        if (!v->is_int_like())
            throw Error("TypeError", "slice indices must be integers or None or have an __index__ method");
        return v->as_int();
    };
    b = get(start, 0);
    e = get(end, std::numeric_limits<int64_t>::max());
    if (e > len) e = len;
    else if (e < 0) e = std::max<int64_t>(0, e + len);
    if (b < 0) b = std::max<int64_t>(0, b + len);
}

std::string jinja_cp_slice(const std::string& s, int64_t b, int64_t e) {
    if (b >= e) return std::string();
    if (is_ascii(s)) return s.substr(static_cast<size_t>(b), static_cast<size_t>(e - b));
    const std::u32string u = decode_utf8(s);
    return encode_utf8(u.substr(static_cast<size_t>(b), static_cast<size_t>(e - b)));
}

Value jinja_str_list(Runtime& rt, const std::vector<std::string>& parts, bool markup) {
    std::vector<Value> out;
    out.reserve(parts.size());
    for (const auto& p : parts) out.push_back(Value::string(p, markup));
    return make_list(rt, std::move(out));
}

// Markup's methods escape plain str arguments.
std::string jinja_markup_arg(const Value& self, const std::string& arg, const Value& v) {
    if (self.flag && !(v.kind == Kind::String && v.flag)) return html_escape(arg);
    return arg;
}

Value jinja_affix(Runtime& rt, const Value& self, CallArgs& a, bool prefix) {
    const char* fn = prefix ? "startswith" : "endswith";
    auto args = bind_args(fn, a, {"prefix", "start", "end"}, 1);
    const int64_t len = code_point_count(self.str());
    int64_t b, e;
    jinja_adjust(args[1], args[2], len, b, e);
    if (b > len) return Value::boolean(false);
    const std::string s = jinja_cp_slice(self.str(), b, std::max(b, e));
    auto test = [&](const Value& p) {
        if (p.kind != Kind::String)
            throw Error("TypeError", std::string(fn) + " first arg must be str or a tuple of str, not " + type_name(p));
        const std::string& t = p.str();
        if (t.size() > s.size()) return false;
        return prefix ? s.compare(0, t.size(), t) == 0 : s.compare(s.size() - t.size(), t.size(), t) == 0;
    };
    const Value& p = *args[0];
    if (p.kind == Kind::Tuple) {
        for (const Value& x : p.items())
            if (test(x)) return Value::boolean(true);
        return Value::boolean(false);
    }
    (void)rt;
    return Value::boolean(test(p));
}

Value jinja_find(Runtime&, const Value& self, CallArgs& a, const char* fn, bool reverse, bool raise) {
    auto args = bind_args(fn, a, {"sub", "start", "end"}, 1);
    const std::string& sub = jinja_req_str(args[0], fn);
    const int64_t len = code_point_count(self.str());
    int64_t b, e;
    jinja_adjust(args[1], args[2], len, b, e);
    int64_t r = -1;
    if (b <= len) r = py_find(self.str(), sub, b, e, reverse);
    if (r < 0 && raise) throw Error("ValueError", "substring not found");
    return Value::integer(r);
}

Value jinja_pad_method(Runtime& rt, const Value& self, CallArgs& a, const char* fn, int align) {
    auto args = bind_args(fn, a, {"width", "fillchar"}, 1);
    const int64_t width = jinja_req_int(args[0], fn);
    char32_t fill = ' ';
    if (args[1]) {
        if (args[1]->kind != Kind::String || code_point_count(args[1]->str()) != 1)
            throw Error("TypeError", "The fill character must be exactly one character long");
        fill = decode_utf8(args[1]->str())[0];
    }
    if (width > static_cast<int64_t>(rt.max_string_bytes()))
        throw Error("LimitError", "padding beyond the output limit");
    return make_string(rt, py_pad(self.str(), width, fill, align), self.flag);
}

template <class Pred>
Value jinja_all_chars(const Value& self, Pred pred) {
    const std::u32string u = decode_utf8(self.str());
    if (u.empty()) return Value::boolean(false);
    for (char32_t c : u)
        if (!pred(c)) return Value::boolean(false);
    return Value::boolean(true);
}

Value jinja_no_args(CallArgs& a, const char* fn) {
    if (!a.args.empty() || !a.kwargs.empty()) throw Error("TypeError", std::string(fn) + "() takes no arguments");
    return Value();
}

const std::unordered_map<std::string, JinjaMethod>& jinja_str_methods() {
    static const std::unordered_map<std::string, JinjaMethod> m = {
        {"upper", [](Runtime& rt, const Value& s, CallArgs& a) { jinja_no_args(a, "upper"); return make_string(rt, py_upper(s.str()), s.flag); }},
        {"lower", [](Runtime& rt, const Value& s, CallArgs& a) { jinja_no_args(a, "lower"); return make_string(rt, py_lower(s.str()), s.flag); }},
        {"casefold", [](Runtime& rt, const Value& s, CallArgs& a) { jinja_no_args(a, "casefold"); return make_string(rt, py_casefold(s.str()), s.flag); }},
        {"title", [](Runtime& rt, const Value& s, CallArgs& a) { jinja_no_args(a, "title"); return make_string(rt, py_title(s.str()), s.flag); }},
        {"capitalize", [](Runtime& rt, const Value& s, CallArgs& a) { jinja_no_args(a, "capitalize"); return make_string(rt, py_capitalize(s.str()), s.flag); }},
        {"swapcase", [](Runtime& rt, const Value& s, CallArgs& a) { jinja_no_args(a, "swapcase"); return make_string(rt, py_swapcase(s.str()), s.flag); }},
        {"strip", [](Runtime& rt, const Value& s, CallArgs& a) {
             auto args = bind_args("strip", a, {"chars"}, 0);
             return make_string(rt, py_strip(s.str(), jinja_opt_str(args[0], "strip", "arg"), true, true), s.flag); }},
        {"lstrip", [](Runtime& rt, const Value& s, CallArgs& a) {
             auto args = bind_args("lstrip", a, {"chars"}, 0);
             return make_string(rt, py_strip(s.str(), jinja_opt_str(args[0], "lstrip", "arg"), true, false), s.flag); }},
        {"rstrip", [](Runtime& rt, const Value& s, CallArgs& a) {
             auto args = bind_args("rstrip", a, {"chars"}, 0);
             return make_string(rt, py_strip(s.str(), jinja_opt_str(args[0], "rstrip", "arg"), false, true), s.flag); }},
        {"split", [](Runtime& rt, const Value& s, CallArgs& a) {
             auto args = bind_args("split", a, {"sep", "maxsplit"}, 0);
             const int64_t maxsplit = args[1] ? jinja_req_int(args[1], "split") : -1;
             try {
                 return jinja_str_list(rt, py_split(s.str(), jinja_opt_str(args[0], "split", "sep"), maxsplit), s.flag);
             } catch (const std::invalid_argument& e) { throw Error("ValueError", e.what()); } }},
        {"rsplit", [](Runtime& rt, const Value& s, CallArgs& a) {
             auto args = bind_args("rsplit", a, {"sep", "maxsplit"}, 0);
             const int64_t maxsplit = args[1] ? jinja_req_int(args[1], "rsplit") : -1;
             try {
                 return jinja_str_list(rt, py_rsplit(s.str(), jinja_opt_str(args[0], "rsplit", "sep"), maxsplit), s.flag);
             } catch (const std::invalid_argument& e) { throw Error("ValueError", e.what()); } }},
        {"splitlines", [](Runtime& rt, const Value& s, CallArgs& a) {
             auto args = bind_args("splitlines", a, {"keepends"}, 0);
             return jinja_str_list(rt, py_splitlines(s.str(), args[0] && truthy(*args[0])), s.flag); }},
        {"startswith", [](Runtime& rt, const Value& s, CallArgs& a) { return jinja_affix(rt, s, a, true); }},
        {"endswith", [](Runtime& rt, const Value& s, CallArgs& a) { return jinja_affix(rt, s, a, false); }},
        {"replace", [](Runtime& rt, const Value& s, CallArgs& a) {
             auto args = bind_args("replace", a, {"old", "new", "count"}, 2);
             const std::string old_text = jinja_markup_arg(s, jinja_req_str(args[0], "replace"), *args[0]);
             const std::string new_text = jinja_markup_arg(s, jinja_req_str(args[1], "replace"), *args[1]);
             const int64_t count = args[2] ? jinja_req_int(args[2], "replace") : -1;
             const std::string& text = s.str();
             if (old_text.empty() || new_text.size() > old_text.size()) {
                 // Bound the result before building it.
                 const uint64_t hits = old_text.empty() ? static_cast<uint64_t>(code_point_count(text)) + 1
                                                        : static_cast<uint64_t>(py_count(text, old_text, 0, std::numeric_limits<int64_t>::max()));
                 if (text.size() + hits * new_text.size() > rt.max_string_bytes())
                     throw Error("LimitError", "str.replace result exceeds the limit of " + std::to_string(rt.max_string_bytes()) + " bytes");
             }
             return make_string(rt, py_replace(text, old_text, new_text, count), s.flag); }},
        {"find", [](Runtime& rt, const Value& s, CallArgs& a) { return jinja_find(rt, s, a, "find", false, false); }},
        {"rfind", [](Runtime& rt, const Value& s, CallArgs& a) { return jinja_find(rt, s, a, "rfind", true, false); }},
        {"index", [](Runtime& rt, const Value& s, CallArgs& a) { return jinja_find(rt, s, a, "index", false, true); }},
        {"rindex", [](Runtime& rt, const Value& s, CallArgs& a) { return jinja_find(rt, s, a, "rindex", true, true); }},
        {"count", [](Runtime&, const Value& s, CallArgs& a) {
             auto args = bind_args("count", a, {"sub", "start", "end"}, 1);
             const std::string& sub = jinja_req_str(args[0], "count");
             const int64_t len = code_point_count(s.str());
             int64_t b, e;
             jinja_adjust(args[1], args[2], len, b, e);
             if (b > len) return Value::integer(0);
             return Value::integer(py_count(s.str(), sub, b, e)); }},
        {"join", [](Runtime& rt, const Value& s, CallArgs& a) {
             auto args = bind_args("join", a, {"iterable"}, 1);
             std::string out;
             size_t k = 0;
             for (const Value& x : iterate(rt, *args[0])) {
                 if (x.kind != Kind::String)
                     throw Error("TypeError", "sequence item " + std::to_string(k) + ": expected str instance, " + type_name(x) + " found");
                 if (k++) out += s.str();
                 out += jinja_markup_arg(s, x.str(), x);
                 if (out.size() > rt.max_string_bytes())
                     throw Error("LimitError", "str.join result exceeds the limit of " + std::to_string(rt.max_string_bytes()) + " bytes");
             }
             return make_string(rt, std::move(out), s.flag); }},
        {"center", [](Runtime& rt, const Value& s, CallArgs& a) { return jinja_pad_method(rt, s, a, "center", 0); }},
        {"ljust", [](Runtime& rt, const Value& s, CallArgs& a) { return jinja_pad_method(rt, s, a, "ljust", -1); }},
        {"rjust", [](Runtime& rt, const Value& s, CallArgs& a) { return jinja_pad_method(rt, s, a, "rjust", 1); }},
        {"zfill", [](Runtime& rt, const Value& s, CallArgs& a) {
             auto args = bind_args("zfill", a, {"width"}, 1);
             const int64_t width = jinja_req_int(args[0], "zfill");
             if (width > static_cast<int64_t>(rt.max_string_bytes())) throw Error("LimitError", "padding beyond the output limit");
             return make_string(rt, py_zfill(s.str(), width), s.flag); }},
        {"partition", [](Runtime& rt, const Value& s, CallArgs& a) {
             auto args = bind_args("partition", a, {"sep"}, 1);
             const std::string& sep = jinja_req_str(args[0], "partition");
             if (sep.empty()) throw Error("ValueError", "empty separator");
             const size_t k = s.str().find(sep);
             if (k == std::string::npos) return make_list(rt, {s, Value::string("", s.flag), Value::string("", s.flag)}, true);
             return make_list(rt, {Value::string(s.str().substr(0, k), s.flag), Value::string(sep, s.flag),
                                   Value::string(s.str().substr(k + sep.size()), s.flag)}, true); }},
        {"rpartition", [](Runtime& rt, const Value& s, CallArgs& a) {
             auto args = bind_args("rpartition", a, {"sep"}, 1);
             const std::string& sep = jinja_req_str(args[0], "rpartition");
             if (sep.empty()) throw Error("ValueError", "empty separator");
             const size_t k = s.str().rfind(sep);
             if (k == std::string::npos) return make_list(rt, {Value::string("", s.flag), Value::string("", s.flag), s}, true);
             return make_list(rt, {Value::string(s.str().substr(0, k), s.flag), Value::string(sep, s.flag),
                                   Value::string(s.str().substr(k + sep.size()), s.flag)}, true); }},
        {"removeprefix", [](Runtime& rt, const Value& s, CallArgs& a) {
             auto args = bind_args("removeprefix", a, {"prefix"}, 1);
             const std::string& p = jinja_req_str(args[0], "removeprefix");
             if (s.str().compare(0, p.size(), p) == 0) return make_string(rt, s.str().substr(p.size()), s.flag);
             return s; }},
        {"removesuffix", [](Runtime& rt, const Value& s, CallArgs& a) {
             auto args = bind_args("removesuffix", a, {"suffix"}, 1);
             const std::string& p = jinja_req_str(args[0], "removesuffix");
             const std::string& t = s.str();
             if (!p.empty() && t.size() >= p.size() && t.compare(t.size() - p.size(), p.size(), p) == 0)
                 return make_string(rt, t.substr(0, t.size() - p.size()), s.flag);
             return s; }},
        {"format", [](Runtime& rt, const Value& s, CallArgs& a) {
             if (s.flag) {
                 CallArgs escaped = a;
                 for (auto& v : escaped.args)
                     if (v.kind == Kind::String && !v.flag) v = Value::string(html_escape(v.str()));
                 for (auto& kw : escaped.kwargs)
                     if (kw.second.kind == Kind::String && !kw.second.flag) kw.second = Value::string(html_escape(kw.second.str()));
                 return make_string(rt, str_format(rt, s.str(), escaped), true);
             }
             return make_string(rt, str_format(rt, s.str(), a)); }},
        {"isalpha", [](Runtime&, const Value& s, CallArgs& a) { jinja_no_args(a, "isalpha"); return jinja_all_chars(s, py_isalpha); }},
        {"isdigit", [](Runtime&, const Value& s, CallArgs& a) { jinja_no_args(a, "isdigit"); return jinja_all_chars(s, py_isdigit); }},
        {"isdecimal", [](Runtime&, const Value& s, CallArgs& a) { jinja_no_args(a, "isdecimal"); return jinja_all_chars(s, py_isdigit); }},
        {"isnumeric", [](Runtime&, const Value& s, CallArgs& a) { jinja_no_args(a, "isnumeric"); return jinja_all_chars(s, py_isnumeric); }},
        {"isalnum", [](Runtime&, const Value& s, CallArgs& a) {
             jinja_no_args(a, "isalnum");
             return jinja_all_chars(s, [](char32_t c) { return py_isalpha(c) || py_isnumeric(c); }); }},
        {"isspace", [](Runtime&, const Value& s, CallArgs& a) { jinja_no_args(a, "isspace"); return jinja_all_chars(s, py_isspace); }},
        {"isprintable", [](Runtime&, const Value& s, CallArgs& a) {
             jinja_no_args(a, "isprintable");
             for (char32_t c : decode_utf8(s.str())) if (!py_isprintable(c)) return Value::boolean(false);
             return Value::boolean(true); }},
        {"isascii", [](Runtime&, const Value& s, CallArgs& a) { jinja_no_args(a, "isascii"); return Value::boolean(is_ascii(s.str())); }},
        {"isidentifier", [](Runtime&, const Value& s, CallArgs& a) {
             jinja_no_args(a, "isidentifier");
             const std::u32string u = decode_utf8(s.str());
             if (u.empty() || !(u[0] == '_' || py_isalpha(u[0]))) return Value::boolean(false);
             for (char32_t c : u) if (!(c == '_' || py_isalpha(c) || py_isdigit(c))) return Value::boolean(false);
             return Value::boolean(true); }},
        {"islower", [](Runtime&, const Value& s, CallArgs& a) {
             jinja_no_args(a, "islower");
             bool cased = false;
             for (char32_t c : decode_utf8(s.str())) {
                 if (py_isupper_char(c) || py_istitle_char(c)) return Value::boolean(false);
                 if (py_islower_char(c)) cased = true;
             }
             return Value::boolean(cased); }},
        {"isupper", [](Runtime&, const Value& s, CallArgs& a) {
             jinja_no_args(a, "isupper");
             bool cased = false;
             for (char32_t c : decode_utf8(s.str())) {
                 if (py_islower_char(c) || py_istitle_char(c)) return Value::boolean(false);
                 if (py_isupper_char(c)) cased = true;
             }
             return Value::boolean(cased); }},
        {"istitle", [](Runtime&, const Value& s, CallArgs& a) {
             jinja_no_args(a, "istitle");
             bool cased = false, previous_cased = false;
             for (char32_t c : decode_utf8(s.str())) {
                 if (py_isupper_char(c) || py_istitle_char(c)) {
                     if (previous_cased) return Value::boolean(false);
                     previous_cased = cased = true;
                 } else if (py_islower_char(c)) {
                     if (!previous_cased) return Value::boolean(false);
                     previous_cased = cased = true;
                 } else {
                     previous_cased = false;
                 }
             }
             return Value::boolean(cased); }},
    };
    return m;
}

// Methods Python's str has that no chat template needs: they exist (so `is defined` holds) but
// raise when called.
bool jinja_unsupported_str_method(const std::string& name) {
    static const char* const names[] = {"encode", "expandtabs", "format_map", "maketrans", "translate"};
    return std::find_if(std::begin(names), std::end(names), [&](const char* n) { return name == n; }) != std::end(names);
}

Value jinja_index_of(Runtime&, const Value& self, CallArgs& a) {
    auto args = bind_args("index", a, {"value", "start", "stop"}, 1);
    const auto& items = self.items();
    int64_t b, e;
    jinja_adjust(args[1], args[2], static_cast<int64_t>(items.size()), b, e);
    for (int64_t k = b; k < e; ++k)
        if (equals(items[static_cast<size_t>(k)], *args[0])) return Value::integer(k);
    throw Error("ValueError", self.kind == Kind::Tuple ? "tuple.index(x): x not in tuple" : repr(*args[0]) + " is not in list");
}

Value jinja_count_of(Runtime&, const Value& self, CallArgs& a) {
    auto args = bind_args("count", a, {"value"}, 1);
    int64_t n = 0;
    for (const Value& x : self.items())
        if (equals(x, *args[0])) ++n;
    return Value::integer(n);
}

}  // namespace

std::optional<Value> builtin_method(const Value& self, const std::string& name, bool& unsafe) {
    unsafe = false;
    JinjaMethod fn;
    switch (self.kind) {
    case Kind::String: {
        const auto& m = jinja_str_methods();
        const auto it = m.find(name);
        if (it != m.end()) {
            fn = it->second;
        } else if (jinja_unsupported_str_method(name)) {
            fn = [name](Runtime&, const Value&, CallArgs&) -> Value {
                throw Error("NotSupported", "str." + name + "() is not supported by QuantLab's chat-template engine");
            };
        }
        break;
    }
    case Kind::List:
    case Kind::Tuple: {
        static const char* const mutating[] = {"append", "clear", "pop", "reverse", "insert", "sort", "extend", "remove"};
        if (self.kind == Kind::List &&
            std::find_if(std::begin(mutating), std::end(mutating), [&](const char* n) { return name == n; }) != std::end(mutating)) {
            unsafe = true;
            return std::nullopt;
        }
        if (name == "index") fn = jinja_index_of;
        else if (name == "count") fn = jinja_count_of;
        else if (name == "copy" && self.kind == Kind::List)
            fn = [](Runtime& rt, const Value& s, CallArgs& a) { jinja_no_args(a, "copy"); return make_list(rt, s.items()); };
        break;
    }
    case Kind::Dict: {
        if (name == "clear" || name == "pop" || name == "popitem" || name == "setdefault" || name == "update") {
            unsafe = true;
            return std::nullopt;
        }
        if (name == "get") {
            fn = [](Runtime&, const Value& s, CallArgs& a) -> Value {
                if (!a.kwargs.empty()) throw Error("TypeError", "get() takes no keyword arguments");
                if (a.args.empty() || a.args.size() > 2)
                    throw Error("TypeError", "get expected 1 or 2 arguments, got " + std::to_string(a.args.size()));
                require_hashable(a.args[0]);
                const Value* v = s.map->find(a.args[0]);
                if (v) return *v;
                return a.args.size() > 1 ? a.args[1] : Value::none();
            };
        } else if (name == "items" || name == "keys" || name == "values") {
            const auto which = name == "items"  ? DictViewObject::Which::Items
                               : name == "keys" ? DictViewObject::Which::Keys
                                                : DictViewObject::Which::Values;
            fn = [which, name](Runtime&, const Value& s, CallArgs& a) {
                jinja_no_args(a, name.c_str());
                return Value::object(std::make_shared<DictViewObject>(s, which));
            };
        } else if (name == "copy") {
            fn = [](Runtime&, const Value& s, CallArgs& a) { jinja_no_args(a, "copy"); return Value::dict(s.pairs(), true); };
        } else if (name == "fromkeys") {
            fn = [](Runtime& rt, const Value&, CallArgs& a) {
                auto args = bind_args("fromkeys", a, {"iterable", "value"}, 1);
                std::vector<std::pair<Value, Value>> items;
                for (const Value& k : iterate(rt, *args[0])) {
                    require_hashable(k);
                    items.emplace_back(k, args[1] ? *args[1] : Value::none());
                }
                return Value::dict(std::move(items));
            };
        }
        break;
    }
    default: break;
    }
    if (!fn) return std::nullopt;
    return Value::object(std::make_shared<BoundMethodObject>(self, name, std::move(fn)));
}

}  // namespace ql::jinja
