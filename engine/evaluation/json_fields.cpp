// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/evaluation/json_fields.h"

#include <cmath>

namespace ql::evaluation {

JsonFields::JsonFields(const nlohmann::json& object, std::string prefix) : j_(object), prefix_(std::move(prefix)) {
    if (!j_.is_object()) throw JsonFieldError{prefix_.empty() ? "(top level)" : prefix_.substr(0, prefix_.size() - 1), "expected an object"};
}

void JsonFields::fail(const char* key, const std::string& message) const { throw JsonFieldError{prefix_ + key, message}; }

const nlohmann::json& JsonFields::get(const char* key) const {
    if (!j_.contains(key)) fail(key, "missing");
    return j_[key];
}

std::string JsonFields::text(const char* key) const {
    const nlohmann::json& v = get(key);
    if (!v.is_string()) fail(key, "expected a string");
    return v.get<std::string>();
}

std::string JsonFields::text_or(const char* key, const std::string& fallback) const { return j_.contains(key) ? text(key) : fallback; }

bool JsonFields::boolean(const char* key) const {
    const nlohmann::json& v = get(key);
    if (!v.is_boolean()) fail(key, "expected true or false");
    return v.get<bool>();
}

double JsonFields::number(const char* key) const {
    const nlohmann::json& v = get(key);
    if (!v.is_number() || !std::isfinite(v.get<double>())) fail(key, "expected a finite number");
    return v.get<double>();
}

double JsonFields::non_negative(const char* key) const {
    const double v = number(key);
    if (v < 0) fail(key, "expected a number >= 0");
    return v;
}

std::optional<double> JsonFields::optional_number(const char* key) const {
    if (!has(key)) return std::nullopt;
    return number(key);
}

int64_t JsonFields::integer(const char* key, int64_t min) const {
    const nlohmann::json& v = get(key);
    if (!v.is_number_integer() || v.get<int64_t>() < min) fail(key, "expected an integer >= " + std::to_string(min));
    return v.get<int64_t>();
}

uint64_t JsonFields::unsigned_integer(const char* key) const {
    const nlohmann::json& v = get(key);
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) fail(key, "expected an integer >= 0");
    return v.get<uint64_t>();
}

std::vector<std::string> JsonFields::texts(const char* key) const {
    const nlohmann::json& v = get(key);
    if (!v.is_array()) fail(key, "expected a list of strings");
    std::vector<std::string> out;
    for (const nlohmann::json& s : v) {
        if (!s.is_string()) fail(key, "expected a list of strings");
        out.push_back(s.get<std::string>());
    }
    return out;
}

JsonFields JsonFields::object(const char* key) const {
    const nlohmann::json& v = get(key);
    if (!v.is_object()) fail(key, "expected an object");
    return JsonFields(v, prefix_ + key + ".");
}

const nlohmann::json& JsonFields::array(const char* key) const {
    const nlohmann::json& v = get(key);
    if (!v.is_array()) fail(key, "expected a list");
    return v;
}

void JsonFields::only(std::initializer_list<const char*> keys) const {
    for (const auto& [key, _] : j_.items()) {
        bool known = false;
        for (const char* k : keys) known = known || key == k;
        if (!known) throw JsonFieldError{prefix_ + key, "unknown key"};
    }
}

}  // namespace ql::evaluation
