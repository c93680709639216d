// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/gguf_export.h"

#include <ATen/Functions.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/core/format_catalog.h"
#include "engine/export/gguf_encode.h"
#include "engine/export/gguf_model_metadata.h"
#include "engine/export/gguf_names.h"
#include "engine/export/gguf_tensor_writer.h"
#include "engine/export/gguf_tokenizer_metadata.h"
#include "engine/export/gguf_type_mix.h"
#include "engine/formats/format_codec.h"
#include "engine/io/atomic_file.h"
#include "engine/io/file_bytes.h"
#include "engine/io/gguf_decode.h"
#include "engine/io/imatrix_file.h"
#include "engine/loading/model_source.h"
#include "engine/quant/plain_weights.h"
#include "engine/quant/quantized_model.h"
#include "engine/core/string_suffix.h"

namespace ql {

std::vector<std::string> gguf_export_types() {
    std::vector<std::string> out;
    for (const GgufFileType& t : gguf_file_types()) out.push_back(t.name);
    out.push_back("mxfp4");
    return out;
}

namespace {


// The GGUF type a recipe format stores exactly (gguf_q4_k -> Q4_K), if any.
std::optional<GgmlType> recipe_gguf_type(const QuantSpec& spec) {
    if (!spec.info) return std::nullopt;
    return gguf_type_of_format(spec.info->name);
}

std::string model_display_name(const OpenedModel& m) {
    if (!m.model->config().name.empty()) return m.model->config().name;
    return std::filesystem::path(m.path).stem().string();
}

// convert_hf_to_gguf.py keeps these F32 whatever the output type: 1-D tensors, norms, GPT-2's
// learned positions (POS_EMBD), BERT's token types (TOKEN_TYPES), anything not a ".weight".
bool stays_f32(const std::string& gguf_name, const std::vector<int64_t>& ne) {
    int dims = 1;
    for (int i = static_cast<int>(ne.size()) - 1; i >= 1; --i)
        if (ne[static_cast<size_t>(i)] > 1) {
            dims = i + 1;
            break;
        }
    return dims <= 1 || ends_with(gguf_name, "_norm.weight") || gguf_name == "position_embd.weight" ||
           gguf_name == "token_types.weight" || !ends_with(gguf_name, ".weight");
}

GgmlType parse_source_precision(const std::string& s, const GgufFileType& ft) {
    if (s.empty()) return ggml_type_is_quantized(ft.base) ? GgmlType::F16 : ft.base;
    if (s == "f16") return GgmlType::F16;
    if (s == "bf16") return GgmlType::BF16;
    if (s == "f32") return GgmlType::F32;
    throw UserError("GGUF export: --gguf-source must be f16, bf16 or f32, got '" + s + "'");
}

at::Tensor round_to(const at::Tensor& x, GgmlType precision) {
    if (precision == GgmlType::F16) return x.to(at::kHalf).to(at::kFloat);      // round to nearest even
    if (precision == GgmlType::BF16) return x.to(at::kBFloat16).to(at::kFloat);  // round to nearest even
    return x;
}

std::vector<GgufTypeOverride> parse_overrides(const std::vector<std::string>& specs) {
    std::vector<GgufTypeOverride> out;
    for (const std::string& s : specs) {
        const size_t eq = s.find('=');
        if (eq == std::string::npos) throw UserError("--tensor-type '" + s + "': expected REGEX=TYPE");
        if (eq == 0) throw UserError("--tensor-type '" + s + "': missing tensor name pattern");
        if (eq + 1 == s.size()) throw UserError("--tensor-type '" + s + "': missing type");
        out.push_back({s.substr(0, eq), parse_gguf_tensor_type(s.substr(eq + 1), "--tensor-type '" + s + "'")});
    }
    return out;
}

// One tensor the file will hold, before its type is chosen.
struct SourceTensor {
    std::string name, source;
    std::vector<int64_t> ne;
    GgmlType source_type = GgmlType::F32;       // as llama-quantize's input file would hold it
    std::function<at::Tensor()> values;         // float32 in file row order
    LayerQuantizer* quantizer = nullptr;        // a checkpoint layer's configured weight quantizer
    std::optional<GgmlType> recipe_type;        // its format, when it is a GGUF type
    std::function<at::Tensor()> fp_values;      // a recipe GGUF layer: the FP weight its quantizer rounds (file rows)
    const GgufTensorInfo* gguf = nullptr;       // a GGUF source's tensor
};

}  // namespace

GgufExportResult export_gguf(const std::string& model_arg, const std::string& out_file, const GgufExportOptions& options,
                             JobSink& sink, const CancellationToken& cancel) {
    const auto start = std::chrono::steady_clock::now();
    GgufMixOptions mix;
    mix.file_type = options.type;
    mix.pure = options.pure;
    if (options.type == "mxfp4") {  // every matrix MXFP4
        mix.file_type = "mxfp4_moe";
        mix.pure = true;
    }
    const GgufFileType* ft = find_gguf_file_type(mix.file_type);
    if (!ft) {
        std::string list;
        for (const auto& t : gguf_export_types()) list += (list.empty() ? "" : ", ") + t;
        throw UserError("GGUF export: unknown type '" + options.type + "' (expected one of " + list + ")");
    }
    mix.overrides = parse_overrides(options.tensor_types);
    if (!options.output_tensor_type.empty())
        mix.output_tensor_type = parse_gguf_tensor_type(options.output_tensor_type, "--output-tensor-type");
    if (!options.token_embedding_type.empty())
        mix.token_embedding_type = parse_gguf_tensor_type(options.token_embedding_type, "--token-embedding-type");
    const GgmlType precision = parse_source_precision(options.source_precision, *ft);
    // Refuse an existing file before the (slow) model load.
    if (!options.dry_run)
        if (std::error_code ec; std::filesystem::exists(out_file, ec) && !options.force)
            throw UserError(out_file + ": already exists (use --force to overwrite it)");
    std::optional<ImportanceMatrix> imatrix;
    if (!options.imatrix.empty()) {
        imatrix = read_imatrix(options.imatrix);
        for (const ImportanceEntry& e : imatrix->entries)
            for (double v : e.sum_sq)
                if (!std::isfinite(v)) throw UserError(options.imatrix + ": entry '" + e.name + "' holds a non-finite value");
        mix.has_imatrix = true;
    }

    sink.progress(0, 0, "load");
    OpenedModel opened = open_model(model_arg);
    const ModelConfig& config = opened.model->config();
    GgufExportResult result;
    result.architecture = gguf_architecture(config);
    result.type = options.type;
    result.file_type = ft->id;
    result.source_precision = opened.gguf ? "f32" : ggml_type_name(precision);
    for (char& c : result.source_precision) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    result.imatrix = options.imatrix;
    result.path = options.dry_run ? "" : out_file;
    result.dry_run = options.dry_run;
    result.from_checkpoint = opened.quantization != nullptr;
    result.from_gguf = opened.gguf != nullptr;

    QuantizedModel* quantization = opened.quantization.get();
    if (quantization) {
        if (const std::string why = plain_weights_refusal(*quantization); !why.empty())
            throw UserError("GGUF export: " + why + "; export --as fakequant (the rotations folded into the weights)");
        for (const auto& kv : quantization->kv_caches())
            if (kv->configured() && kv->enabled()) {
                result.warnings.push_back("the KV-cache quantization (" + kv->settings().describe() +
                                          ") is not written: llama.cpp chooses its cache type at run time (--cache-type-k/v)");
                break;
            }
    }
    bool warned_inputs = false;
    // The quantizer of `layer` with a configured weight quantizer, or null.
    auto quantized_layer = [&](const std::string& layer) -> LayerQuantizer* {
        if (!quantization) return nullptr;
        LayerQuantizer* lq = quantization->find(layer);
        if (lq && lq->input_configured() && !warned_inputs) {
            warned_inputs = true;
            result.warnings.push_back("activation quantizers are not written: llama.cpp quantizes activations itself");
        }
        if (!lq || !lq->weight_configured()) return nullptr;
        if (lq->pre_quant_scale().defined())
            throw UserError("GGUF export: layer '" + layer + "' has a pre_quant_scale (AWQ / SmoothQuant smoothing not folded "
                            "into the weights): GGUF has no per-input-channel scale, the file could not reproduce the model");
        return lq;
    };

    std::vector<SourceTensor> sources;
    auto float_source = [&](const std::string& name, const std::vector<int64_t>& ne) {
        return stays_f32(name, ne) ? GgmlType::F32 : precision;
    };
    std::map<std::string, const GgufParameterSource*> file_tensors;
    if (opened.gguf)
        for (const GgufParameterSource& p : opened.gguf->parameters) file_tensors[p.parameter] = &p;
    for (const auto& [hf_name, tensor] : opened.model->named_parameters()) {
        const auto mapped = gguf_tensor_name(config, hf_name);
        if (!mapped) {
            result.warnings.push_back("parameter '" + hf_name + "' has no llama.cpp tensor and is not written");
            continue;
        }
        SourceTensor s;
        s.name = mapped->name;
        s.source = hf_name;
        s.ne.assign(tensor.sizes().rbegin(), tensor.sizes().rend());
        const bool is_weight = ends_with(hf_name, ".weight");
        if (is_weight && tensor.dim() == 2) s.quantizer = quantized_layer(hf_name.substr(0, hf_name.size() - 7));
        if (s.quantizer) s.recipe_type = recipe_gguf_type(s.quantizer->weight_spec());
        const int64_t heads = mapped->permutation == GgufRowPermutation::Query ? config.num_heads
                              : mapped->permutation == GgufRowPermutation::Key ? config.num_kv_heads
                                                                                : 0;
        if (const auto it = file_tensors.find(hf_name); it != file_tensors.end()) {
            s.gguf = it->second->tensor;
            s.source_type = s.gguf->type;
            const GgufFile* file = opened.gguf->file.get();
            const GgufTensorInfo* t = s.gguf;
            s.values = [file, t]() {
                const std::vector<float> v = file->dequantize(*t);  // rows as the file holds them
                return at::tensor(at::ArrayRef<float>(v));
            };
        } else {
            s.source_type = s.quantizer ? GgmlType::F32 : float_source(s.name, s.ne);
            at::Tensor param = tensor;
            LayerQuantizer* lq = s.quantizer;
            s.values = [param, lq, heads]() {
                at::Tensor w = (lq ? lq->quantized_weight() : param).detach().to(at::kFloat);
                w = heads ? gguf_permute_rows(w, heads) : w.contiguous();
                // Written once: a weight kept as stored (a mapped BF16 file) need not stay
                // resident, so exporting a model larger than memory streams through it.
                if (!lq && param.device().is_cpu()) release_mapped_pages(param.data_ptr(), param.nbytes());
                return w;
            };
            if (lq && s.recipe_type)
                s.fp_values = [lq, heads]() {
                    at::Tensor w = lq->layer().weight.detach().to(at::kFloat);
                    return heads ? gguf_permute_rows(w, heads) : w.contiguous();
                };
        }
        sources.push_back(std::move(s));
    }
    // A tied lm_head that a checkpoint quantized differs from token_embd: write it as output.
    if (config.tie_embeddings && quantization) {
        if (LayerQuantizer* lq = quantized_layer("lm_head")) {
            SourceTensor s;
            s.name = "output.weight";
            s.source = "lm_head";
            const at::Tensor w = lq->layer().weight;
            s.ne.assign(w.sizes().rbegin(), w.sizes().rend());
            s.quantizer = lq;
            s.recipe_type = recipe_gguf_type(lq->weight_spec());
            s.values = [lq]() { return lq->quantized_weight().detach().to(at::kFloat).contiguous(); };
            sources.push_back(std::move(s));
        }
    }
    if (config.rope_scaling.type == "llama3") {
        const std::vector<float> f = gguf_llama3_rope_factors(config);
        SourceTensor s;
        s.name = "rope_freqs.weight";
        s.source = "rope_scaling (llama3)";
        s.ne = {static_cast<int64_t>(f.size())};
        s.values = [f]() { return at::tensor(at::ArrayRef<float>(f)); };
        sources.push_back(std::move(s));
    }

    // The types: llama.cpp's rules over the tensors in its order; recipe formats override.
    GgufMixModel mm;
    mm.architecture = result.architecture;
    mm.n_layer = config.num_layers;
    mm.n_head = config.num_heads;
    mm.n_head_kv = config.num_kv_heads;
    std::vector<GgufMixTensor> mix_tensors;
    for (const SourceTensor& s : sources) mix_tensors.push_back({s.name, s.ne, s.source_type});
    const std::vector<GgufTensorChoice> plan = plan_gguf_types(mm, mix_tensors, mix);
    std::map<std::string, const SourceTensor*> by_name;
    for (const SourceTensor& s : sources) by_name[s.name] = &s;

    std::vector<GgufTensorPlan> plans;
    bool warned_requantize = false;
    for (const GgufTensorChoice& ch : plan) {
        const SourceTensor& s = *by_name.at(ch.name);
        GgufExportTensor row;
        row.name = ch.name;
        row.source = s.source;
        row.ne = ch.ne;
        row.from_quantized = s.quantizer != nullptr;
        GgmlType type = ch.type;
        GgmlType requested = ch.rule_type;
        row.rule = ch.rule;
        row.fallback = ch.fallback;
        if (s.quantizer && s.recipe_type) {
            requested = *s.recipe_type;
            row.rule = "recipe " + s.quantizer->weight_spec().info->name +
                       (*s.recipe_type != ch.rule_type ? std::string(" (the ") + ft->name + " rules give " + ggml_type_name(ch.rule_type) + ")" : "");
            row.fallback.clear();
            type = gguf_shape_fallback(ch.ne[0], requested, row.fallback);
        } else if (s.quantizer && !warned_requantize && ggml_type_is_quantized(type)) {
            warned_requantize = true;
            result.warnings.push_back("recipe format '" + (s.quantizer->weight_spec().info ? s.quantizer->weight_spec().info->name : std::string("?")) +
                                      "' has no GGUF form: re-quantized to the " + ft->name + " types (a second rounding)");
        }
        row.type = ggml_type_name(type);
        row.requested = ggml_type_name(requested);
        if (!row.fallback.empty()) result.fallbacks.push_back(ch.name + ": " + row.fallback);

        GgufTensorPlan p;
        p.name = ch.name;
        p.ne = ch.ne;
        p.type = type;
        if (s.gguf && s.gguf->type == type) {
            p.copy_from = opened.gguf->file->tensor_data(*s.gguf);
            row.copied = true;
        } else {
            const GgmlType round = s.gguf || s.quantizer ? GgmlType::F32 : s.source_type;
            auto values = s.values;
            p.values = [values, round]() { return round_to(values(), round); };
        }
        if (imatrix && ch.quantized && ggml_type_is_quantized(type) && !row.copied) {
            if (const ImportanceEntry* e = imatrix->find(ch.name)) {
                const int64_t experts = ch.ne.size() > 2 ? ch.ne[2] : 1;
                if (e->columns * e->matrices() != ch.ne[0] * experts) {
                    if (ch.name != "token_embd.weight")  // llama-quantize only warns for token_embd
                        throw UserError(options.imatrix + ": entry '" + ch.name + "' has " + std::to_string(e->columns * e->matrices()) +
                                        " values, the tensor needs " + std::to_string(ch.ne[0] * experts));
                } else {
                    for (int64_t x = 0; x < e->matrices(); ++x) {
                        const std::vector<float> w = e->mean_sq(x);
                        p.importance.insert(p.importance.end(), w.begin(), w.end());
                    }
                    row.importance = true;
                }
            }
        }
        // llama-quantize: "Missing importance matrix for tensor ... in a very low-bit quantization".
        const bool recipe_own = s.quantizer && s.recipe_type && type == *s.recipe_type;
        if (ch.requires_imatrix && ggml_type_is_quantized(type) && !row.copied && !row.importance && !recipe_own)
            throw UserError("GGUF export: " + options.imatrix + " has no entry for tensor " + ch.name + ", whose type " +
                            ggml_type_name(type) + " needs one (llama-quantize refuses such very low-bit tensors too)");
        if (s.quantizer && s.recipe_type && type == *s.recipe_type) {
            // The recipe's own quantization, whose bytes must decode to QuantLab's quantized values
            // exactly: the FP weight its quantizer rounds, encoded with the importance it used, by
            // the same search; else (a checkpoint that kept its values but not the importance)
            // the quantized values re-encoded -- each checked by decoding, since the K-quant
            // searches are not idempotent on their own output. Neither reproducing is an error.
            const std::vector<float> imp = s.quantizer->weight_spec().importance;
            row.importance = !imp.empty();
            auto fp = s.fp_values, quantized = s.values;
            const std::string name = ch.name;
            const int64_t cols = ch.ne[0];
            p.encode = [fp, quantized, imp, name, cols, type](uint8_t* out, uint64_t) {
                const at::Tensor want = quantized().contiguous();
                const int64_t rows = want.numel() / cols;
                std::vector<float> got(static_cast<size_t>(want.numel()));
                auto reproduces = [&](const at::Tensor& x, const float* importance) {
                    encode_gguf_tensor(x.data_ptr<float>(), rows, cols, type, out, importance);
                    decode_gguf_tensor(out, rows, cols, type, got.data(), "GGUF export: tensor '" + name + "'");
                    return std::memcmp(got.data(), want.data_ptr<float>(), got.size() * 4) == 0;
                };
                if (reproduces(fp().contiguous(), imp.empty() ? nullptr : imp.data())) return;
                if (reproduces(want, imp.empty() ? nullptr : imp.data())) return;
                if (!imp.empty() && reproduces(want, nullptr)) return;
                throw UserError("GGUF export: tensor '" + name + "': no " + ggml_type_name(type) +
                                " encoding decodes to the checkpoint's quantized weight (a weight changed after quantization?); "
                                "the file would differ from the quantized model");
            };
        }
        row.bytes = *ggml_tensor_bytes(type, ch.ne);
        int64_t numel = 1;
        for (int64_t d : ch.ne) numel *= d;
        result.parameters += static_cast<uint64_t>(numel);
        result.bytes += row.bytes;
        result.tensors.push_back(std::move(row));
        plans.push_back(std::move(p));
    }
    result.bits_per_weight = result.parameters ? 8.0 * static_cast<double>(result.bytes) / static_cast<double>(result.parameters) : 0;
    for (const std::string& f : result.fallbacks) result.warnings.push_back("fallback: " + f);
    if (options.strict && !result.fallbacks.empty()) {
        std::string list;
        for (size_t k = 0; k < result.fallbacks.size() && k < 8; ++k) list += (k ? "; " : "") + result.fallbacks[k];
        if (result.fallbacks.size() > 8) list += "; ... (" + std::to_string(result.fallbacks.size()) + " in all)";
        throw UserError("GGUF export --strict: " + std::to_string(result.fallbacks.size()) +
                        " tensor(s) would not get the type asked for: " + list);
    }
    if (options.dry_run) {
        result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return result;
    }

    // Metadata: the model's, the tokenizer's (a GGUF source keeps its own), the file type, and
    // what llama-quantize records about an imatrix (tools/quantize/quantize.cpp).
    GgufModelMetadata model_md = gguf_model_metadata(config, model_display_name(opened), GgmlType::F32);
    GgufMetadata metadata;
    for (auto& [k, v] : model_md.metadata)
        metadata.emplace_back(k, k == "general.file_type" ? GgufValue::u32(ft->id) : v);
    result.warnings.insert(result.warnings.end(), model_md.warnings.begin(), model_md.warnings.end());
    if (opened.gguf) {
        result.tokenizer_source = "gguf";
        for (const auto& [k, v] : opened.gguf->file->metadata())
            if (k.rfind("tokenizer.", 0) == 0) metadata.emplace_back(k, v);
    } else {
        GgufTokenizerMetadata tok_md = gguf_tokenizer_metadata(opened.path, config.vocab_size);
        result.tokenizer_source = tok_md.source;
        result.warnings.insert(result.warnings.end(), tok_md.warnings.begin(), tok_md.warnings.end());
        metadata.insert(metadata.end(), tok_md.metadata.begin(), tok_md.metadata.end());
    }
    if (imatrix) {
        metadata.emplace_back("quantize.imatrix.file", GgufValue::string(options.imatrix));
        if (!imatrix->datasets.empty()) metadata.emplace_back("quantize.imatrix.dataset", GgufValue::string(imatrix->datasets.front()));
        metadata.emplace_back("quantize.imatrix.entries_count", GgufValue::u32(static_cast<uint32_t>(imatrix->entries.size())));
        if (imatrix->chunk_count > 0)
            metadata.emplace_back("quantize.imatrix.chunks_count", GgufValue::u32(static_cast<uint32_t>(imatrix->chunk_count)));
    }

    for (const auto& w : result.warnings) sink.log(LogLevel::Warning, "GGUF export: " + w);
    result.bytes = write_gguf_tensors(out_file, metadata, plans, options.force, sink, cancel, "export");
    // The plan beside the file, so that the Export Doctor (doctor_gguf.cpp "gguf-plan") checks
    // the types in the file against what was planned and listed, now and after any later copy.
    nlohmann::ordered_json plan_json;
    plan_json["file_type"] = options.type;
    plan_json["tensors"] = nlohmann::ordered_json::object();
    for (const GgufExportTensor& t : result.tensors) plan_json["tensors"][t.name] = t.type;
    result.plan_path = gguf_plan_path(out_file);
    write_file_atomically(result.plan_path, plan_json.dump(2) + "\n");
    sink.artifact("gguf", out_file);
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

}  // namespace ql
