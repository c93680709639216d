// SPDX-License-Identifier: GPL-3.0-or-later
// Reading stored evaluation runs back (run_manifest.h, evaluation_run.h): each field checked for
// presence and type, a problem reported as JsonFieldError{"cost.weights.bytes", "expected a
// number >= 0"} that the caller turns into one UserError naming the file and the field. Plain C++.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace ql::evaluation {

struct JsonFieldError {
    std::string field, message;
};

// The members of one JSON object, named `prefix` + key in errors ("manifest." + "label").
class JsonFields {
public:
    JsonFields(const nlohmann::json& object, std::string prefix);

    bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
    const nlohmann::json& get(const char* key) const;  // present (may be null)
    std::string text(const char* key) const;
    std::string text_or(const char* key, const std::string& fallback) const;
    bool boolean(const char* key) const;
    double number(const char* key) const;             // finite
    double non_negative(const char* key) const;       // finite and >= 0
    std::optional<double> optional_number(const char* key) const;  // absent or null: nullopt
    int64_t integer(const char* key, int64_t min = 0) const;
    uint64_t unsigned_integer(const char* key) const;
    std::vector<std::string> texts(const char* key) const;
    JsonFields object(const char* key) const;         // a nested object
    const nlohmann::json& array(const char* key) const;
    std::string field(const char* key) const { return prefix_ + key; }
    // Every key must be one of `keys`.
    void only(std::initializer_list<const char*> keys) const;
    [[noreturn]] void fail(const char* key, const std::string& message) const;

private:
    const nlohmann::json& j_;
    std::string prefix_;
};

}  // namespace ql::evaluation
