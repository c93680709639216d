// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/project_file.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "projects/content_hash.h"
#include "projects/metric_writer.h"
#include "projects/schema_migrations.h"
#include "tests/projects/test_support.h"

namespace ql::projects {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::write_bytes;

// A raw SQLite look at the file, independent of the library.
std::string raw_text(const fs::path& file, const std::string& sql) {
    sqlite3* db = nullptr;
    sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_stmt* st = nullptr;
    std::string out;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
}

TEST(ProjectFile, CreateMakesAWalProjectWithItsIdAndVersion) {
    TempDir dir;
    const ProjectFile p = ProjectFile::create(dir / "p.qlab");
    EXPECT_EQ(p.mode(), OpenMode::ReadWrite);
    EXPECT_EQ(p.path(), dir / "p.qlab");
    EXPECT_EQ(p.schema_version(), current_schema_version());
    EXPECT_EQ(p.integrity_check(), "ok");
    EXPECT_EQ(raw_text(p.path(), "PRAGMA journal_mode"), "wal");
    EXPECT_EQ(raw_text(p.path(), "PRAGMA application_id"), std::to_string(kProjectApplicationId));
    EXPECT_EQ(raw_text(p.path(), "PRAGMA user_version"), std::to_string(current_schema_version()));
    EXPECT_FALSE(raw_text(p.path(), "SELECT value FROM project_info WHERE key = 'created_at'").empty());
    // No temporary file is left beside it.
    int entries = 0;
    for (const auto& e : fs::directory_iterator(dir.path()))
        if (e.path().filename().string().find("creating") != std::string::npos) ++entries;
    EXPECT_EQ(entries, 0);
}

TEST(ProjectFile, CreateRefusesAnExistingFileAndAMissingFolder) {
    TempDir dir;
    write_bytes(dir / "taken.qlab", "precious");
    EXPECT_THROW(ProjectFile::create(dir / "taken.qlab"), UserError);
    EXPECT_EQ(test::read_bytes(dir / "taken.qlab"), "precious");
    EXPECT_THROW(ProjectFile::create(dir / "no/such/folder/p.qlab"), UserError);
}

TEST(ProjectFile, ForeignKeysAreEnforcedOnWriteConnections) {
    TempDir dir;
    ProjectFile p = ProjectFile::create(dir / "p.qlab");
    RunSpec spec;
    spec.kind = "ptq";
    spec.model_id = 99;  // no such model: a clear UserError, not a constraint failure
    EXPECT_THROW(p.create_run(spec), UserError);
    EXPECT_THROW(p.add_note(std::int64_t{5}, "on a run that does not exist"), UserError);
}

TEST(ProjectFile, RunsRecordKindConfigSeedHostAndVersion) {
    TempDir dir;
    ProjectFile p = ProjectFile::create(dir / "p.qlab");
    write_bytes(dir / "m.bin", "model bytes");
    const std::int64_t model = p.add_model("tiny", dir / "m.bin", R"({"layers": 2})");
    const std::int64_t recipe = p.add_recipe("NVFP4_DEFAULT", R"({"format": "nvfp4"})");
    RunSpec spec{"qat", "first try", model, recipe, R"({"lr": 0.001})", 1234};
    const std::int64_t id = p.create_run(spec);
    const RunRecord r = p.run(id);
    EXPECT_EQ(r.kind, "qat");
    EXPECT_EQ(r.name, "first try");
    EXPECT_EQ(r.status, RunStatus::Created);
    EXPECT_EQ(r.model_id, model);
    EXPECT_EQ(r.recipe_id, recipe);
    EXPECT_EQ(nlohmann::json::parse(r.config_json)["lr"], 0.001);
    EXPECT_EQ(r.seed, 1234);
    EXPECT_FALSE(r.host.empty());
    EXPECT_GT(r.created_at, 1.6e9);
    EXPECT_EQ(p.runs().size(), 1u);

    spec.config_json = "[1, 2";
    EXPECT_THROW(p.create_run(spec), UserError);
    EXPECT_THROW(p.add_recipe("bad", "{not json"), UserError);
}

TEST(ProjectFile, SetRunStatusEndsARunOnce) {
    TempDir dir;
    ProjectFile p = ProjectFile::create(dir / "p.qlab");
    const std::int64_t id = p.create_run(test::run_spec("eval"));
    p.set_run_status(id, RunStatus::Failed, "data file missing");
    EXPECT_EQ(p.run(id).status, RunStatus::Failed);
    EXPECT_EQ(p.run(id).message, "data file missing");
    EXPECT_TRUE(p.run(id).ended_at.has_value());
    EXPECT_THROW(p.set_run_status(id, RunStatus::Completed), UserError);
}

TEST(ProjectFile, ModelsInsideTheFolderAreStoredRelativeWithTheirHash) {
    TempDir dir;
    fs::create_directories(dir / "proj/models");
    fs::create_directories(dir / "outside");
    write_bytes(dir / "proj/models/m.safetensors", "inside");
    write_bytes(dir / "outside/o.safetensors", "outside");
    ProjectFile p = ProjectFile::create(dir / "proj/p.qlab");
    const std::int64_t inside = p.add_model("inside", dir / "proj/models/m.safetensors");
    const std::int64_t outside = p.add_model("outside", dir / "outside/o.safetensors");
    const ModelRecord mi = p.model(inside), mo = p.model(outside);
    EXPECT_TRUE(mi.path.is_relative);
    EXPECT_EQ(mi.path.text, "models/m.safetensors");
    EXPECT_EQ(mi.content_sha256, sha256_hex("inside", 6));
    EXPECT_EQ(mi.size_bytes, 6);
    EXPECT_FALSE(mo.path.is_relative);
    EXPECT_EQ(p.model_path(inside), dir / "proj/models/m.safetensors");
    EXPECT_EQ(p.models().size(), 2u);
}

TEST(ProjectFile, RelinkAcceptsOnlyTheSameContent) {
    TempDir dir;
    write_bytes(dir / "m.bin", "weights");
    ProjectFile p = ProjectFile::create(dir / "p.qlab");
    const std::int64_t id = p.add_model("m", dir / "m.bin");
    fs::create_directories(dir / "new");
    fs::rename(dir / "m.bin", dir / "new/m.bin");
    EXPECT_THROW(p.model_path(id), UserError);
    p.relink_model(id, dir / "new/m.bin");
    EXPECT_EQ(p.model_path(id), dir / "new/m.bin");
    write_bytes(dir / "other.bin", "different");
    EXPECT_THROW(p.relink_model(id, dir / "other.bin"), UserError);
}

TEST(ProjectFile, ArtifactsAreVerifiedByHash) {
    TempDir dir;
    ProjectFile p = ProjectFile::create(dir / "p.qlab");
    const std::int64_t run = p.create_run(test::run_spec("export"));
    write_bytes(dir / "model.gguf", "GGUF....");
    const std::int64_t id = p.add_artifact(run, "gguf", dir / "model.gguf");
    const auto list = p.artifacts(run);
    ASSERT_EQ(list.size(), 1u);
    EXPECT_EQ(list[0].kind, "gguf");
    EXPECT_EQ(list[0].sha256, sha256_hex("GGUF....", 8));
    EXPECT_EQ(list[0].size_bytes, 8);
    EXPECT_TRUE(list[0].path.is_relative);
    EXPECT_EQ(p.verified_artifact_path(id), dir / "model.gguf");
    write_bytes(dir / "model.gguf", "changed!");
    EXPECT_THROW(p.verified_artifact_path(id), UserError);
    fs::remove(dir / "model.gguf");
    EXPECT_THROW(p.verified_artifact_path(id), UserError);
}

TEST(ProjectFile, NotesOnRunsAndOnTheProject) {
    TempDir dir;
    ProjectFile p = ProjectFile::create(dir / "p.qlab");
    const std::int64_t run = p.create_run(test::run_spec("ptq"));
    const std::int64_t a = p.add_note(std::nullopt, "project-wide");
    p.add_note(run, "NVFP4 lost 2 points");
    p.update_note(a, "project-wide, edited");
    EXPECT_EQ(p.notes().size(), 2u);
    ASSERT_EQ(p.notes(run).size(), 1u);
    EXPECT_EQ(p.notes(run)[0].text, "NVFP4 lost 2 points");
    EXPECT_EQ(p.notes()[0].text, "project-wide, edited");
    EXPECT_THROW(p.update_note(999, "x"), UserError);
}

TEST(ProjectFile, LayerStatsRoundTrip) {
    TempDir dir;
    ProjectFile p = ProjectFile::create(dir / "p.qlab");
    const std::int64_t run = p.create_run(test::run_spec("calibrate"));
    LayerStats h;
    h.layer = "layers.0.q_proj";
    h.kind = "weight_histogram";
    h.range_min = -1;
    h.range_max = 1;
    h.values = {1, 2, 3};
    h.outliers_json = R"({"absmax": 0.98, "beyond_6_sigma": 3})";
    LayerStats s = h;
    s.layer = "layers.1.q_proj";
    s.kind = "block_scales";
    s.range_min = s.range_max = 0;
    s.values = {0.5f, 0.25f};
    s.outliers_json = "{}";
    p.add_layer_stats(run, {h, s});
    const auto all = p.layer_stats(run);
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0].layer, "layers.0.q_proj");
    EXPECT_EQ(all[0].values, h.values);
    EXPECT_EQ(all[0].range_max, 1);
    EXPECT_EQ(nlohmann::json::parse(all[0].outliers_json)["beyond_6_sigma"], 3);
    const auto one = p.layer_stats(run, std::string("layers.1.q_proj"));
    ASSERT_EQ(one.size(), 1u);
    EXPECT_EQ(one[0].values, s.values);
    h.outliers_json = "{oops";
    EXPECT_THROW(p.add_layer_stats(run, {h}), UserError);
}

