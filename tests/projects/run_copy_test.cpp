// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include "engine/core/errors.h"
#include "projects/metric_writer.h"
#include "projects/project_file.h"
#include "tests/projects/test_support.h"

namespace ql::projects {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::write_bytes;

struct Source {
    std::int64_t run = 0;
    std::int64_t model = 0;
};

Source make_source(const TempDir& dir) {
    fs::create_directories(dir / "src/models");
    write_bytes(dir / "src/models/m.bin", "model");
    write_bytes(dir / "src/out.gguf", "gguf");
    ProjectFile p = ProjectFile::create(dir / "src/a.qlab");
    Source s;
    s.model = p.add_model("m", dir / "src/models/m.bin");
    const std::int64_t recipe = p.add_recipe("MXFP4", R"({"format": "mxfp4"})");
    s.run = p.create_run({"ptq", "mxfp4 try", s.model, recipe, R"({"block": 32})", 7});
    {
        MetricWriter w(p.path(), s.run);
        for (int i = 0; i < 2500; ++i) {
            w.append(i, "loss", i * 0.5);
            w.append(i, "kl", i * 0.25);
        }
        w.finish(RunStatus::Completed, "ok");
    }
    p.add_layer_stats(s.run, {LayerStats{"fc1", "block_scales", 0, 0, 0, {0.5f, 1.5f}, R"({"absmax": 3})"}});
    p.add_artifact(s.run, "gguf", dir / "src/out.gguf");
    p.add_note(s.run, "good");
    return s;
}

TEST(RunCopy, CopiesARunWithEverythingThatBelongsToIt) {
    TempDir dir;
    const Source s = make_source(dir);
    fs::create_directories(dir / "dst");
    ProjectFile dst = ProjectFile::create(dir / "dst/b.qlab");
    dst.create_run(test::run_spec("eval"));  // ids differ between the projects
    const std::int64_t copy = dst.copy_run_from(dir / "src/a.qlab", s.run);
    EXPECT_NE(copy, s.run);

    const ProjectFile src = ProjectFile::open(dir / "src/a.qlab", OpenMode::ReadOnly);
    const RunRecord a = src.run(s.run), b = dst.run(copy);
    EXPECT_EQ(b.kind, "ptq");
    EXPECT_EQ(b.name, a.name);
    EXPECT_EQ(b.status, RunStatus::Completed);
    EXPECT_EQ(b.config_json, a.config_json);
    EXPECT_EQ(b.seed, 7);
    EXPECT_EQ(b.created_at, a.created_at);

    const auto ma = src.load_metrics(s.run), mb = dst.load_metrics(copy);
    ASSERT_EQ(mb.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(mb[i].name, ma[i].name);
        EXPECT_EQ(mb[i].steps, ma[i].steps);
        EXPECT_EQ(mb[i].values, ma[i].values);
        EXPECT_EQ(mb[i].wall_times, ma[i].wall_times);
    }
    ASSERT_EQ(dst.layer_stats(copy).size(), 1u);
    EXPECT_EQ(dst.layer_stats(copy)[0].values, (std::vector<float>{0.5f, 1.5f}));
    ASSERT_EQ(dst.notes(copy).size(), 1u);

    // The model and the artifact live beside the source project: the copy points there.
    ASSERT_TRUE(b.model_id.has_value());
    EXPECT_EQ(fs::weakly_canonical(dst.model_path(*b.model_id)), fs::weakly_canonical(dir / "src/models/m.bin"));
    EXPECT_FALSE(dst.model(*b.model_id).path.is_relative);
    const auto artifacts = dst.artifacts(copy);
    ASSERT_EQ(artifacts.size(), 1u);
    EXPECT_EQ(fs::weakly_canonical(dst.verified_artifact_path(artifacts[0].id)), fs::weakly_canonical(dir / "src/out.gguf"));
    EXPECT_EQ(dst.recipe(*b.recipe_id).json, R"({"format": "mxfp4"})");
    EXPECT_EQ(dst.integrity_check(), "ok");

    // Copying again reuses the model and recipe rows.
    const std::int64_t again = dst.copy_run_from(dir / "src/a.qlab", s.run);
    EXPECT_EQ(dst.run(again).model_id, b.model_id);
    EXPECT_EQ(dst.run(again).recipe_id, b.recipe_id);
    EXPECT_EQ(dst.models().size(), 1u);
}

TEST(RunCopy, DuplicatesARunWithinOneProject) {
    TempDir dir;
    const Source s = make_source(dir);
    ProjectFile p = ProjectFile::open(dir / "src/a.qlab", OpenMode::ReadWrite);
    const std::int64_t copy = p.copy_run_from(p.path(), s.run);
    EXPECT_EQ(p.load_series(copy, "loss").values, p.load_series(s.run, "loss").values);
    EXPECT_EQ(p.run(copy).model_id, p.run(s.run).model_id);
    EXPECT_EQ(p.models().size(), 1u);
}

TEST(RunCopy, ARunningRunIsCopiedAsInterruptedAndMissingRunsAreNamed) {
    TempDir dir;
    ProjectFile src = ProjectFile::create(dir / "a.qlab");
    const std::int64_t run = src.create_run(test::run_spec("qat"));
    MetricWriter w(src.path(), run);
    w.append(0, "loss", 1.0);
    w.flush();
    ProjectFile dst = ProjectFile::create(dir / "b.qlab");
    const std::int64_t copy = dst.copy_run_from(src.path(), run);
    EXPECT_EQ(dst.run(copy).status, RunStatus::Interrupted);
    EXPECT_EQ(dst.load_series(copy, "loss").size(), 1u);
    w.finish(RunStatus::Completed);
    EXPECT_THROW(dst.copy_run_from(src.path(), 999), UserError);
    EXPECT_THROW(dst.copy_run_from(dir / "missing.qlab", run), UserError);
}

}  // namespace
}  // namespace ql::projects
