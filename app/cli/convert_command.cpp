// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli convert FILE.gguf --out DIR [--force]: a GGUF file as a Hugging Face model folder
// (docs/CLI.md "convert").
#include <cstdio>

#include "app/cli/arg_parser.h"
#include "app/cli/cli_command.h"
#include "engine/api/model_api.h"
#include "engine/core/errors.h"

namespace ql::cli {
namespace {

const char* kUsage =
    "quantlab-cli convert FILE.gguf --out DIR [--force]\n\n"
    "Writes a Hugging Face model folder that transformers loads (AutoModelForCausalLM, AutoTokenizer):\n"
    "config.json, model.safetensors (the file's weights decoded exactly to float32), tokenizer.json (split as\n"
    "llama.cpp splits for the file's tokenizer.ggml.pre), tokenizer_config.json, chat_template.jinja (the file's\n"
    "tokenizer.chat_template), generation_config.json (end-of-generation ids) and SOURCE.md (the file's general.*\n"
    "metadata and licence). Weights that the file stored quantized stay on that format's grid.\n"
    "DIR must not exist unless --force.";

int run(const std::vector<std::string>& args) {
    ArgParser p("convert", {"--out"}, {"--force"});
    p.parse(args);
    if (p.positional().size() != 1) throw UserError("convert: give one GGUF file");
    const ConvertedFolder r = convert_gguf_model(p.positional()[0], p.required("--out"), p.has("--force"));
    for (const std::string& w : r.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
    std::printf("wrote %s:", r.folder.c_str());
    for (const std::string& f : r.files) std::printf(" %s", f.c_str());
    std::printf("\n");
    return 0;
}

}  // namespace

Command convert_command() {
    return Command{"convert", kUsage, "convert a GGUF file into a Hugging Face model folder", run};
}

}  // namespace ql::cli
