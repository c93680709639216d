// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/loading/gguf_model.h"

#include <ATen/Functions.h>
#include <ATen/core/grad_mode.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/data/synthetic_tasks.h"
#include "engine/io/atomic_file.h"
#include "engine/io/gguf_decode.h"
#include "engine/models/hf_config_json.h"
#include "engine/loading/gguf_model_config.h"

namespace ql {

bool is_gguf_file(const std::string& path) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    std::ifstream in(path, std::ios::binary);
    char magic[4] = {};
    return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

const GgufParameterSource* GgufSource::weight_of(const std::string& layer) const {
    for (const GgufParameterSource& p : parameters)
        if (p.layer == layer && p.parameter == layer + ".weight") return &p;
    if (tied_embeddings && layer == "lm_head")
        for (const GgufParameterSource& p : parameters)
            if (p.tensor && p.tensor->name == "token_embd.weight") return &p;
    return nullptr;
}

namespace {

std::string ggml_ne_text(const std::vector<int64_t>& ne) {
    std::string s = "[";
    for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
    return s + "]";
}

}  // namespace

std::vector<std::string> write_gguf_text_files(const GgufVocabulary& v, int64_t max_positions, const std::string& folder) {
    std::vector<std::string> written;
    if (!v.tokenizer_json) return written;
    using ConversionJson = nlohmann::ordered_json;
    auto write_text = [&](const std::string& name, const std::string& text) {
        write_file_atomically(folder + "/" + name, text);
        written.push_back(name);
    };
    write_text("tokenizer.json", *v.tokenizer_json);
    // The token strings as the rebuilt tokenizer spells them (byte-level: Ġ for a space).
    const nlohmann::json tok = nlohmann::json::parse(*v.tokenizer_json);  // not ordered: 49152 keys
    auto token_of = [&](const std::optional<int32_t>& id) -> ConversionJson {
        if (!id) return nullptr;
        for (const nlohmann::json& a : tok["added_tokens"])
            if (a["id"] == *id) return a["content"];
        for (const auto& [text, index] : tok["model"]["vocab"].items())
            if (index == *id) return text;
        return nullptr;
    };
    ConversionJson config = {{"tokenizer_class", "PreTrainedTokenizerFast"},
                   {"bos_token", token_of(v.bos_id)},
                   {"eos_token", token_of(v.eos_id)},
                   {"add_bos_token", v.add_bos},
                   {"clean_up_tokenization_spaces", false},
                   {"model_max_length", max_positions}};
    write_text("tokenizer_config.json", config.dump(2) + "\n");
    if (v.chat_template) write_text("chat_template.jinja", *v.chat_template);
    ConversionJson generation = {{"bos_token_id", v.bos_id ? ConversionJson(*v.bos_id) : ConversionJson(nullptr)}};
    ConversionJson ends = ConversionJson::array();
    for (const auto& id : {v.eos_id, v.eot_id, v.eom_id})
        if (id && std::find(ends.begin(), ends.end(), ConversionJson(*id)) == ends.end()) ends.push_back(*id);
    generation["eos_token_id"] = ends.size() == 1 ? ends[0] : ends;
    write_text("generation_config.json", generation.dump(2) + "\n");
    return written;
}

void write_gguf_model_files(const ModelConfig& config, const GgufSource& source, const std::string& folder) {
    const GgufVocabulary& v = source.vocabulary;
    write_file_atomically(folder + "/config.json", hf_config_json(config, v.bos_id, v.eos_id));
    write_gguf_text_files(v, config.max_positions, folder);
    if (v.is_demo) {
        nlohmann::json tokens = nlohmann::json::array();
        for (int64_t i = 0; i < synthetic_vocab::kSize; ++i) tokens.push_back(synthetic_vocab::token_text(i));
        write_file_atomically(folder + "/quantlab.json",
                              nlohmann::json({{"vocabulary", "quantlab-synthetic-v1"}, {"tokens", tokens}}).dump(2) + "\n");
    }
}

GgufModel load_gguf_model(const std::string& path) {
    GgufModel g;
    GgufSource& s = g.source;
    s.file = std::make_shared<const GgufFile>(GgufFile::open(path));
    const GgufFile& f = *s.file;
    const ModelConfig config = gguf_model_config(f);
    s.tied_embeddings = config.tie_embeddings;
    s.vocabulary = gguf_vocabulary(f);
    s.warnings = s.vocabulary.warnings;
    if (s.vocabulary.token_count > config.vocab_size)
        throw UserError(path + ": metadata 'tokenizer.ggml.tokens': " + std::to_string(s.vocabulary.token_count) +
                        " tokens but the model's embedding has " + std::to_string(config.vocab_size) + " rows");
    g.model = create_model_uninitialised(config);

    at::NoGradGuard no_grad;
    std::set<std::string> used;
    for (auto& [hf_name, param] : g.model->named_parameters()) {
        const auto mapped = gguf_tensor_name(config, hf_name);
        if (!mapped) throw UserError(path + ": parameter '" + hf_name + "' of a " + config.architecture + " model has no GGUF tensor");
        const GgufTensorInfo* t = f.find_tensor(mapped->name);
        if (!t) throw UserError(path + ": tensor '" + mapped->name + "' is missing (the model's " + hf_name + ")");
        const std::vector<int64_t> ne(param.sizes().rbegin(), param.sizes().rend());
        if (t->ne != ne)
            throw UserError(path + ": tensor '" + mapped->name + "': dimensions " + ggml_ne_text(t->ne) + ", expected " +
                            ggml_ne_text(ne) + " for the model the metadata describes");
        std::vector<float> values(static_cast<size_t>(t->numel()));
        decode_gguf_tensor(f.tensor_data(*t), t->numel() / t->ne[0], t->ne[0], t->type, values.data(),
                           path + ": tensor '" + t->name + "'");
        for (size_t k = 0; k < values.size(); ++k)
            if (!std::isfinite(values[k]))
                throw UserError(path + ": tensor '" + t->name + "': non-finite value " + std::to_string(values[k]) + " at element " +
                                std::to_string(k));
        at::Tensor w = at::from_blob(values.data(), param.sizes(), at::TensorOptions().dtype(at::kFloat));
        const int64_t heads = mapped->permutation == GgufRowPermutation::Query ? config.num_heads
                              : mapped->permutation == GgufRowPermutation::Key ? config.num_kv_heads
                                                                                : 0;
        if (heads) w = gguf_unpermute_rows(w, heads);
        param.copy_(w);
        used.insert(t->name);
        GgufParameterSource src;
        src.parameter = hf_name;
        const bool is_weight = hf_name.size() > 7 && hf_name.compare(hf_name.size() - 7, 7, ".weight") == 0;
        if (is_weight && g.model->find_layer(hf_name.substr(0, hf_name.size() - 7)))
            src.layer = hf_name.substr(0, hf_name.size() - 7);
        src.tensor = t;
        src.permutation = mapped->permutation;
        s.parameters.push_back(src);
    }
    for (const GgufTensorInfo& t : f.tensors())
        if (!used.count(t.name))
            throw UserError(path + ": tensor '" + t.name + "' is not part of a " + config.architecture +
                            " model as QuantLab reads it (unexpected tensor)");
    // Weights that come quantized already lie on their format's grid: say so wherever the model
    // is listed, since a zero error from a quantizer of the same kind proves nothing here.
    std::map<std::string, int64_t> quantized;
    for (const GgufParameterSource& p : s.parameters)
        if (ggml_type_is_quantized(p.tensor->type)) ++quantized[ggml_type_name(p.tensor->type)];
    if (!quantized.empty()) {
        std::string types;
        for (const auto& [name, count] : quantized) types += (types.empty() ? "" : ", ") + std::to_string(count) + " " + name;
        s.warnings.push_back(path + ": the weights come quantized (" + types +
                             " tensors): they already lie on those grids, and the full-precision model here is the file "
                             "decoded exactly; quantizing them again to a format of the same kind (e.g. asymmetric 4-bit "
                             "groups of 32 for Q4_1) gives zero error, which proves nothing");
    }
    return g;
}

}  // namespace ql
