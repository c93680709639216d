// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli inspect MODEL [--json]: architecture, layers, shapes, dtypes, parameter counts
// (docs/CLI.md "inspect").
#include <cstdio>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.h"
#include "app/cli/cli_command.h"
#include "engine/core/errors.h"
#include "engine/api/model_api.h"
#include "engine/core/nd_array.h"

namespace ql::cli {
namespace {

const char* kUsage =
    "quantlab-cli inspect MODEL [--json]\n\n"
    "MODEL: an HF model folder (config.json + model.safetensors or a sharded index) or 'demo'.\n"
    "Prints the architecture, every quantizable layer (name, kind, weight shape, bias, parameters) and the\n"
    "parameter count; --json adds every parameter tensor (name, shape, dtype).";

nlohmann::json config_json(const ModelConfig& c) {
    return {{"architecture", c.architecture},
            {"model_type", c.model_type},
            {"vocab_size", c.vocab_size},
            {"hidden_size", c.hidden_size},
            {"num_layers", c.num_layers},
            {"num_heads", c.num_heads},
            {"num_kv_heads", c.num_kv_heads},
            {"head_dim", c.head_dim},
            {"intermediate_size", c.intermediate_size},
            {"max_positions", c.max_positions},
            {"tie_embeddings", c.tie_embeddings},
            {"activation", c.activation},
            {"rope_theta", c.rope_theta},
            {"num_classes", c.num_classes}};
}

// Encoders: how sentence embeddings are made (the sentence-transformers config); null otherwise.
nlohmann::json sentence_json(const ModelConfig& c) {
    if (c.architecture != "bert") return nullptr;
    return {{"pooling", c.sentence.pooling},
            {"normalize", c.sentence.normalize},
            {"max_seq_length", c.sentence.max_seq_length > 0 ? c.sentence.max_seq_length : c.max_positions},
            {"lowercase", c.sentence.lowercase},
            {"source", c.sentence.source},
            {"mlm_head", c.mlm_head}};
}

int run(const std::vector<std::string>& args) {
    ArgParser p("inspect", {}, {"--json"});
    p.parse(args);
    if (p.positional().empty()) throw UserError("inspect: missing MODEL (an HF model folder or 'demo')");
    if (p.positional().size() > 1) throw UserError("inspect: unexpected argument '" + p.positional()[1] + "'");
    const ModelSummary s = inspect_model(p.positional()[0]);
    if (p.has("--json")) {
        nlohmann::json params = nlohmann::json::array(), layers = nlohmann::json::array();
        for (const auto& t : s.parameters)
            params.push_back({{"name", t.name}, {"shape", t.shape}, {"dtype", t.dtype}, {"numel", t.numel}});
        for (const auto& l : s.layers)
            layers.push_back({{"name", l.name},
                              {"kind", l.kind},
                              {"weight_shape", l.weight_shape},
                              {"bias", l.has_bias},
                              {"parameters", l.parameters}});
        const nlohmann::json j = {{"path", s.path},
                                  {"demo", s.is_demo},
                                  {"architecture", s.config.architecture},
                                  {"model_type", s.config.model_type},
                                  {"config", config_json(s.config)},
                                  {"parameter_count", s.parameter_count},
                                  {"parameter_bytes", s.parameter_bytes},
                                  {"layers", layers},
                                  {"parameters", params},
                                  {"sentence_embedding", sentence_json(s.config)}};
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    const ModelConfig& c = s.config;
    std::printf("model          %s%s\n", s.path.c_str(), s.is_demo ? " (QuantLab demo)" : "");
    std::printf("architecture   %s (model_type %s)\n", c.architecture.c_str(), c.model_type.c_str());
    if (c.vocab_size) {
        std::printf("shape          %lld layers, hidden %lld, %lld heads (%lld kv, dim %lld), MLP %lld, vocab %lld, %lld positions\n",
                    (long long)c.num_layers, (long long)c.hidden_size, (long long)c.num_heads, (long long)c.num_kv_heads,
                    (long long)c.head_dim, (long long)c.intermediate_size, (long long)c.vocab_size,
                    (long long)c.max_positions);
    }
    if (c.architecture == "bert")
        std::printf("embedding      %s pooling%s, sentences of at most %lld tokens (%s)\n", c.sentence.pooling_name().c_str(),
                    c.sentence.normalize ? ", L2-normalised" : "",
                    (long long)(c.sentence.max_seq_length > 0 ? c.sentence.max_seq_length : c.max_positions),
                    c.sentence.source.c_str());
    std::printf("parameters     %lld (%.2f MB as held)\n\n", (long long)s.parameter_count, s.parameter_bytes / 1e6);
    std::printf("%-48s %-10s %-16s %5s %12s\n", "layer", "kind", "weight", "bias", "parameters");
    for (const auto& l : s.layers)
        std::printf("%-48s %-10s %-16s %5s %12lld\n", l.name.c_str(), l.kind.c_str(), shape_string(l.weight_shape).c_str(),
                    l.has_bias ? "yes" : "no", (long long)l.parameters);
    return 0;
}

}  // namespace

Command inspect_command() {
    return Command{"inspect", kUsage, "show a model's architecture, layers, shapes and parameter counts", run};
}

}  // namespace ql::cli
