// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/schema_migrations.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "engine/core/errors.h"
#include "projects/sqlite_connection.h"
#include "tests/projects/test_support.h"

namespace ql::projects {
namespace {

using test::TempDir;

Connection open_new(const std::filesystem::path& file) {
    return Connection(file, sqlite_file_uri(file), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI);
}

std::int64_t count_tables(Connection& c, const std::string& name) {
    return c.query_int("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '" + name + "'", "test");
}

TEST(SchemaMigrations, StepsAreNumberedFromOneWithoutGaps) {
    const auto& steps = schema_steps();
    ASSERT_FALSE(steps.empty());
    for (std::size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i].version, static_cast<int>(i) + 1);
    EXPECT_EQ(current_schema_version(), steps.back().version);
}

TEST(SchemaMigrations, FreshFileGetsEveryTableApplicationIdAndVersion) {
    TempDir dir;
    Connection c = open_new(dir / "p.qlab");
    migrate(c, schema_steps());
    EXPECT_EQ(c.query_int("PRAGMA user_version", "test"), current_schema_version());
    EXPECT_EQ(c.query_int("PRAGMA application_id", "test"), kProjectApplicationId);
    for (const char* table : {"project_info", "models", "recipes", "runs", "metric_names", "metric_chunks",
                              "layer_stats", "artifacts", "notes"})
        EXPECT_EQ(count_tables(c, table), 1) << table;
    migrate(c, schema_steps());  // already current: nothing to do
    EXPECT_EQ(c.query_int("PRAGMA user_version", "test"), current_schema_version());
}

TEST(SchemaMigrations, MissingStepsAreAppliedCumulativelyAndACopyIsKept) {
    TempDir dir;
    Connection c = open_new(dir / "p.qlab");
    const std::vector<MigrationStep> v1 = {{1, "CREATE TABLE a(x INTEGER); INSERT INTO a VALUES (7);"}};
    migrate(c, v1);
    const std::vector<MigrationStep> v3 = {v1[0],
                                           {2, "ALTER TABLE a ADD COLUMN y TEXT DEFAULT 'two';"},
                                           {3, "CREATE TABLE b(z INTEGER);"}};
    migrate(c, v3, dir / "p.qlab.schema-v1.bak");
    EXPECT_EQ(c.query_int("PRAGMA user_version", "test"), 3);
    EXPECT_EQ(c.query_text("SELECT y FROM a", "test"), "two");
    EXPECT_EQ(count_tables(c, "b"), 1);
    EXPECT_EQ(c.query_int("SELECT x FROM a", "test"), 7);  // data survives the upgrade

    Connection backup = open_new(dir / "p.qlab.schema-v1.bak");
    EXPECT_EQ(backup.query_int("PRAGMA user_version", "test"), 1);
    EXPECT_EQ(count_tables(backup, "b"), 0);
}

TEST(SchemaMigrations, AFailingStepLeavesTheFileAtItsOldVersion) {
    TempDir dir;
    Connection c = open_new(dir / "p.qlab");
    const std::vector<MigrationStep> v1 = {{1, "CREATE TABLE a(x INTEGER);"}};
    migrate(c, v1);
    const std::vector<MigrationStep> broken = {v1[0], {2, "CREATE TABLE b(z INTEGER);"}, {3, "THIS IS NOT SQL;"}};
    EXPECT_ANY_THROW(migrate(c, broken));
    // One transaction: step 2 went with step 3.
    EXPECT_EQ(c.query_int("PRAGMA user_version", "test"), 1);
    EXPECT_EQ(count_tables(c, "b"), 0);
}

TEST(SchemaMigrations, NewerFileIsRefusedUntouched) {
    TempDir dir;
    Connection c = open_new(dir / "p.qlab");
    c.exec("PRAGMA user_version = 42", "test");
    try {
        migrate(c, schema_steps());
        FAIL() << "expected a UserError";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos) << e.what();
    }
    EXPECT_EQ(c.query_int("PRAGMA user_version", "test"), 42);
    EXPECT_EQ(count_tables(c, "runs"), 0);
}

}  // namespace
}  // namespace ql::projects
