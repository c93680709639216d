// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/training_checkpoint.h"

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/io/atomic_file.h"
#include "engine/io/safetensors_tensors.h"
#include "engine/io/strict_json.h"
#include "engine/io/whole_file.h"

namespace ql {
namespace fs = std::filesystem;
namespace {

constexpr const char* kState = "state.safetensors";
constexpr const char* kTrainer = "trainer_state.json";

bool complete(const fs::path& dir) {
    std::error_code ec;
    return fs::is_regular_file(dir / kTrainer, ec) && fs::is_regular_file(dir / kState, ec);
}

}  // namespace

void save_training_checkpoint(const std::string& folder, const std::vector<std::pair<std::string, at::Tensor>>& params,
                              const AdamW& optimizer, const TrainingCheckpointInfo& info) {
    const fs::path final_dir = fs::path(folder) / "checkpoint", partial = fs::path(folder) / "checkpoint.partial",
                   old = fs::path(folder) / "checkpoint.old";
    std::error_code ec;
    fs::remove_all(partial, ec);
    if (!fs::create_directories(partial, ec) && ec)
        throw UserError("cannot create " + partial.string() + ": " + ec.message());
    try {
        std::vector<std::pair<std::string, at::Tensor>> tensors;
        for (size_t i = 0; i < params.size(); ++i) {
            tensors.emplace_back("param." + params[i].first, params[i].second.detach());
            tensors.emplace_back("adam_m." + params[i].first, optimizer.first_moments()[i]);
            tensors.emplace_back("adam_v." + params[i].first, optimizer.second_moments()[i]);
        }
        write_safetensors((partial / kState).string(), tensors, {{"format", "quantlab-training"}});
        const nlohmann::json j = {{"format", "quantlab-training-checkpoint"},
                                  {"version", 1},
                                  {"step", info.step},
                                  {"optimizer_steps", optimizer.steps_taken()},
                                  {"config", info.config_json}};
        write_file_atomically((partial / kTrainer).string(), j.dump(2) + "\n");
        fs::remove_all(old, ec);
        if (fs::exists(final_dir, ec)) {
            fs::rename(final_dir, old, ec);
            if (ec) throw UserError("cannot move aside " + final_dir.string() + ": " + ec.message());
        }
        fs::rename(partial, final_dir, ec);
        if (ec) throw UserError("cannot rename " + partial.string() + ": " + ec.message());
        fs::remove_all(old, ec);
    } catch (...) {
        fs::remove_all(partial, ec);
        throw;
    }
}

std::optional<TrainingCheckpointInfo> load_training_checkpoint(const std::string& folder,
                                                               const std::vector<std::pair<std::string, at::Tensor>>& params,
                                                               AdamW& optimizer, const std::string& expected_config_json) {
    fs::path dir = fs::path(folder) / "checkpoint";
    // A crash between the two renames leaves the previous checkpoint as checkpoint.old.
    if (!complete(dir)) dir = fs::path(folder) / "checkpoint.old";
    if (!complete(dir)) return std::nullopt;
    const std::string trainer_path = (dir / kTrainer).string();
    const std::string text = read_whole_file(trainer_path, "training state");
    nlohmann::json j;
    try {
        j = parse_strict_json(text.data(), text.data() + text.size());
    } catch (const StrictJsonError& e) {
        throw UserError(trainer_path + ": not valid JSON: " + e.what());
    }
    if (!j.is_object() || j.value("format", "") != "quantlab-training-checkpoint" || !j.contains("step") ||
        !j["step"].is_number_integer() || !j.contains("optimizer_steps") || !j["optimizer_steps"].is_number_integer() ||
        !j.contains("config") || !j["config"].is_string())
        throw UserError(trainer_path + ": not a QuantLab training checkpoint (format, step, optimizer_steps, config)");
    if (j["config"].get<std::string>() != expected_config_json)
        throw UserError(trainer_path + ": the checkpoint belongs to a run with other settings; use another --out or "
                                       "the same settings to resume");
    const std::string state_path = (dir / kState).string();
    const SafetensorsFile file = SafetensorsFile::open(state_path);
    std::set<std::string> names;
    for (const std::string& n : file.names()) names.insert(n);
    std::vector<at::Tensor> values, m, v;
    auto take = [&](const std::string& name, const at::Tensor& like) {
        if (!names.count(name)) throw UserError(state_path + ": missing tensor '" + name + "'");
        names.erase(name);
        at::Tensor t = load_float32(file, name, /*require_finite=*/true);
        if (t.sizes() != like.sizes())
            throw UserError(state_path + ": tensor '" + name + "' has another shape than the model's parameter");
        return t;
    };
    for (const auto& [name, p] : params) {
        values.push_back(take("param." + name, p));
        m.push_back(take("adam_m." + name, p));
        v.push_back(take("adam_v." + name, p));
    }
    if (!names.empty()) throw UserError(state_path + ": unexpected tensor '" + *names.begin() + "'");
    {
        c10::NoGradGuard no_grad;
        for (size_t i = 0; i < params.size(); ++i) params[i].second.copy_(values[i]);
    }
    optimizer.restore(m, v, j["optimizer_steps"].get<int64_t>());
    return TrainingCheckpointInfo{j["step"].get<int64_t>(), j["config"].get<std::string>()};
}

}  // namespace ql
