// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli generate MODEL [--compare MODEL2 ...] --prompt TEXT | --prompts FILE [--chat] ...:
// text from a model, and from quantized versions of it side by side (docs/CLI.md "generate").
#include <cmath>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.h"
#include "app/cli/cli_command.h"
#include "app/cli/cli_job_sink.h"
#include "app/cli/device_option.h"
#include "engine/api/generate_api.h"
#include "engine/core/errors.h"

namespace ql::cli {
namespace {

const char* kUsage =
    "quantlab-cli generate MODEL [--compare MODEL2 ...] (--prompt TEXT | --prompts FILE) [--chat] [--system TEXT]\n"
    "    [--max-tokens N] [--temperature T] [--top-k K] [--top-p P] [--min-p P] [--repetition-penalty R] [--seed S]\n"
    "    [--stop STRING ...] [--device cpu|cuda|cuda:N] [--json]\n\n"
    "MODEL, MODEL2: an HF model folder, a GGUF file, a QuantLab quantized checkpoint (ptq --out) or 'demo'.\n"
    "The first model is the reference: each --compare model generates the same prompts, and each of its tokens\n"
    "carries the KL between the reference's and its own next-token distributions there (teacher forcing), with\n"
    "the first token where the two outputs part.\n"
    "--prompts FILE: one prompt per line (blank lines skipped), or a .jsonl file whose lines are {\"prompt\": ...}\n"
    "or {\"messages\": [...]} (chat messages, rendered by the model's chat template).\n"
    "--chat renders each prompt as a user turn (after --system) through the model's own chat template.\n"
    "Greedy unless --temperature > 0 (then seeded sampling: top-k, top-p, min-p as transformers applies them).\n"
    "Generation stops at the model's end-of-generation tokens, a --stop string or --max-tokens (default 128).\n"
    "--json prints {\"outputs\": [{model, prompt, text, tokens, ...}]} in the order model by model, prompt by\n"
    "prompt (docs/CLI.md). Ctrl-C cancels (exit code 130).";

std::vector<GeneratePrompt> read_prompts(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw UserError("generate: cannot read the prompts file " + path);
    const bool jsonl = path.size() > 6 && path.compare(path.size() - 6, 6, ".jsonl") == 0;
    std::vector<GeneratePrompt> prompts;
    std::string line;
    for (int64_t n = 1; std::getline(in, line); ++n) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.find_first_not_of(" \t") == std::string::npos) continue;
        GeneratePrompt p;
        if (!jsonl) {
            p.text = line;
        } else {
            nlohmann::ordered_json j;
            try {
                j = nlohmann::ordered_json::parse(line);
            } catch (const nlohmann::json::exception& e) {
                throw UserError(path + ":" + std::to_string(n) + ": not valid JSON: " + e.what());
            }
            if (j.is_object() && j.contains("prompt") && j["prompt"].is_string())
                p.text = j["prompt"].get<std::string>();
            else if (j.is_object() && j.contains("messages") && j["messages"].is_array())
                p.messages_json = j["messages"].dump();
            else
                throw UserError(path + ":" + std::to_string(n) + ": expected {\"prompt\": string} or {\"messages\": [...]}");
        }
        prompts.push_back(std::move(p));
    }
    if (prompts.empty()) throw UserError("generate: " + path + " holds no prompt");
    return prompts;
}

nlohmann::ordered_json output_json(const GenerateOutput& o) {
    nlohmann::ordered_json tokens = nlohmann::ordered_json::array(), texts = nlohmann::ordered_json::array(),
                           probs = nlohmann::ordered_json::array(), kls = nlohmann::ordered_json::array(),
                           alternatives = nlohmann::ordered_json::array();
    for (const GeneratedTokenInfo& t : o.tokens) {
        tokens.push_back(t.id);
        texts.push_back(t.text);
        probs.push_back(t.probability);
        kls.push_back(t.kl_to_reference);
        nlohmann::ordered_json alt = nlohmann::ordered_json::array();
        for (const auto& [text, p] : t.alternatives) alt.push_back({{"text", text}, {"p", p}});
        alternatives.push_back(alt);
    }
    return {{"model", o.model},
            {"prompt", o.prompt},
            {"rendered_prompt", o.rendered_prompt},
            {"prompt_tokens", o.prompt_ids},
            {"text", o.text},
            {"tokens", tokens},
            {"token_texts", texts},
            {"probabilities", probs},
            {"kl_to_reference", kls},
            {"alternatives", alternatives},
            {"stop_reason", o.stop_reason},
            {"first_divergence", o.first_divergence},
            {"mean_kl", o.mean_kl},
            {"time_to_first_token_s", o.time_to_first_token_s},
            {"decode_tokens_per_second", o.decode_tokens_per_second},
            {"chat_template_sha256", o.chat_template_sha256}};
}

