// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli recipe export: a per-layer plan (a recipe, or the recipe a project run was made
// with, e.g. an experiment's mixed-precision plan) in another tool's form (docs/CLI.md "recipe").
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.h"
#include "app/cli/cli_command.h"
#include "engine/api/export_api.h"
#include "engine/core/errors.h"
#include "engine/io/atomic_file.h"
#include "projects/project_file.h"

namespace ql::cli {
namespace {

const char* kUsage =
    "quantlab-cli recipe export RECIPE|--run ID --project P.qlab --as KIND [--model M] [--out FILE] [--json]\n\n"
    "Writes the per-layer plan of RECIPE (a preset or recipe file), or of the recipe project run ID was made with (an\n"
    "experiment's mixed run: its plan), in another tool's form for MODEL (default: the run's model). KIND:\n"
    "  compressed-tensors  quantization_config (config_groups with the module names as targets, ignore: the layers\n"
    "                      left in BF16), as 'export --as compressed-tensors' writes it into config.json\n"
    "  modelopt            Model Optimizer's quantization config {quant_cfg, algorithm} for mtq.quantize, one entry\n"
    "                      per layer's quantizer (JSON; load it with scripts/modelopt_plan.py load_modelopt_plan)\n"
    "  llama-tensor-types  llama-quantize arguments, one per line: --tensor-type ^NAME$=TYPE for every planned layer\n"
    "                      (f16 for the layers left unquantized), --output-tensor-type for lm_head; use as\n"
    "                      llama-quantize $(cat FILE) in.gguf out.gguf Q4_K_M (GGML types only)\n"
    "A layer the form cannot express is an error naming it. To FILE, or stdout. --json prints a summary.";

int export_recipe(const std::vector<std::string>& args) {
    ArgParser p("recipe export", {"--run", "--project", "--as", "--model", "--out"}, {"--json"});
    p.parse(std::vector<std::string>(args.begin() + 1, args.end()));
    const std::string as = p.required("--as");
    std::string recipe, model = p.value("--model").value_or("");
    if (const auto run = p.value("--run")) {
        if (!p.positional().empty()) throw UserError("recipe export: give a RECIPE or --run ID, not both");
        const std::string project = p.required("--project");
        const int64_t id = p.positive_integer("--run");
        const projects::ProjectFile file = projects::ProjectFile::open(project, projects::OpenMode::ReadOnly);
        const projects::RunRecord r = file.run(id);
        if (!r.recipe_id) throw UserError("recipe export: run " + std::to_string(id) + " of " + project + " has no recipe");
        recipe = file.recipe(*r.recipe_id).json;
        if (model.empty()) {
            const nlohmann::json config = nlohmann::json::parse(r.config_json, nullptr, false);
            if (config.is_object() && config.contains("parameters") && config["parameters"].contains("model"))
                model = config["parameters"]["model"].get<std::string>();
        }
        if (model.empty()) throw UserError("recipe export: run " + std::to_string(id) + " names no model: give --model");
    } else {
        if (p.positional().size() != 1) throw UserError("recipe export: expected one RECIPE (or --run ID --project P)");
        recipe = p.positional()[0];
        if (model.empty()) throw UserError("recipe export: --model is required with a RECIPE (its layers resolve the plan)");
    }
    const PlanExport out = export_plan(model, recipe, as);
    if (const auto path = p.value("--out")) write_file_atomically(*path, out.text);
    else if (!p.has("--json")) std::printf("%s", out.text.c_str());
    if (p.has("--json"))
        std::printf("%s\n", nlohmann::json({{"as", as},
                                            {"model", model},
                                            {"out", p.value("--out").value_or("")},
                                            {"quantized_layers", out.quantized_layers},
                                            {"ignored_layers", out.ignored_layers},
                                            {"groups", out.groups}})
                                .dump(2)
                                .c_str());
    return 0;
}

int run(const std::vector<std::string>& args) {
    if (args.empty() || args[0] != "export") throw UserError("recipe: expected export (quantlab-cli recipe --help)");
    return export_recipe(args);
}

}  // namespace

Command recipe_command() {
    return Command{"recipe", kUsage, "a per-layer plan (recipe, a run's plan) as compressed-tensors, Model Optimizer or llama-quantize settings", run};
}

}  // namespace ql::cli
