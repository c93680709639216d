// SPDX-License-Identifier: GPL-3.0-or-later
// Evaluation runs in a project (projects/evalsuite_records.h): each model's run recorded as a
// completed run of kind "evalsuite" with its metrics and its JSON, listed back, and a
// checkpoint's evaluation found with its baseline for the report.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>

#include "projects/evalsuite_records.h"
#include "projects/project_file.h"
#include "tests/projects/test_support.h"

namespace ql::projects {
namespace {

namespace fs = std::filesystem;

EvalsuiteRunRecord record(const std::string& label, const std::string& model, const std::string& path, const std::string& baseline,
                          const std::string& suite = "abc") {
    EvalsuiteRunRecord r;
    r.label = label;
    r.model_name = model;
    r.config_json = nlohmann::json({{"model", model}, {"baseline", baseline}}).dump();
    r.run_json = nlohmann::json({{"manifest", {{"label", label}, {"model", model}, {"model_path", path}, {"suite_sha256", suite}}}}).dump();
    r.metrics = {{"evalsuite/success", 0.5}};
    return r;
}

TEST(EvalsuiteRecords, RunsAreStoredListedAndACheckpointFindsItsBaseline) {
    const test::TempDir dir;
    const fs::path project = dir.path() / "e.qlab";
    const fs::path q = dir.path() / "q";
    fs::create_directories(q);
    const int64_t a = record_evalsuite_run(project, record("fp", "fp-folder", "/models/fp", "fp-folder"));
    const int64_t b = record_evalsuite_run(project, record("nvfp4", (q).string(), q.string(), "fp-folder"));
    record_evalsuite_run(project, record("fp", "fp-folder", "/models/fp", "fp-folder", "other-suite"));
    const std::vector<StoredEvalsuiteRun> stored = stored_evalsuite_runs(project);
    ASSERT_EQ(stored.size(), 3u);
    EXPECT_EQ(stored[0].run_id, a);
    EXPECT_EQ(stored[1].name, "nvfp4");
    const ProjectFile file = ProjectFile::open(project, OpenMode::ReadOnly);
    EXPECT_EQ(file.run(b).kind, "evalsuite");
    EXPECT_EQ(file.run(b).status, RunStatus::Completed);
    EXPECT_EQ(file.load_series(b, "evalsuite/success").values, std::vector<double>{0.5});

    const std::vector<std::string> texts = evaluations_of_model(project, (q / ".").string());
    ASSERT_EQ(texts.size(), 2u);  // the baseline on the same suite first, not the later one on another suite
    EXPECT_EQ(nlohmann::json::parse(texts[0])["manifest"]["label"], "fp");
    EXPECT_EQ(nlohmann::json::parse(texts[0])["manifest"]["suite_sha256"], "abc");
    EXPECT_EQ(nlohmann::json::parse(texts[1])["manifest"]["label"], "nvfp4");
    EXPECT_TRUE(evaluations_of_model(project, (dir.path() / "elsewhere").string()).empty());
}

}  // namespace
}  // namespace ql::projects
