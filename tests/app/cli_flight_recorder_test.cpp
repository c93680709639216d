// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli train --record-every (the flight recorder) and --keep-best on the golden tiny Llama.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "projects/project_file.h"
#include "tests/app/cli_runner.h"

namespace ql::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(CliFlightRecorder, QadRecordsEveryQuantizedLayerIntoTheProject) {
    const std::string dir = make_temp_dir();
    const CliResult r = run_cli({"train", "qad", kLlama, "--recipe", "NVFP4_DEFAULT", "--data", "synthetic:random-tokens",
                                 "--out", dir + "/run", "--steps", "6", "--batch-size", "8", "--lr", "1e-3",
                                 "--eval-samples", "16", "--record-every", "2", "--project", dir + "/p.qlab", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const projects::ProjectFile p = projects::ProjectFile::open(dir + "/p.qlab", projects::OpenMode::ReadOnly);
    const int64_t run = p.runs().at(0).id;
    int layers = 0;
    for (const projects::SeriesSummary& s : p.metric_summaries(run)) {
        if (s.name.rfind("flight/flips_since_last/", 0) != 0) continue;
        ++layers;
        const projects::MetricSeries flips = p.load_series(run, s.name);
        ASSERT_EQ(flips.steps, (std::vector<int64_t>{0, 2, 4, 6})) << s.name;
        EXPECT_EQ(flips.values[0], 0.0);
        const std::string layer = s.name.substr(std::string("flight/flips_since_last/").size());
        for (const char* q : {"flips_since_start", "clip_fraction", "amax_drift", "scale_drift", "global_scale_drift"})
            EXPECT_EQ(p.load_series(run, std::string("flight/") + q + "/" + layer).size(), 4u) << q << " " << layer;
    }
    EXPECT_EQ(layers, 14);  // every Linear of the two blocks (lm_head is excluded by the preset)
    EXPECT_EQ(p.load_series(run, "flight/block_distance/model.layers.1").size(), 3u);  // steps 2, 4, 6
    EXPECT_GT(p.load_series(run, "flight/flips_since_start").values.back(), 0.0);
    EXPECT_EQ(p.load_series(run, "flight/stagnating").size(), 3u);
    fs::remove_all(dir);
}

TEST(CliFlightRecorder, AStagnatingQatRunIsWarnedAboutAndKeepBestKeepsTheBestEvaluation) {
    const std::string dir = make_temp_dir();
    // A learning rate so small that no code moves: the recorder calls it stagnating.
    const CliResult r = run_cli({"train", "qat", kLlama, "--recipe", "NVFP4_DEFAULT", "--data", "synthetic:random-tokens",
                                 "--out", dir + "/run", "--steps", "8", "--batch-size", "8", "--lr", "1e-12",
                                 "--eval-samples", "16", "--eval-every", "2", "--record-every", "2", "--keep-best",
                                 "--project", dir + "/p.qlab", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("stagnates"), std::string::npos) << r.err;
    const json j = json::parse(r.out);
    ASSERT_TRUE(j["best_step"].is_number_integer());
    const int64_t best = j["best_step"];
    const projects::ProjectFile p = projects::ProjectFile::open(dir + "/p.qlab", projects::OpenMode::ReadOnly);
    const int64_t run = p.runs().at(0).id;
    EXPECT_EQ(p.load_series(run, "flight/stagnating").values.back(), 1.0);
    EXPECT_EQ(p.load_series(run, "train/best_step").values.back(), static_cast<double>(best));
    // The kept evaluation is the lowest held-out loss among steps 2, 4, 6, 8.
    const projects::MetricSeries loss = p.load_series(run, "eval/loss");
    double lowest = 1e300;
    int64_t lowest_step = -1;
    for (size_t i = 0; i < loss.steps.size(); ++i)
        if (loss.steps[i] > 0 && loss.steps[i] < 8 && loss.values[i] < lowest) {
            lowest = loss.values[i];
            lowest_step = loss.steps[i];
        }
    EXPECT_GE(best, 2);
    if (best != 8) EXPECT_EQ(best, lowest_step);
    // --keep-best without evaluations to choose from is refused before any work.
    const CliResult bad = run_cli({"train", "qat", kLlama, "--recipe", "NVFP4_DEFAULT", "--data", "synthetic:random-tokens",
                                   "--out", dir + "/bad", "--keep-best"});
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_NE(bad.err.find("--eval-every"), std::string::npos) << bad.err;
    EXPECT_FALSE(fs::exists(dir + "/bad"));
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ql::test
