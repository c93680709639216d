// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/text/jinja_format.h"

#include <cmath>
#include <cstdio>
#include <functional>

#include "engine/text/jinja_access.h"
#include "engine/text/jinja_text.h"

namespace ql::jinja {

namespace {

struct JinjaSpec {
    char32_t fill = ' ';
    char align = 0;  // < > = ^ or 0
    char sign = '-';
    bool alternate = false;
    int64_t width = -1;
    char grouping = 0;
    int64_t precision = -1;
    char type = 0;
};

JinjaSpec jinja_parse_spec(const std::string& spec) {
    JinjaSpec s;
    const std::u32string u = decode_utf8(spec);
    size_t k = 0;
    auto is_align = [](char32_t c) { return c == '<' || c == '>' || c == '=' || c == '^'; };
    if (u.size() >= 2 && is_align(u[1])) {
        s.fill = u[0];
        s.align = static_cast<char>(u[1]);
        k = 2;
    } else if (!u.empty() && is_align(u[0])) {
        s.align = static_cast<char>(u[0]);
        k = 1;
    }
    if (k < u.size() && (u[k] == '+' || u[k] == '-' || u[k] == ' ')) s.sign = static_cast<char>(u[k++]);
    if (k < u.size() && u[k] == '#') {
        s.alternate = true;
        ++k;
    }
    if (k < u.size() && u[k] == '0') {
        if (!s.align) {
            s.fill = '0';
            s.align = '=';
        }
        ++k;
    }
    auto number = [&]() {
        int64_t v = -1;
        while (k < u.size() && u[k] >= '0' && u[k] <= '9') {
            v = (v < 0 ? 0 : v) * 10 + (u[k++] - '0');
            if (v > 1000000) throw Error("ValueError", "Too many decimal digits in format string");
        }
        return v;
    };
    s.width = number();
    if (k < u.size() && (u[k] == ',' || u[k] == '_')) s.grouping = static_cast<char>(u[k++]);
    if (k < u.size() && u[k] == '.') {
        ++k;
        s.precision = number();
        if (s.precision < 0) throw Error("ValueError", "Format specifier missing precision");
    }
    if (k < u.size()) s.type = static_cast<char>(u[k++]);
    if (k != u.size()) throw Error("ValueError", "Invalid format specifier '" + spec + "'");
    return s;
}

std::string jinja_align(const std::string& body, const std::string& sign, const JinjaSpec& s, char default_align) {
    const char align = s.align ? s.align : default_align;
    const int64_t len = code_point_count(body) + static_cast<int64_t>(sign.size());
    if (s.width <= len) return sign + body;
    const int64_t pad = s.width - len;
    std::string fill;
    append_code_point(fill, s.fill);
    auto repeat = [&](int64_t n) {
        std::string out;
        for (int64_t k = 0; k < n; ++k) out += fill;
        return out;
    };
    switch (align) {
    case '<': return sign + body + repeat(pad);
    case '>': return repeat(pad) + sign + body;
    case '=': return sign + repeat(pad) + body;
    default: return repeat(pad / 2) + sign + body + repeat(pad - pad / 2);
    }
}

std::string jinja_group(const std::string& digits, char sep, size_t every) {
    if (!sep) return digits;
    std::string out;
    const size_t n = digits.size();
    for (size_t k = 0; k < n; ++k) {
        if (k && (n - k) % every == 0) out += sep;
        out += digits[k];
    }
    return out;
}

std::string jinja_format_float(double v, const JinjaSpec& s) {
    std::string sign;
    if (std::signbit(v) && !std::isnan(v)) {
        sign = "-";
        v = -v;
    } else if (s.sign == '+') {
        sign = "+";
    } else if (s.sign == ' ') {
        sign = " ";
    }
    std::string body;
    char type = s.type;
    int64_t precision = s.precision;
    if (!std::isfinite(v)) {
        body = std::isnan(v) ? "nan" : "inf";
        if (type == 'E' || type == 'F' || type == 'G') body = std::isnan(v) ? "NAN" : "INF";
        if (type == '%') body += "%";
        return jinja_align(body, sign, s, '>');
    }
    char buf[512];
    if (!type && precision < 0) {
        body = py_float_repr(v);
    } else {
        if (precision < 0) precision = 6;
        if (precision > 300) throw Error("ValueError", "precision too big");
        bool percent = false;
        if (type == '%') {
            v *= 100;
            type = 'f';
            percent = true;
        }
        const char c = type ? (type == 'n' ? 'g' : type) : 'g';
        const int p = static_cast<int>(c == 'g' || c == 'G' ? std::max<int64_t>(precision, 1) : precision);
        char fmt[16];
        std::snprintf(fmt, sizeof fmt, "%%%s.%d%c", s.alternate ? "#" : "", p, c);
        std::snprintf(buf, sizeof buf, fmt, v);
        body = buf;
        if (!type && body.find_first_of(".e") == std::string::npos) body += ".0";  // 'g' variant of format()
        if (percent) body += "%";
    }
    if (s.grouping) {
        const size_t end = body.find_first_of(".eE%");
        body = jinja_group(body.substr(0, end), s.grouping, 3) + (end == std::string::npos ? "" : body.substr(end));
    }
    return jinja_align(body, sign, s, '>');
}

std::string jinja_format_int(int64_t v, const JinjaSpec& s) {
    if (s.precision >= 0) throw Error("ValueError", "Precision not allowed in integer format specifier");
    if (s.type == 'c') {
        std::string body;
        if (v < 0 || v > 0x10FFFF) throw Error("OverflowError", "%c arg not in range(0x110000)");
        append_code_point(body, static_cast<char32_t>(v));
        return jinja_align(body, "", s, '<');
    }
    const uint64_t mag = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    std::string digits;
    size_t every = 3;
    std::string prefix;
    const char t = s.type ? s.type : 'd';
    if (t == 'd' || t == 'n') {
        digits = std::to_string(mag);
    } else if (t == 'x' || t == 'X' || t == 'o' || t == 'b') {
        const unsigned base = t == 'o' ? 8 : t == 'b' ? 2 : 16;
        uint64_t m = mag;
        do {
            const unsigned d = static_cast<unsigned>(m % base);
            digits.insert(digits.begin(), static_cast<char>(d < 10 ? '0' + d : (t == 'X' ? 'A' : 'a') + d - 10));
            m /= base;
        } while (m);
        every = 4;
        if (s.alternate) prefix = t == 'o' ? "0o" : t == 'b' ? "0b" : (t == 'X' ? "0X" : "0x");
    } else {
        throw Error("ValueError", std::string("Unknown format code '") + t + "' for object of type 'int'");
    }
    std::string sign = v < 0 ? "-" : s.sign == '+' ? "+" : s.sign == ' ' ? " " : "";
    return jinja_align(jinja_group(digits, s.grouping, every), sign + prefix, s, '>');
}

}  // namespace

std::string format_value(const Value& value, const std::string& spec) {
    if (spec.empty()) return to_str(value);
    switch (value.kind) {
    case Kind::String: {
        const JinjaSpec s = jinja_parse_spec(spec);
        if (s.type && s.type != 's')
            throw Error("ValueError", std::string("Unknown format code '") + s.type + "' for object of type 'str'");
        std::string body = value.str();
        if (s.precision >= 0) body = encode_utf8(decode_utf8(body).substr(0, static_cast<size_t>(s.precision)));
        return jinja_align(body, "", s, '<');
    }
    case Kind::Bool:
    case Kind::Int: {
        const JinjaSpec s = jinja_parse_spec(spec);
        if (s.type == 'e' || s.type == 'E' || s.type == 'f' || s.type == 'F' || s.type == 'g' || s.type == 'G' ||
            s.type == '%')
            return jinja_format_float(value.as_double(), s);
        if (value.kind == Kind::Bool && !s.type) return jinja_align(to_str(value), "", s, '<');
        return jinja_format_int(value.as_int(), s);
    }
    case Kind::Float: {
        const JinjaSpec s = jinja_parse_spec(spec);
        if (s.type && std::string("eEfFgGn%").find(s.type) == std::string::npos)
            throw Error("ValueError", std::string("Unknown format code '") + s.type + "' for object of type 'float'");
        return jinja_format_float(value.f, s);
    }
    default:
        throw Error("TypeError", "unsupported format string passed to " + type_name(value) + ".__format__");
    }
}

std::string percent_format(Runtime& rt, const std::string& fmt, const Value& args, bool markup) {
    const bool tuple = args.kind == Kind::Tuple;
    const bool mapping = args.kind == Kind::Dict;
    // PyUnicode_Format: any non-tuple, non-str argument with __getitem__ counts as a mapping, and
    // then unused arguments are not an error ("x" % [1, 2] is "x").
    const bool mapping_like = mapping || args.kind == Kind::List || args.is_undefined() ||
                              (args.kind == Kind::Object && args.obj->has_getitem());
    std::vector<Value> positional;
    if (tuple)
        positional = args.items();
    else
        positional.push_back(args);
    size_t next = 0;
    bool used_mapping = false;
    auto take = [&]() -> Value {
        if (next >= positional.size()) throw Error("TypeError", "not enough arguments for format string");
        return positional[next++];
    };
    std::string out;
    const std::string& f = fmt;
    for (size_t k = 0; k < f.size(); ++k) {
        if (f[k] != '%') {
            out += f[k];
            continue;
        }
        if (++k >= f.size()) throw Error("ValueError", "incomplete format");
        Value arg;
        bool have_arg = false;
        if (f[k] == '(') {
            if (!mapping) throw Error("TypeError", "format requires a mapping");
            int level = 1;
            const size_t start = ++k;
            while (k < f.size() && level) {
                if (f[k] == '(') ++level;
                if (f[k] == ')') --level;
                ++k;
            }
            if (level) throw Error("ValueError", "incomplete format key");
            const std::string key = f.substr(start, k - start - 1);
            const Value* v = args.map->find(key);
            if (!v) throw Error("KeyError", py_str_repr(key));
            arg = *v;
            have_arg = true;
            used_mapping = true;
        }
        JinjaSpec s;
        std::string flags;
        while (k < f.size() && std::string("-+ #0").find(f[k]) != std::string::npos) flags += f[k++];
        auto number = [&]() -> int64_t {
            if (k < f.size() && f[k] == '*') {
                ++k;
                const Value w = take();
                if (!w.is_int_like()) throw Error("TypeError", "* wants int");
                return w.as_int();
            }
            int64_t v = -1;
            while (k < f.size() && f[k] >= '0' && f[k] <= '9') {
                v = (v < 0 ? 0 : v) * 10 + (f[k++] - '0');
                if (v > 1000000) throw Error("ValueError", "width too big");
            }
            return v;
        };
        int64_t width = number();
        int64_t precision = -1;
        if (k < f.size() && f[k] == '.') {
            ++k;
            precision = number();
            if (precision < 0) precision = 0;
        }
        while (k < f.size() && (f[k] == 'h' || f[k] == 'l' || f[k] == 'L')) ++k;
        if (k >= f.size()) throw Error("ValueError", "incomplete format");
        const char type = f[k];
        if (type == '%') {
            out += '%';
            continue;
        }
        if (!have_arg) arg = take();
        if (width < 0 && flags.find('-') != std::string::npos) width = -width;
        s.width = width < 0 ? -1 : width;
        s.align = flags.find('-') != std::string::npos ? '<' : '>';
        s.sign = flags.find('+') != std::string::npos ? '+' : flags.find(' ') != std::string::npos ? ' ' : '-';
        s.alternate = flags.find('#') != std::string::npos;
        const bool zero = flags.find('0') != std::string::npos && s.align == '>';
        std::string piece;
        switch (type) {
        case 's':
        case 'r':
        case 'a': {
            std::string text = type == 's' ? to_str(arg) : repr(arg);
            if (precision >= 0) text = encode_utf8(decode_utf8(text).substr(0, static_cast<size_t>(precision)));
            if (markup && !(arg.kind == Kind::String && arg.flag) && !arg.is_number()) text = html_escape(text);
            s.align = s.align == '<' ? '<' : '>';
            piece = jinja_align(text, "", s, '>');
            break;
        }
        case 'd':
        case 'i':
        case 'u':
        case 'x':
        case 'X':
        case 'o':
        case 'c': {
            if (type == 'c') {
                std::string ch;
                if (arg.kind == Kind::String && code_point_count(arg.str()) == 1)
                    ch = arg.str();
                else if (arg.is_int_like())
                    append_code_point(ch, static_cast<char32_t>(arg.as_int()));
                else
                    throw Error("TypeError", "%c requires an int or a unicode character, not " + type_name(arg));
                piece = jinja_align(ch, "", s, '>');
                break;
            }
            int64_t v;
            if (arg.is_int_like()) {
                v = arg.as_int();
            } else if (arg.kind == Kind::Float && (type == 'd' || type == 'i' || type == 'u')) {
                if (!std::isfinite(arg.f)) throw Error("OverflowError", "cannot convert float infinity or NaN to integer");
                v = static_cast<int64_t>(std::trunc(arg.f));
            } else {
                throw Error("TypeError", std::string("%") + type + " format: " +
                                             (type == 'd' || type == 'i' || type == 'u' ? "a real number" : "an integer") +
                                             " is required, not " + type_name(arg));
            }
            JinjaSpec is = s;
            is.type = (type == 'i' || type == 'u') ? 'd' : type;
            if (zero) {
                is.fill = '0';
                is.align = '=';
            }
            std::string body = jinja_format_int(v, is);
            if (precision >= 0) {
                // %.3d pads the digits with zeros to the precision.
                JinjaSpec ps;
                ps.type = is.type;
                ps.alternate = is.alternate;
                std::string digits = jinja_format_int(v < 0 ? -v : v, ps);
                std::string pre;
                if (is.alternate && type != 'd' && digits.size() > 2) {
                    pre = digits.substr(0, 2);
                    digits = digits.substr(2);
                }
                while (static_cast<int64_t>(digits.size()) < precision) digits.insert(digits.begin(), '0');
                const std::string sign = v < 0 ? "-" : s.sign == '+' ? "+" : s.sign == ' ' ? " " : "";
                body = jinja_align(digits, sign + pre, is, '>');
            }
            piece = body;
            break;
        }
        case 'e':
        case 'E':
        case 'f':
        case 'F':
        case 'g':
        case 'G': {
            if (!arg.is_number()) throw Error("TypeError", "must be real number, not " + type_name(arg));
            JinjaSpec fs = s;
            fs.type = type;
            fs.precision = precision < 0 ? 6 : precision;
            if (zero) {
                fs.fill = '0';
                fs.align = '=';
            }
            piece = jinja_format_float(arg.as_double(), fs);
            break;
        }
        default:
            throw Error("ValueError", std::string("unsupported format character '") + type + "'");
        }
        out += piece;
        if (out.size() > rt.max_string_bytes())
            throw Error("LimitError", "formatted string exceeds the limit of " + std::to_string(rt.max_string_bytes()) + " bytes");
    }
    if (!used_mapping && !mapping_like && next < positional.size())
        throw Error("TypeError", "not all arguments converted during string formatting");
    return out;
}

namespace {

// A field number or index of str.format; CPython refuses more digits than fit (ValueError).
size_t jinja_format_index(const std::string& digits) {
    if (digits.size() > 9) throw Error("ValueError", "Too many decimal digits in format string");
    return static_cast<size_t>(std::stoul(digits));
}

}  // namespace

std::string str_format(Runtime& rt, const std::string& fmt, const CallArgs& args) {
    std::string out;
    int auto_index = 0;  // 0 unknown, 1 automatic, 2 manual
    size_t next_auto = 0;
    // Parses one replacement field's text (between the braces) and formats it.
    std::function<std::string(const std::string&, int)> field = [&](const std::string& text, int level) -> std::string {
        if (level > 2) throw Error("ValueError", "Max string recursion exceeded");
        size_t k = 0;
        while (k < text.size() && text[k] != '.' && text[k] != '[' && text[k] != '!' && text[k] != ':') ++k;
        const std::string first = text.substr(0, k);
        Value obj;
        if (first.empty() || (first.find_first_not_of("0123456789") == std::string::npos)) {
            size_t idx;
            if (first.empty()) {
                if (auto_index == 2)
                    throw Error("ValueError", "cannot switch from manual field specification to automatic field numbering");
                auto_index = 1;
                idx = next_auto++;
            } else {
                if (auto_index == 1)
                    throw Error("ValueError", "cannot switch from automatic field numbering to manual field specification");
                auto_index = 2;
                idx = jinja_format_index(first);
            }
            if (idx >= args.args.size())
                throw Error("IndexError", "Replacement index " + std::to_string(idx) + " out of range for positional args tuple");
            obj = args.args[idx];
        } else {
            bool found = false;
            for (const auto& kw : args.kwargs)
                if (kw.first == first) {
                    obj = kw.second;
                    found = true;
                }
            if (!found) throw Error("KeyError", py_str_repr(first));
        }
        while (k < text.size() && (text[k] == '.' || text[k] == '[')) {
            if (text[k] == '.') {
                size_t e = ++k;
                while (e < text.size() && text[e] != '.' && text[e] != '[' && text[e] != '!' && text[e] != ':') ++e;
                obj = get_attribute(rt, obj, text.substr(k, e - k));
                k = e;
            } else {
                const size_t e = text.find(']', k);
                if (e == std::string::npos) throw Error("ValueError", "Missing ']' in format string");
                const std::string key = text.substr(k + 1, e - k - 1);
                const bool digits = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
                obj = get_item(rt, obj, digits ? Value::integer(static_cast<int64_t>(jinja_format_index(key))) : Value::string(key));
                k = e + 1;
            }
        }
        char conversion = 0;
        if (k < text.size() && text[k] == '!') {
            if (k + 1 >= text.size()) throw Error("ValueError", "end of string while looking for conversion specifier");
            conversion = text[k + 1];
            k += 2;
        }
        std::string spec;
        if (k < text.size()) {
            if (text[k] != ':') throw Error("ValueError", "expected ':' after conversion specifier");
            // Nested fields in the spec: {0:{1}}.
            const std::string raw = text.substr(k + 1);
            for (size_t j = 0; j < raw.size(); ++j) {
                if (raw[j] == '{') {
                    const size_t e = raw.find('}', j);
                    if (e == std::string::npos) throw Error("ValueError", "unmatched '{' in format spec");
                    spec += field(raw.substr(j + 1, e - j - 1), level + 1);
                    j = e;
                } else {
                    spec += raw[j];
                }
            }
        }
        if (conversion == 's') obj = Value::string(to_str(obj));
        else if (conversion == 'r' || conversion == 'a') obj = Value::string(repr(obj));
        else if (conversion) throw Error("ValueError", std::string("Unknown conversion specifier ") + conversion);
        if (obj.is_undefined() && spec.empty()) return "";
        return format_value(obj, spec);
    };
    for (size_t k = 0; k < fmt.size(); ++k) {
        const char c = fmt[k];
        if (c == '{') {
            if (k + 1 < fmt.size() && fmt[k + 1] == '{') {
                out += '{';
                ++k;
                continue;
            }
            int depth = 1;
            size_t e = k + 1;
            while (e < fmt.size() && depth) {
                if (fmt[e] == '{') ++depth;
                if (fmt[e] == '}') --depth;
                if (depth) ++e;
            }
            if (e >= fmt.size()) throw Error("ValueError", "expected '}' before end of string");
            out += field(fmt.substr(k + 1, e - k - 1), 0);
            k = e;
        } else if (c == '}') {
            if (k + 1 < fmt.size() && fmt[k + 1] == '}') {
                out += '}';
                ++k;
                continue;
            }
            throw Error("ValueError", "Single '}' encountered in format string");
        } else {
            out += c;
        }
        if (out.size() > rt.max_string_bytes())
            throw Error("LimitError", "formatted string exceeds the limit of " + std::to_string(rt.max_string_bytes()) + " bytes");
    }
    return out;
}

}  // namespace ql::jinja
