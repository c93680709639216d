// SPDX-License-Identifier: GPL-3.0-or-later
// The project file's schema as a list of forward steps. A file records the last step applied in
// PRAGMA user_version; opening it read-write applies the missing steps, all of them in ONE
// transaction (as qBittorrent's dbresumedatastorage.cpp does), so a file is always at exactly
// one known version. Steps are only ever appended: never edit a released one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace ql::projects {

class Connection;

// PRAGMA application_id of every .qlab file: "QLAB" in ASCII, so `file(1)` and our open()
// can tell a project from any other SQLite database.
inline constexpr std::int32_t kProjectApplicationId = 0x514C4142;

struct MigrationStep {
    int version;      // user_version after this step; steps are numbered 1, 2, 3 … without gaps
    const char* sql;  // statements that bring version-1 to version
};

// Every step of this build, oldest first.
const std::vector<MigrationStep>& schema_steps();
// The version this build writes and reads: the last step's.
int current_schema_version();

// Brings the file behind `connection` from its user_version up to steps.back().version in one
// IMMEDIATE transaction that also sets application_id and user_version; on any error nothing of
// it stays. When the file already had a schema (user_version > 0) and `backup` is not empty,
// the old file is first copied there with VACUUM INTO, so an older QuantLab can still open it.
// A file newer than `steps` is left untouched and reported as a UserError.
void migrate(Connection& connection, const std::vector<MigrationStep>& steps,
             const std::filesystem::path& backup = {});

}  // namespace ql::projects
