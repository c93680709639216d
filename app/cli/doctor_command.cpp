// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli doctor PATH [--json]: the Export Doctor on an export folder or a GGUF file
// (docs/EXPORT.md "Export Doctor", docs/CLI.md "doctor"). Exit 0 when no finding is an error,
// 1 otherwise (and for a PATH that does not exist).
#include <cstdio>

#include "app/cli/arg_parser.h"
#include "app/cli/cli_command.h"
#include "app/cli/doctor_text.h"
#include "engine/api/doctor_api.h"
#include "engine/core/errors.h"

namespace ql::cli {
namespace {

std::string usage() {
    return "quantlab-cli doctor PATH [--json]\n\n"
           "Checks an exported model the way its consumer loads it: a compressed-tensors or Model Optimizer HF folder\n"
           "(vLLM, TensorRT-LLM), a plain HF folder (transformers) or a .gguf file (llama.cpp). Findings name the layer\n"
           "or tensor, what the consumer would do and the fix. Exit 0 when no finding is an error, 1 otherwise.";
}

int run(const std::vector<std::string>& args) {
    ArgParser p("doctor", {}, {"--json"});
    p.parse(args);
    if (p.positional().empty()) throw UserError("doctor: missing PATH (an export folder or a .gguf file)");
    if (p.positional().size() > 1) throw UserError("doctor: unexpected argument '" + p.positional()[1] + "'");
    const DoctorReport r = run_doctor(p.positional()[0]);
    if (p.has("--json"))
        std::printf("%s\n", doctor_report_json(r).c_str());
    else
        std::printf("%s", doctor_report_text(r, true).c_str());
    return r.ok() ? 0 : 1;
}

}  // namespace

Command doctor_command() {
    return Command{"doctor", usage(), "check an exported model as vLLM / TensorRT-LLM / llama.cpp would load it", run};
}

}  // namespace ql::cli
