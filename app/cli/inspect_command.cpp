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
    "MODEL: an HF model folder (config.json + model.safetensors or a sharded index), a llama.cpp GGUF file\n"
    "(llama, qwen2, gpt2) or 'demo'.\n"
    "Prints the architecture, every quantizable layer (name, kind, weight shape, bias, parameters) and the\n"
    "parameter count; --json adds every parameter tensor (name, shape, dtype). For a GGUF file every tensor is\n"
    "listed with its GGUF type, and each layer with the file's own format and bits per weight.";

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
                              {"parameters", l.parameters},
                              {"weight_format", l.weight_format},
                              {"weight_bits", l.weight_bits},
                              {"weight_quantizer", l.weight_quantizer},
                              {"weight_fallback", l.weight_fallback}});
        nlohmann::json j = {{"path", s.path},
                                  {"demo", s.is_demo},
                                  {"architecture", s.config.architecture},
                                  {"model_type", s.config.model_type},
                                  {"config", config_json(s.config)},
                                  {"parameter_count", s.parameter_count},
                                  {"parameter_bytes", s.parameter_bytes},
                                  {"layers", layers},
                                  {"parameters", params},
                                  {"sentence_embedding", sentence_json(s.config)}};
        if (s.is_gguf) {
            nlohmann::json tensors = nlohmann::json::array();
            for (const auto& t : s.gguf.tensors)
                tensors.push_back({{"name", t.name},
                                   {"type", t.type},
                                   {"ne", t.ne},
                                   {"bytes", t.bytes},
                                   {"bits_per_weight", t.bits_per_weight},
                                   {"parameter", t.parameter.empty() ? nlohmann::json(nullptr) : nlohmann::json(t.parameter)}});
            j["gguf"] = {{"version", s.gguf.version},
                         {"alignment", s.gguf.alignment},
                         {"metadata_count", s.gguf.metadata_count},
                         {"file_type", s.gguf.file_type},
                         {"tokenizer", s.gguf.tokenizer},
                         {"warnings", s.gguf.warnings},
                         {"tensors", tensors}};
        }
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
    if (s.is_gguf) {
        std::printf("gguf           version %u, file type %s, tokenizer %s, %zu tensors\n", s.gguf.version,
                    s.gguf.file_type.empty() ? "?" : s.gguf.file_type.c_str(), s.gguf.tokenizer.empty() ? "none" : s.gguf.tokenizer.c_str(),
                    s.gguf.tensors.size());
        for (const auto& w : s.gguf.warnings) std::printf("note           %s\n", w.c_str());
        std::printf("\n");
    }
    std::printf("%-48s %-10s %-16s %5s %12s%s\n", "layer", "kind", "weight", "bias", "parameters", s.is_gguf ? "  file type     bits" : "");
    for (const auto& l : s.layers) {
        std::printf("%-48s %-10s %-16s %5s %12lld", l.name.c_str(), l.kind.c_str(), shape_string(l.weight_shape).c_str(),
                    l.has_bias ? "yes" : "no", (long long)l.parameters);
        if (s.is_gguf) std::printf("  %-12s %6.3f", l.weight_quantizer.c_str(), l.weight_bits);
        std::printf("\n");
    }
    if (s.is_gguf) {
        std::printf("\n%-40s %-8s %-16s %10s\n", "tensor", "type", "ne", "bits");
        for (const auto& t : s.gguf.tensors) {
            std::string ne;
            for (size_t i = 0; i < t.ne.size(); ++i) ne += (i ? "x" : "") + std::to_string(t.ne[i]);
            std::printf("%-40s %-8s %-16s %10.4f\n", t.name.c_str(), t.type.c_str(), ne.c_str(), t.bits_per_weight);
        }
    }
    return 0;
}

}  // namespace

Command inspect_command() {
    return Command{"inspect", kUsage, "show a model's architecture, layers, shapes and parameter counts", run};
}

}  // namespace ql::cli