TEST(ProjectFile, DeleteRunTakesItsRowsAlong) {
    TempDir dir;
    ProjectFile p = ProjectFile::create(dir / "p.qlab");
    const std::int64_t run = p.create_run(test::run_spec("qat"));
    {
        MetricWriter w(p.path(), run);
        for (int i = 0; i < 10; ++i) w.append(i, "loss", i);
        w.finish(RunStatus::Completed);
    }
    p.add_note(run, "n");
    p.add_layer_stats(run, {LayerStats{"l", "k", 0, 0, 0, {1.0f}, "{}"}});
    p.delete_run(run);
    EXPECT_TRUE(p.runs().empty());
    EXPECT_TRUE(p.notes().empty());
    EXPECT_TRUE(p.load_series(run, "loss").empty());
    EXPECT_TRUE(p.layer_stats(run).empty());
    EXPECT_EQ(raw_text(p.path(), "SELECT count(*) FROM metric_chunks"), "0");
}

TEST(ProjectFile, SaveCopyIsACompleteProject) {
    TempDir dir;
    ProjectFile p = ProjectFile::create(dir / "p.qlab");
    const std::int64_t run = p.create_run(test::run_spec("qat"));
    {
        MetricWriter w(p.path(), run);
        for (int i = 0; i < 3000; ++i) w.append(i, "loss", i * 0.25);
        w.finish(RunStatus::Completed);
    }
    p.save_copy(dir / "copy.qlab");
    EXPECT_THROW(p.save_copy(dir / "copy.qlab"), UserError);
    const ProjectFile c = ProjectFile::open(dir / "copy.qlab", OpenMode::ReadWrite);
    EXPECT_EQ(c.integrity_check(), "ok");
    EXPECT_EQ(c.load_series(run, "loss").size(), 3000u);
    EXPECT_EQ(c.run(run).status, RunStatus::Completed);
}

TEST(ProjectFile, ReadOnlyHandleRefusesWrites) {
    TempDir dir;
    ProjectFile::create(dir / "p.qlab");
    ProjectFile p = ProjectFile::open(dir / "p.qlab", OpenMode::ReadOnly);
    EXPECT_EQ(p.mode(), OpenMode::ReadOnly);
    EXPECT_THROW(p.create_run(test::run_spec("qat")), UserError);
    EXPECT_THROW(p.add_recipe("r", "{}"), UserError);
}

}  // namespace
}  // namespace ql::projects
