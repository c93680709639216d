// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/text/jinja_json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "engine/text/jinja_text.h"

namespace ql::jinja {

namespace {

Value jinja_from_json(const nlohmann::ordered_json& j, const std::string& where, int depth) {
    if (depth > kMaxValueDepth)
        throw Error("ValueError", where + ": JSON nested deeper than " + std::to_string(kMaxValueDepth) + " levels");
    switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value::integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
        const auto u = j.get<uint64_t>();
        if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
            throw Error("ValueError", where + ": integer " + std::to_string(u) + " is beyond 64 bits");
        return Value::integer(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value::real(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
        std::vector<Value> items;
        items.reserve(j.size());
        for (const auto& x : j) items.push_back(jinja_from_json(x, where, depth + 1));
        return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
        std::vector<std::pair<Value, Value>> items;
        items.reserve(j.size());
        for (auto it = j.begin(); it != j.end(); ++it)
            items.emplace_back(Value::string(it.key()), jinja_from_json(it.value(), where, depth + 1));
        return Value::dict(std::move(items), true);
    }
    default: throw Error("ValueError", where + ": binary or discarded JSON values have no Python equivalent");
    }
}

void jinja_json_string(std::string& out, const std::string& s, bool ensure_ascii) {
    // Modules/_json.c escape_unicode / ascii_escape_unichar.
    out += '"';
    char buf[16];
    auto escape_unit = [&](unsigned u) {
        std::snprintf(buf, sizeof buf, "\\u%04x", u);
        out += buf;
    };
    if (!ensure_ascii) {
        for (char ch : s) {
            const auto c = static_cast<unsigned char>(ch);
            switch (c) {
            case '\\': out += "\\\\"; break;
            case '"': out += "\\\""; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c <= 0x1F)
                    escape_unit(c);
                else
                    out += ch;
            }
        }
    } else {
        for (char32_t c : decode_utf8(s)) {
            switch (c) {
            case '\\': out += "\\\\"; break;
            case '"': out += "\\\""; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c >= ' ' && c <= '~') {
                    out += static_cast<char>(c);
                } else if (c >= 0x10000) {
                    const char32_t v = c - 0x10000;
                    escape_unit(0xD800 | ((v >> 10) & 0x3FF));
                    escape_unit(0xDC00 | (v & 0x3FF));
                } else {
                    escape_unit(static_cast<unsigned>(c));
                }
            }
        }
    }
    out += '"';
}

std::string jinja_json_float(double d) {
    // Lib/json/encoder.py floatstr: allow_nan spellings, else float.__repr__.
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
    return py_float_repr(d);
}

class JinjaJsonWriter {
public:
    JinjaJsonWriter(Runtime& rt, const JsonDumpOptions& o) : rt_(rt), o_(o) {}

    void write(const Value& v, int level) {
        if (level > kMaxValueDepth) throw Error("RecursionError", "tojson: values nested too deeply");
        if (out.size() > rt_.max_string_bytes())
            throw Error("LimitError", "tojson output exceeds the limit of " + std::to_string(rt_.max_string_bytes()) +
                                          " bytes (max_output_bytes)");
        rt_.charge(1);
        switch (v.kind) {
        case Kind::None: out += "null"; return;
        case Kind::Bool: out += v.flag ? "true" : "false"; return;
        case Kind::Int: out += std::to_string(v.i); return;
        case Kind::Float: out += jinja_json_float(v.f); return;
        case Kind::String: jinja_json_string(out, *v.text, o_.ensure_ascii); return;
        case Kind::List:
        case Kind::Tuple: {
            const auto& items = v.seq->items;
            if (items.empty()) {
                out += "[]";
                return;
            }
            out += '[';
            for (size_t k = 0; k < items.size(); ++k) {
                if (k) out += o_.item_separator;
                newline(level + 1);
                write(items[k], level + 1);
            }
            newline(level);
            out += ']';
            return;
        }
        case Kind::Dict: {
            if (v.map->items.empty()) {
                out += "{}";
                return;
            }
            std::vector<const std::pair<Value, Value>*> items;
            for (const auto& kv : v.map->items) items.push_back(&kv);
            if (o_.sort_keys) {
                // sorted(dct.items()): keys decide (they are distinct), unorderable keys raise.
                std::stable_sort(items.begin(), items.end(), [](const auto* a, const auto* b) {
                    return ordered_compare("<", a->first, b->first);
                });
            }
            out += '{';
            bool first = true;
            for (const auto* kv : items) {
                if (!first) out += o_.item_separator;
                first = false;
                newline(level + 1);
                key(kv->first);
                out += o_.key_separator;
                write(kv->second, level + 1);
            }
            newline(level);
            out += '}';
            return;
        }
        default:
            throw Error("TypeError", "Object of type " + type_name(v) + " is not JSON serializable");
        }
    }

    std::string out;

private:
    void newline(int level) {
        if (!o_.indent) return;
        out += '\n';
        for (int k = 0; k < level; ++k) out += *o_.indent;
    }

    void key(const Value& k) {
        switch (k.kind) {
        case Kind::String: jinja_json_string(out, *k.text, o_.ensure_ascii); return;
        case Kind::Float: jinja_json_string(out, jinja_json_float(k.f), false); return;
        case Kind::Bool: out += k.flag ? "\"true\"" : "\"false\""; return;
        case Kind::None: out += "\"null\""; return;
        case Kind::Int: out += '"' + std::to_string(k.i) + '"'; return;
        default:
            throw Error("TypeError", "keys must be str, int, float, bool or None, not " + type_name(k));
        }
    }

    Runtime& rt_;
    const JsonDumpOptions& o_;
};

}  // namespace

Value value_from_json(const nlohmann::ordered_json& j, const std::string& where) { return jinja_from_json(j, where, 0); }

std::string json_dumps(Runtime& rt, const Value& v, const JsonDumpOptions& options) {
    JinjaJsonWriter w(rt, options);
    w.write(v, 0);
    if (w.out.size() > rt.max_string_bytes())
        throw Error("LimitError", "tojson output exceeds the limit of " + std::to_string(rt.max_string_bytes()) +
                                      " bytes (max_output_bytes)");
    return std::move(w.out);
}

}  // namespace ql::jinja
