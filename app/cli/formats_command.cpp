// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli formats [--json]: every number format with its parameters.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.h"
#include "app/cli/cli_command.h"
#include "engine/core/errors.h"
#include "engine/core/format_catalog.h"

namespace ql::cli {
namespace {

nlohmann::json to_json(const FormatInfo& f) {
    nlohmann::json element = {{"name", f.element.name},       {"sign_bits", f.element.sign_bits},
                              {"exponent_bits", f.element.exponent_bits}, {"mantissa_bits", f.element.mantissa_bits},
                              {"bias", f.element.bias},       {"is_float", f.element.is_float},
                              {"is_integer", f.element.is_integer}, {"is_codebook", f.element.is_codebook},
                              {"code_offset", f.element.code_offset}};
    return {{"name", f.name},
            {"title", f.title},
            {"family", f.family},
            {"summary", f.summary},
            {"scale_rule", f.scale_rule},
            {"source", f.source},
            {"notes", f.notes},
            {"element", element},
            {"element_bits", f.element_bits},
            {"element_max", f.element_max},
            {"element_values", f.element_values},
            {"block_size", f.block_size},
            {"scale_type", f.scale_type},
            {"bits_per_element", f.bits_per_element},
            {"granularities", f.granularities},
            {"default_group_size", f.default_group_size},
            {"supports_asymmetric", f.supports_asymmetric},
            {"supports_double_quant", f.supports_double_quant},
            {"supports_mx_scale_rule", f.supports_scale_rule},
            {"requires_importance", f.requires_importance}};
}

int run(const std::vector<std::string>& args) {
    ArgParser p("formats", {}, {"--json"});
    p.parse(args);
    if (!p.positional().empty()) throw UserError("formats: unexpected argument '" + p.positional()[0] + "'");
    if (p.has("--json")) {
        nlohmann::json all = nlohmann::json::array();
        for (const auto& f : all_formats()) all.push_back(to_json(f));
        std::printf("%s\n", all.dump(2).c_str());
        return 0;
    }
    std::printf("%-12s %-5s %-6s %-10s %s\n", "NAME", "BITS", "BLOCK", "BITS/ELEM", "SCALES");
    for (const auto& f : all_formats())
        std::printf("%-12s %-5d %-6s %-10.3f %s\n", f.name.c_str(), f.element_bits,
                    f.block_size ? std::to_string(f.block_size).c_str() : "-", f.bits_per_element,
                    f.scale_type.empty() ? "none" : f.scale_type.c_str());
    return 0;
}

}  // namespace

Command formats_command() {
    return Command{"formats", "quantlab-cli formats [--json]", "list the number formats and their parameters", run};
}

}  // namespace ql::cli
