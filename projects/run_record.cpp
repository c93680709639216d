// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/run_record.h"

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"

namespace ql::projects {

std::string_view to_string(RunStatus status) {
    switch (status) {
    case RunStatus::Created: return "created";
    case RunStatus::Running: return "running";
    case RunStatus::Completed: return "completed";
    case RunStatus::Failed: return "failed";
    case RunStatus::Cancelled: return "cancelled";
    case RunStatus::Interrupted: return "interrupted";
    }
    return "unknown";
}

RunStatus parse_run_status(std::string_view text) {
    for (RunStatus s : {RunStatus::Created, RunStatus::Running, RunStatus::Completed, RunStatus::Failed,
                        RunStatus::Cancelled, RunStatus::Interrupted})
        if (to_string(s) == text) return s;
    throw UserError("unknown run status '" + std::string(text) +
                    "' (expected created, running, completed, failed, cancelled or interrupted)");
}

void to_json(nlohmann::json& out, const RunRecord& run) {
    auto optional = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
    nlohmann::json config = nlohmann::json::parse(run.config_json, nullptr, false);
    out = nlohmann::json{
        {"id", run.id},
        {"kind", run.kind},
        {"name", run.name},
        {"status", std::string(to_string(run.status))},
        {"writer_alive", run.status == RunStatus::Running && run.writer_alive},
        {"model_id", optional(run.model_id)},
        {"recipe_id", optional(run.recipe_id)},
        {"config", config.is_discarded() ? nlohmann::json(run.config_json) : config},
        {"seed", optional(run.seed)},
        {"host", run.host},
        {"quantlab_version", run.quantlab_version},
        {"created_at", run.created_at},
        {"started_at", optional(run.started_at)},
        {"ended_at", optional(run.ended_at)},
        {"heartbeat_at", optional(run.heartbeat_at)},
        {"message", run.message},
    };
}

}  // namespace ql::projects
