// SPDX-License-Identifier: GPL-3.0-or-later
// The experiment rows of a project file (schema version 2, docs/PROJECT_FILES.md "experiments").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ql::projects {

struct ExperimentRecord {
    std::int64_t id = 0;
    std::string name;
    std::string identity_sha256;  // of the spec without replicates and prose (engine/experiments)
    std::string spec_json;        // the experiment as last run
    std::string manifests_json;   // a JSON array: one environment manifest per invocation
    double created_at = 0.0;
};

struct ExperimentRunRecord {
    std::int64_t experiment_id = 0;
    std::string cell;
    std::int64_t replicate = 0;
    std::int64_t seed = 0;
    std::optional<std::int64_t> run_id;   // the ordinary run that made it
    std::optional<std::int64_t> claim_pid;  // a process making it now (or that died doing so)
    std::optional<std::string> result_json;  // set once the run completed
    double updated_at = 0.0;
};

enum class ExperimentClaim { Claimed, Done, Taken };

}  // namespace ql::projects