int run(const std::vector<std::string>& args) {
    ArgParser p("generate",
                {"--compare", "--prompt", "--prompts", "--system", "--max-tokens", "--temperature", "--top-k", "--top-p",
                 "--min-p", "--repetition-penalty", "--seed", "--stop", "--device"},
                {"--chat", "--json"});
    p.parse(args);
    if (p.positional().empty()) throw UserError("generate: missing MODEL (an HF model folder, a GGUF file or 'demo')");
    if (p.positional().size() > 1) throw UserError("generate: unexpected argument '" + p.positional()[1] + "'");
    GenerateRequest req;
    req.models.push_back(p.positional()[0]);
    for (const std::string& m : p.values("--compare")) req.models.push_back(m);
    if (p.has("--prompt") == p.has("--prompts")) throw UserError("generate: give either --prompt TEXT or --prompts FILE");
    if (p.has("--prompt")) {
        for (const std::string& text : p.values("--prompt")) req.prompts.push_back({text, ""});
    } else {
        req.prompts = read_prompts(p.required("--prompts"));
    }
    req.chat = p.has("--chat");
    req.system = p.value("--system").value_or("");
    if (!req.system.empty() && !req.chat) throw UserError("generate: --system needs --chat");
    if (p.has("--max-tokens")) req.max_new_tokens = p.positive_integer("--max-tokens");
    req.temperature = p.number("--temperature", 0.0);
    req.top_k = p.integer("--top-k", 0);
    req.top_p = p.number("--top-p", 1.0);
    req.min_p = p.number("--min-p", 0.0);
    req.repetition_penalty = p.number("--repetition-penalty", 1.0);
    req.seed = p.seed();
    req.stop = p.values("--stop");
    req.device = device_option(p);

    CancellationToken cancel;
    CancelOnSignal on_signal(cancel);
    const bool json = p.has("--json");
    CliJobSink sink;
    size_t streaming = static_cast<size_t>(-1);
    const GenerateReport r = run_generate(req, sink, cancel, [&](size_t output, const GeneratedTokenInfo& t) {
        if (json) return;
        if (output != streaming) {
            sink.finish_line();
            std::printf("\n== %s | prompt %zu ==\n", req.models[output / req.prompts.size()].c_str(),
                        output % req.prompts.size() + 1);
            streaming = output;
        }
        std::printf("%s", t.text.c_str());
        std::fflush(stdout);
    });
    sink.finish_line();
    if (json) {
        nlohmann::ordered_json outputs = nlohmann::ordered_json::array();
        for (const GenerateOutput& o : r.outputs) outputs.push_back(output_json(o));
        std::printf("%s\n", nlohmann::ordered_json{{"sampling", r.sampling}, {"outputs", outputs}}.dump(2).c_str());
        return 0;
    }
    std::printf("\n\n%-40s %6s %8s %10s %8s %s\n", "model", "prompt", "tokens", "ttft_s", "tok/s", "vs first model");
    for (const GenerateOutput& o : r.outputs) {
        std::string versus = "-";
        if (o.model_index > 0) {
            char buf[96];
            if (o.first_divergence < 0)
                std::snprintf(buf, sizeof buf, "same tokens, mean KL %.4g", o.mean_kl);
            else
                std::snprintf(buf, sizeof buf, "parts at token %lld, mean KL %.4g", static_cast<long long>(o.first_divergence),
                              o.mean_kl);
            versus = buf;
        }
        std::printf("%-40s %6zu %8zu %10.3f %8.2f %s\n", o.model.c_str(), o.prompt_index + 1, o.tokens.size(),
                    o.time_to_first_token_s, o.decode_tokens_per_second, versus.c_str());
    }
    return 0;
}

}  // namespace

Command generate_command() {
    return Command{"generate", kUsage,
                   "generate text (greedy or sampled, plain or through the chat template); compare quantized models token by token",
                   run};
}

}  // namespace ql::cli
