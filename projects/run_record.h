// SPDX-License-Identifier: GPL-3.0-or-later
// A run: one calibration, PTQ, QAT, QAD, eval, sensitivity or export job, as the project file
// records it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace ql::projects {

// created → running → completed | failed | cancelled; a run whose writer died while running
// becomes interrupted at the next read-write open. interrupted or cancelled runs may be resumed
// (running again); completed and failed ones are final.
enum class RunStatus { Created, Running, Completed, Failed, Cancelled, Interrupted };

std::string_view to_string(RunStatus status);
// Throws UserError for a word that is not one of the six statuses.
RunStatus parse_run_status(std::string_view text);

// What the caller decides when it creates a run.
struct RunSpec {
    std::string kind;                       // "ptq", "qat", "qad", "calibrate", "eval", "export" …
    std::string name;                       // free text for people, may be empty
    std::optional<std::int64_t> model_id;   // models.id in the same project
    std::optional<std::int64_t> recipe_id;  // recipes.id in the same project
    std::string config_json = "{}";         // the job's config (a JSON object), for re-running
    std::optional<std::int64_t> seed;
};

struct RunRecord {
    std::int64_t id = 0;
    std::string kind;
    std::string name;
    RunStatus status = RunStatus::Created;
    std::optional<std::int64_t> model_id;
    std::optional<std::int64_t> recipe_id;
    std::string config_json = "{}";
    std::optional<std::int64_t> seed;
    std::string host;              // where it was created / last written
    std::string quantlab_version;  // of the QuantLab that created it
    double created_at = 0.0;       // Unix seconds (UTC), as all times here
    std::optional<double> started_at;
    std::optional<double> ended_at;
    std::optional<double> heartbeat_at;    // the writer's last flush
    std::optional<std::int64_t> writer_pid;
    std::string message;           // why it failed / was interrupted, or a closing remark
    // Computed when read, for status == Running: false when its writer is gone (the file was
    // opened read-only, so it could not be marked interrupted yet).
    bool writer_alive = false;
};

// The stable JSON form used by `quantlab-cli project runs --json` (docs/PROJECT_FILES.md).
void to_json(nlohmann::json& out, const RunRecord& run);

}  // namespace ql::projects
