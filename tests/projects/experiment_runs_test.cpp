// SPDX-License-Identifier: GPL-3.0-or-later
// Experiments in a project file (schema version 2): a version-1 file upgrades with a backup, and
// claims let several real processes share a grid: a live claimant's run is Taken, a dead one's is
// taken over, a finished one is Done.
#include <gtest/gtest.h>

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "projects/project_file.h"
#include "projects/schema_migrations.h"
#include "tests/projects/test_support.h"

namespace ql::projects {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

TEST(ExperimentRuns, AVersionOneFileUpgradesWithABackupAndKeepsItsRuns) {
    TempDir dir;
    const fs::path file = dir / "old.qlab";
    {
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
        const std::string sql = std::string(schema_steps()[0].sql) + "PRAGMA application_id = " +
                                std::to_string(kProjectApplicationId) + "; PRAGMA user_version = 1;" +
                                "INSERT INTO runs(kind, status, created_at) VALUES ('ptq', 'completed', 1.0);";
        ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
        sqlite3_close(db);
    }
    ProjectFile p = ProjectFile::open(file, OpenMode::ReadWrite);
    EXPECT_EQ(p.schema_version(), 2);
    EXPECT_TRUE(fs::exists(dir / "old.qlab.schema-v1.bak"));
    ASSERT_EQ(p.runs().size(), 1u);
    EXPECT_TRUE(p.experiments().empty());
    const std::int64_t e = p.ensure_experiment("e", "abc", R"({"name": "e"})");
    EXPECT_EQ(p.ensure_experiment("e", "abc", R"({"name": "e", "replicates": 5})"), e);  // same identity: same experiment
    EXPECT_NE(p.ensure_experiment("e", "def", R"({"name": "e"})"), e);
    EXPECT_EQ(nlohmann::json::parse(p.experiment(e).spec_json)["replicates"], 5);
    EXPECT_THROW(p.ensure_experiment("e", "x", "not json"), UserError);
}

TEST(ExperimentRuns, ClaimsAreSharedBetweenProcesses) {
    TempDir dir;
    const fs::path file = dir / "p.qlab";
    std::int64_t e = 0;
    {
        ProjectFile p = ProjectFile::create(file);
        e = p.ensure_experiment("e", "abc", "{}");
    }
    // A second process claims cell a #0 and holds it until we let it go.
    int go[2];
    ASSERT_EQ(pipe(go), 0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        close(go[1]);
        int code = 1;
        try {
            ProjectFile p = ProjectFile::open(file, OpenMode::ReadWrite);
            code = p.claim_experiment_run(e, "a", 0, 7) == ExperimentClaim::Claimed ? 0 : 1;
        } catch (...) {
        }
        if (write(STDOUT_FILENO, "", 0) < 0) code = 1;
        char c;
        const ssize_t n = read(go[0], &c, 1);  // returns when the parent closes its end
        (void)n;
        _exit(code);
    }
    close(go[0]);
    ProjectFile p = ProjectFile::open(file, OpenMode::ReadWrite);
    // Wait until the child's claim is in the file.
    for (int i = 0; i < 2000 && p.experiment_runs(e).empty(); ++i) usleep(10000);
    ASSERT_EQ(p.experiment_runs(e).size(), 1u);
    EXPECT_EQ(p.claim_experiment_run(e, "a", 0, 7), ExperimentClaim::Taken);
    EXPECT_EQ(p.claim_experiment_run(e, "b", 0, 7), ExperimentClaim::Claimed);
    close(go[1]);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    // The claimant died without a result: its run is ours now.
    EXPECT_EQ(p.claim_experiment_run(e, "a", 0, 7), ExperimentClaim::Claimed);
    const std::int64_t run = p.create_run(test::run_spec("ptq"));
    p.set_experiment_run_id(e, "a", 0, run);
    p.set_experiment_run_result(e, "a", 0, R"({"metrics": {"kl": 0.5}})");
    EXPECT_EQ(p.claim_experiment_run(e, "a", 0, 7), ExperimentClaim::Done);
    p.release_experiment_run(e, "b", 0);
    const std::vector<ExperimentRunRecord> rows = p.experiment_runs(e);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].cell, "a");
    EXPECT_EQ(rows[0].run_id, run);
    EXPECT_EQ(rows[0].seed, 7);
    EXPECT_FALSE(rows[0].claim_pid.has_value());
    ASSERT_TRUE(rows[0].result_json.has_value());
    EXPECT_FALSE(rows[1].result_json.has_value());
    EXPECT_FALSE(rows[1].claim_pid.has_value());
    EXPECT_THROW(p.set_experiment_run_result(e, "a", 0, "[1]"), UserError);
    // Deleting the run keeps the result; the row just loses its run.
    p.delete_run(run);
    EXPECT_FALSE(p.experiment_runs(e)[0].run_id.has_value());
}

}  // namespace
}  // namespace ql::projects
