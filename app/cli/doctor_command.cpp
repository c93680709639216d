// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli doctor PATH [--json]: the Export Doctor on an export folder or a GGUF file
// (docs/EXPORT.md "Export Doctor", docs/CLI.md "doctor"). Exit 0 when no finding is an error,
// 1 otherwise (and for a PATH that does not exist).
#include <cstdio>

#include "app/cli/arg_parser.h"
#include "app/cli/cli_command.h"
#include "app/cli/doctor_text.h"
#include "engine/api/doctor_api.h"
#include "engine/api/lora_api.h"
#include "engine/core/errors.h"

namespace ql::cli {
namespace {

std::string usage() {
    return "quantlab-cli doctor PATH [--json]\n"
           "quantlab-cli doctor ADAPTER --base MODEL [--recipe R] [--data D] [--json]\n\n"
           "Checks an exported model the way its consumer loads it: a compressed-tensors or Model Optimizer HF folder\n"
           "(vLLM, TensorRT-LLM), a plain HF folder (transformers) or a .gguf file (llama.cpp). Findings name the layer\n"
           "or tensor, what the consumer would do and the fix. Exit 0 when no finding is an error, 1 otherwise.\n"
           "ADAPTER (a LoRA run or its PEFT adapter folder) with --base: is MODEL (quantized with --recipe R unless it is a\n"
           "quantized checkpoint) the base the adapter was trained on? The adapter records its base's fingerprint (format,\n"
           "block size, double quantization, codes); another quantization is an error finding with the measured drift\n"
           "(KL and top-1 agreement of the adapter on the given base against it on its own, over D; default 8 random-token\n"
           "sequences).";
}

int run(const std::vector<std::string>& args) {
    ArgParser p("doctor", {"--base", "--recipe", "--data", "--device"}, {"--json"});
    p.parse(args);
    if (p.positional().empty()) throw UserError("doctor: missing PATH (an export folder or a .gguf file)");
    if (p.positional().size() > 1) throw UserError("doctor: unexpected argument '" + p.positional()[1] + "'");
    for (const char* o : {"--recipe", "--data", "--device"})
        if (p.has(o) && !p.has("--base")) throw UserError(std::string("doctor: ") + o + " applies with --base (an adapter's base)");
    DoctorReport r;
    if (p.has("--base")) {
        AdapterDoctorRequest req;
        req.adapter = p.positional()[0];
        req.base = *p.value("--base");
        req.recipe = p.value("--recipe").value_or("");
        req.data = p.value("--data").value_or("");
        req.device = p.value("--device").value_or("cpu");
        CancellationToken cancel;
        r = run_adapter_doctor(req, cancel);
    } else {
        r = run_doctor(p.positional()[0]);
    }
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
