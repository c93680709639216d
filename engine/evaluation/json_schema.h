// SPDX-License-Identifier: GPL-3.0-or-later
// A compiled JSON Schema (draft 7) that validates JSON values: the json_schema and tool_call
// checks of the eval suites (docs/EVAL_SUITES.md). The validation is valijson's (Debian
// libvalijson-dev 1.0, header-only, through its nlohmann_json adapter); this class only owns the
// compiled schema and turns valijson's failures into our errors. Its agreement with the JSON
// Schema Test Suite (Debian json-schema-test-suite, draft7) is checked case by case in
// tests/engine/json_schema_suite_test.cpp.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ql::evaluation {

// Resolves the document of a remote $ref (a URI without its fragment) to a local JSON document,
// or nullopt when it cannot. Nothing is fetched over the network.
using SchemaDocumentResolver = std::function<std::optional<nlohmann::json>(const std::string& uri)>;

class JsonSchema {
public:
    // Compiles `schema` (an object or a boolean, draft 7) and its "pattern" regexes (ECMAScript,
    // std::regex, as valijson matches them). Throws std::invalid_argument with
    // valijson's reason when the schema is malformed or has a $ref it cannot resolve: a remote
    // document without `resolve` (or one `resolve` does not know), or a relative reference against
    // a changed base URI ($id), which valijson 1.0 does not support.
    explicit JsonSchema(const nlohmann::json& schema, const SchemaDocumentResolver& resolve = nullptr);
    ~JsonSchema();
    JsonSchema(const JsonSchema&) = delete;
    JsonSchema& operator=(const JsonSchema&) = delete;

    // True when `value` is valid. Thread-safe (each call uses its own validator). std::runtime_error
    // when std::regex gives up on a string (error_complexity / error_stack).
    bool valid(const nlohmann::json& value) const;
    // The failures, each "<path>: <description>" (e.g. "<root> [age]: Value type not permitted by
    // 'type' constraint."), at most `max_errors` of them; empty exactly when valid.
    std::vector<std::string> errors(const nlohmann::json& value, size_t max_errors = 8) const;

    const nlohmann::json& schema() const { return schema_; }

private:
    struct Compiled;
    nlohmann::json schema_;
    std::unique_ptr<Compiled> compiled_;
};

}  // namespace ql::evaluation
