// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/loading/gguf_conversion.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <algorithm>
#include <map>
#include <set>

#include "engine/core/errors.h"
#include "engine/io/atomic_file.h"
#include "engine/io/safetensors_tensors.h"
#include "engine/loading/gguf_model.h"
#include "engine/models/hf_config_json.h"

namespace ql {
namespace {

namespace fs = std::filesystem;
using ConversionJson = nlohmann::ordered_json;

// What a reader of the folder should know about where its weights came from.
std::string source_note(const std::string& gguf_path, const GgufFile& f, const GgufSource& s) {
    std::map<std::string, int64_t> types;
    for (const GgufParameterSource& p : s.parameters) ++types[ggml_type_name(p.tensor->type)];
    std::string type_list;
    for (const auto& [name, count] : types) type_list += (type_list.empty() ? "" : ", ") + std::to_string(count) + " " + name;
    std::string note = "# Converted by QuantLab from a GGUF file\n\n";
    note += "- File: `" + fs::path(gguf_path).filename().string() + "`\n";
    for (const char* key : {"general.name", "general.basename", "general.organization", "general.license",
                            "general.source.url", "general.source.huggingface.repository"})
        if (const GgufValue* v = f.find(key); v && v->type == GgufValueType::STRING) note += std::string("- ") + key + ": " + v->as_string(key) + "\n";
    note += "- Tensor types in the file: " + type_list + "\n\n";
    note += "The weights here are the file's values decoded exactly to float32. Where the file stored them quantized,\n"
            "they lie on that format's grid: quantizing them again to the same format reproduces them exactly, so a zero\n"
            "error from a quantizer of that kind (e.g. an asymmetric 4-bit group-32 quantizer for Q4_1) proves nothing.\n"
            "Any licence of the original weights applies to this folder too (see general.license above).\n";
    return note;
}

}  // namespace

GgufConversion convert_gguf_to_hf(const std::string& gguf_path, const std::string& out, bool force) {
    GgufModel g = load_gguf_model(gguf_path);
    const GgufVocabulary& v = g.source.vocabulary;
    if (!v.tokenizer_json)
        throw UserError(gguf_path + ": its vocabulary cannot be written as tokenizer.json" +
                        (v.warnings.empty() ? std::string() : " (" + v.warnings.front() + ")"));
    const GgufFile& f = *g.source.file;
    std::error_code ec;
    if (fs::exists(out, ec)) {
        if (!force) throw UserError(out + " already exists (pass --force to replace it)");
    }
    const fs::path partial = out + ".partial";
    fs::remove_all(partial, ec);
    if (!fs::create_directories(partial, ec) && ec) throw UserError("cannot create " + partial.string() + ": " + ec.message());
    GgufConversion r;
    r.folder = out;
    r.warnings = g.source.warnings;
    auto write = [&](const std::string& name, const std::string& text) {
        write_file_atomically((partial / name).string(), text);
        r.files.push_back(name);
    };
    try {
        write("config.json", hf_config_json(g.model->config(), v.bos_id, v.eos_id));
        write_safetensors((partial / "model.safetensors").string(), g.model->file_state(), {{"format", "pt"}});
        r.files.push_back("model.safetensors");
        for (const std::string& name : write_gguf_text_files(v, g.model->config().max_positions, partial.string()))
            r.files.push_back(name);
        write("SOURCE.md", source_note(gguf_path, f, g.source));
        if (fs::exists(out, ec)) fs::remove_all(out, ec);
        fs::rename(partial, out, ec);
        if (ec) throw UserError("cannot move " + partial.string() + " to " + out + ": " + ec.message());
    } catch (...) {
        fs::remove_all(partial, ec);
        throw;
    }
    return r;
}

}  // namespace ql
