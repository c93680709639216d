// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli tokenize MODEL (--text TEXT | --file FILE) [--out IDS.npy] [--json] and
// quantlab-cli logits MODEL --ids IDS.npy --out LOGITS.npy: text as the model reads it, and its
// raw outputs, for comparison with other tools (docs/CLI.md).
#include <cstdio>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.h"
#include "app/cli/cli_command.h"
#include "app/cli/device_option.h"
#include "engine/api/model_api.h"
#include "engine/core/errors.h"
#include "engine/io/npy_file.h"
#include "engine/io/whole_file.h"

namespace ql::cli {
namespace {

const char* kTokenizeUsage =
    "quantlab-cli tokenize MODEL (--text TEXT | --file FILE) [--out IDS.npy] [--json]\n\n"
    "The token ids of the text as eval, ptq and train read text (no special tokens added), one per line as\n"
    "'id<TAB>text', or with --json {\"ids\": [...], \"pieces\": [...]}; --out also writes the ids as an int64 .npy.";

const char* kLogitsUsage =
    "quantlab-cli logits MODEL --ids IDS.npy --out LOGITS.npy [--device cpu|cuda|cuda:N]\n\n"
    "The model's float32 logits [batch, tokens, vocab] for int64 (or int32) token ids [batch, tokens]: the full\n"
    "sequence at once (no KV cache), as transformers' model(input_ids).logits.";

int run_tokenize(const std::vector<std::string>& args) {
    ArgParser p("tokenize", {"--text", "--file", "--out"}, {"--json"});
    p.parse(args);
    if (p.positional().size() != 1) throw UserError("tokenize: give one MODEL");
    if (p.has("--text") == p.has("--file")) throw UserError("tokenize: give either --text TEXT or --file FILE");
    const std::string text = p.has("--text") ? p.required("--text") : read_whole_file(p.required("--file"), "text file");
    const TokenizedText t = tokenize_text(p.positional()[0], text);
    if (p.has("--out")) {
        NdArray a = NdArray::zeros(DType::Int64, {static_cast<int64_t>(t.ids.size())});
        std::copy(t.ids.begin(), t.ids.end(), a.as<int64_t>());
        write_npy(p.required("--out"), a);
    }
    if (p.has("--json")) {
        std::printf("%s\n", nlohmann::json{{"ids", t.ids}, {"pieces", t.pieces}}.dump().c_str());
    } else {
        for (size_t i = 0; i < t.ids.size(); ++i) std::printf("%lld\t%s\n", static_cast<long long>(t.ids[i]), t.pieces[i].c_str());
    }
    return 0;
}

int run_logits(const std::vector<std::string>& args) {
    ArgParser p("logits", {"--ids", "--out", "--device"}, {});
    p.parse(args);
    if (p.positional().size() != 1) throw UserError("logits: give one MODEL");
    const NdArray logits = model_logits(p.positional()[0], read_npy(p.required("--ids")), device_option(p));
    write_npy(p.required("--out"), logits);
    std::printf("wrote %s %s\n", p.required("--out").c_str(), shape_string(logits.shape).c_str());
    return 0;
}

}  // namespace

Command tokenize_command() {
    return Command{"tokenize", kTokenizeUsage, "show the token ids of a text as the model reads it", run_tokenize};
}

Command logits_command() {
    return Command{"logits", kLogitsUsage, "write a model's logits for token ids (.npy), for comparison with other tools",
                   run_logits};
}

}  // namespace ql::cli
