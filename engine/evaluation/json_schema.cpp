// SPDX-License-Identifier: GPL-3.0-or-later
// valijson reports errors by exception only when VALIJSON_USE_EXCEPTIONS is set; without it a
// malformed schema calls abort(). This is the one file that includes valijson.
#define VALIJSON_USE_EXCEPTIONS 1
#include "engine/evaluation/json_schema.h"

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include <regex>
#include <stdexcept>

namespace ql::evaluation {

struct JsonSchema::Compiled {
    valijson::Schema schema;
};

namespace {

// valijson's fetch/free callbacks are plain function pointers, so the resolver of the schema
// being compiled is handed over in a thread-local (compilation is synchronous).
thread_local const SchemaDocumentResolver* json_schema_active_resolver = nullptr;

const nlohmann::json* json_schema_fetch_document(const std::string& uri) {
    if (!json_schema_active_resolver || !*json_schema_active_resolver)
        throw std::invalid_argument("remote $ref '" + uri + "' (only references inside the schema are allowed)");
    std::optional<nlohmann::json> doc = (*json_schema_active_resolver)(uri);
    if (!doc) throw std::invalid_argument("remote $ref '" + uri + "' cannot be resolved");
    return new nlohmann::json(std::move(*doc));  // valijson owns it and frees it through the callback below
}

void json_schema_free_document(const nlohmann::json* doc) { delete doc; }

// valijson 1.0 compiles "pattern" and "patternProperties" regexes (std::regex, ECMAScript) only
// when it first validates a string against them; compiling each once here reports a bad pattern
// when the schema is loaded instead.
void json_schema_check_patterns(const nlohmann::json& node) {
    auto compile = [](const std::string& pattern) {
        try {
            std::regex compiled(pattern);
        } catch (const std::regex_error& e) {
            throw std::invalid_argument("invalid pattern '" + pattern + "': " + e.what());
        }
    };
    if (node.is_object()) {
        for (const auto& [key, value] : node.items()) {
            if (key == "const" || key == "enum" || key == "default" || key == "examples") continue;  // data, not schemas
            if (key == "pattern" && value.is_string()) compile(value.get<std::string>());
            if (key == "patternProperties" && value.is_object())
                for (const auto& [pattern, _] : value.items()) compile(pattern);
            json_schema_check_patterns(value);
        }
    } else if (node.is_array()) {
        for (const auto& value : node) json_schema_check_patterns(value);
    }
}

}  // namespace

JsonSchema::JsonSchema(const nlohmann::json& schema, const SchemaDocumentResolver& resolve)
    : schema_(schema), compiled_(std::make_unique<Compiled>()) {
    if (!schema.is_object() && !schema.is_boolean()) throw std::invalid_argument("a schema must be an object or a boolean");
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    valijson::adapters::NlohmannJsonAdapter adapter(schema_);
    const SchemaDocumentResolver* previous = json_schema_active_resolver;
    json_schema_active_resolver = &resolve;
    try {
        parser.populateSchema(adapter, compiled_->schema, json_schema_fetch_document, json_schema_free_document);
    } catch (const std::invalid_argument&) {
        json_schema_active_resolver = previous;
        throw;
    } catch (const std::exception& e) {  // valijson throws std::runtime_error and std::logic_error
        json_schema_active_resolver = previous;
        throw std::invalid_argument(e.what());
    }
    json_schema_active_resolver = previous;
    json_schema_check_patterns(schema_);
}

JsonSchema::~JsonSchema() = default;

bool JsonSchema::valid(const nlohmann::json& value) const {
    valijson::Validator validator;  // strong types: "1" is not a number
    valijson::adapters::NlohmannJsonAdapter target(value);
    try {
        return validator.validate(compiled_->schema, target, nullptr);
    } catch (const std::exception& e) {  // std::regex gives up on a pathological string
        throw std::runtime_error(std::string("schema validation failed: ") + e.what());
    }
}

std::vector<std::string> JsonSchema::errors(const nlohmann::json& value, size_t max_errors) const {
    valijson::Validator validator;
    valijson::ValidationResults results;
    valijson::adapters::NlohmannJsonAdapter target(value);
    std::vector<std::string> out;
    try {
        if (validator.validate(compiled_->schema, target, &results)) return out;
    } catch (const std::exception& e) {
        throw std::runtime_error(std::string("schema validation failed: ") + e.what());
    }
    valijson::ValidationResults::Error error;
    while (out.size() < max_errors && results.popError(error)) {
        std::string path;
        for (const std::string& p : error.context) path += (path.empty() ? "" : " ") + p;
        out.push_back(path + ": " + error.description);
    }
    // A schema that is `false` (or holds one where the value lands) fails without a message.
    if (out.empty()) out.push_back("<root>: the schema admits no value here");
    return out;
}

}  // namespace ql::evaluation
