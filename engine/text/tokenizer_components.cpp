// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/text/tokenizer_components.h"

#include <array>

#include "engine/core/errors.h"
#include "engine/text/unicode_text.h"

namespace ql::text {

void JsonPath::fail(const std::string& what) const {
    throw UserError(*file_ + ": tokenizer.json field '" + (path_.empty() ? std::string("(root)") : path_) + "': " + what);
}

const Json& JsonPath::require(const Json& object, const std::string& key) const {
    if (!object.is_object()) fail("expected an object");
    const auto it = object.find(key);
    if (it == object.end()) (*this / key).fail("missing");
    return *it;
}

std::string JsonPath::string(const Json& object, const std::string& key) const {
    const Json& v = require(object, key);
    if (!v.is_string()) (*this / key).fail("expected a string");
    return v.get<std::string>();
}

std::string JsonPath::string(const Json& object, const std::string& key, const std::string& fallback) const {
    const auto s = optional_string(object, key);
    return s ? *s : fallback;
}

std::optional<std::string> JsonPath::optional_string(const Json& object, const std::string& key) const {
    if (!object.is_object()) fail("expected an object");
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return std::nullopt;
    if (!it->is_string()) (*this / key).fail("expected a string");
    return it->get<std::string>();
}

bool JsonPath::boolean(const Json& object, const std::string& key, bool fallback) const {
    if (!object.is_object()) fail("expected an object");
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) (*this / key).fail("expected true or false");
    return it->get<bool>();
}

int64_t JsonPath::integer(const Json& object, const std::string& key, int64_t fallback) const {
    if (!object.is_object()) fail("expected an object");
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return fallback;
    if (!it->is_number_integer()) (*this / key).fail("expected an integer");
    return it->get<int64_t>();
}

char32_t JsonPath::character(const Json& object, const std::string& key) const {
    const std::string s = string(object, key);
    if (s.empty() || valid_utf8_prefix(s) != s.size()) (*this / key).fail("expected a single character");
    size_t i = 0;
    const char32_t c = next_code_point(s, i);
    if (i != s.size()) (*this / key).fail("expected a single character");
    return c;
}

const Json& JsonPath::array(const Json& object, const std::string& key) const {
    const Json& v = require(object, key);
    if (!v.is_array()) (*this / key).fail("expected an array");
    return v;
}

std::string JsonPath::type(const Json& object) const { return string(object, "type"); }

namespace {

struct ByteMap {
    std::array<std::string, 256> to_char;
    std::array<int, 324> from_char;  // code points 0..323 cover the whole map
    ByteMap() {
        from_char.fill(-1);
        int extra = 0;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            const char32_t c = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + extra++);
            append_utf8(to_char[b], c);
            from_char[c] = b;
        }
    }
};

const ByteMap& byte_map() {
    static const ByteMap map;
    return map;
}

}  // namespace

const std::string& byte_to_char_utf8(unsigned char b) { return byte_map().to_char[b]; }

int char_to_byte(char32_t c) { return c < 324 ? byte_map().from_char[c] : -1; }

}  // namespace ql::text
