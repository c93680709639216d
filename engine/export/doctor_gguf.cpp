// SPDX-License-Identifier: GPL-3.0-or-later
// The Export Doctor's checks of a GGUF file, as llama.cpp loads it: the file opens and validates
// (engine/io/gguf_file.h), every matrix has the type general.file_type announces unless a plan
// says otherwise (a different type is a silent fallback: llama.cpp runs that tensor at another
// precision and size than the user asked for), and, where a plan file lies beside it, each
// tensor's type is the planned one. Kept small and pluggable: the plan is read by
// read_gguf_plan() alone, from "<file>.plan.json" = {"tensors": {"<gguf tensor name>": "<type>"}}
// (type names as ggml_type_name or lower case: "Q4_K", "q4_k", "F16"); `export --as gguf` writes
// it beside every file (engine/export/gguf_export.h gguf_plan_path()).
#include <cctype>
#include <filesystem>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/export/doctor_context.h"
#include "engine/export/gguf_export.h"
#include "engine/export/gguf_model_metadata.h"
#include "engine/io/gguf_file.h"
#include "engine/io/strict_json.h"
#include "engine/io/whole_file.h"

namespace ql {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string upper(std::string s) {
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
}

struct GgufPlan {
    std::string path;
    std::map<std::string, std::string> types;  // tensor -> upper-case type name
};

std::optional<GgufPlan> read_gguf_plan(const std::string& gguf_path, DoctorContext& ctx, const std::string& shown) {
    const std::string p = gguf_plan_path(gguf_path);
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) return std::nullopt;
    GgufPlan plan;
    plan.path = shown + ".plan.json";
    try {
        const std::string text = read_whole_file(p, "GGUF plan");
        const json j = parse_strict_json(text.data(), text.data() + text.size());
        if (!j.is_object() || !j.contains("tensors") || !j["tensors"].is_object()) throw UserError("tensors: expected an object");
        for (auto it = j["tensors"].begin(); it != j["tensors"].end(); ++it) {
            if (!it->is_string()) throw UserError("tensors." + it.key() + ": expected a type name");
            plan.types[it.key()] = upper(it->get<std::string>());
        }
    } catch (const std::exception& e) {
        ctx.error("gguf-plan", plan.path, std::string("unreadable: ") + e.what(), "", "write the plan again");
        return std::nullopt;
    }
    return plan;
}

// The type general.file_type stands for, by the exporter's own table (gguf_model_metadata.h).
std::optional<GgmlType> type_of_file_type(uint32_t ft) {
    for (uint32_t id = 0; id < 64; ++id) {
        const auto t = ggml_type_from_id(id);
        if (t && gguf_file_type(*t) == ft && !(ft == 0 && *t != GgmlType::F32)) return t;
    }
    return std::nullopt;
}

}  // namespace

void check_gguf_file(const std::string& disk_path, const std::string& shown, DoctorContext& ctx) {
    ctx.check("files", "the GGUF file opens and validates as llama.cpp reads it (header, metadata, tensor bounds)");
    ctx.check("gguf-types", "every matrix has the type general.file_type announces (no silent fallbacks)");
    ctx.check("gguf-plan", "every tensor has the type of the plan beside the file (<file>.plan.json)");
    std::optional<GgufFile> file;
    try {
        file = GgufFile::open(disk_path);
    } catch (const std::exception& e) {
        const std::string what = with_path_shown(e.what(), disk_path, shown);
        ctx.error("files", shown, what, "llama.cpp fails to load the file", "export it again");
        ctx.skipped("gguf-types", "the file does not open");
        ctx.skipped("gguf-plan", "the file does not open");
        return;
    }
    ctx.ran("files", std::to_string(file->tensors().size()) + " tensors");
    for (const char* key : {"general.architecture", "tokenizer.ggml.model"})
        if (!file->find(key))
            ctx.error("files", std::string("metadata ") + key, "missing", "llama.cpp fails to load the model", "export with the model's metadata");

    const std::optional<GgufPlan> plan = read_gguf_plan(disk_path, ctx, shown);
    std::optional<GgmlType> main;
    if (const GgufValue* ft = file->find("general.file_type")) {
        try {
            main = type_of_file_type(static_cast<uint32_t>(ft->as_uint("general.file_type")));
        } catch (const UserError&) {
        }
    }
    if (!main) {
        ctx.skipped("gguf-types", "general.file_type absent or not a type QuantLab knows");
    } else {
        int64_t fallbacks = 0;
        for (const GgufTensorInfo& t : file->tensors()) {
            if (t.ne.size() < 2 || t.type == *main) continue;
            if (plan && plan->types.count(t.name)) continue;  // planned types are checked below
            ++fallbacks;
            std::string why;
            const int64_t block = ggml_block_size(*main);
            if (block > 1 && t.ne[0] % block != 0)
                why = " (its rows of " + std::to_string(t.ne[0]) + " elements are not a multiple of " + ggml_type_name(*main) + "'s " +
                      std::to_string(block) + "-element block)";
            ctx.warning("gguf-types", t.name,
                        std::string("is ") + ggml_type_name(t.type) + " while general.file_type says " + ggml_type_name(*main) + why,
                        "llama.cpp runs this tensor at another precision and size than the file type promises (a silent fallback)",
                        "accept it knowingly (write a plan beside the file) or choose a type whose block fits");
        }
        ctx.ran("gguf-types", std::to_string(fallbacks) + " fallback(s) to another type than " + ggml_type_name(*main));
    }
    if (!plan) {
        ctx.skipped("gguf-plan", "no " + shown + ".plan.json beside the file");
        return;
    }
    int64_t checked = 0;
    for (const auto& [name, type] : plan->types) {
        const GgufTensorInfo* t = file->find_tensor(name);
        if (!t) {
            ctx.error("gguf-plan", name, "is planned as " + type + " but the file has no such tensor", "llama.cpp fails to load a model missing it",
                      "export again");
            continue;
        }
        ++checked;
        if (upper(ggml_type_name(t->type)) != type)
            ctx.error("gguf-plan", name, std::string("is ") + ggml_type_name(t->type) + ", the plan says " + type,
                      "llama.cpp runs it at another precision than planned", "export again with the plan");
    }
    ctx.ran("gguf-plan", std::to_string(checked) + " tensor(s) against " + plan->path);
}

}  // namespace ql
