// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/metric_writer.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "engine/core/errors.h"
#include "projects/project_file.h"
#include "tests/projects/test_support.h"

namespace ql::projects {
namespace {

using namespace std::chrono_literals;
using test::TempDir;

struct Fixture {
    TempDir dir;
    std::filesystem::path file = dir / "p.qlab";
    ProjectFile project = ProjectFile::create(file);
    std::int64_t run = project.create_run(test::run_spec("qat"));
};

TEST(MetricWriter, StartsTheRunAndRecordsItsWriter) {
    Fixture f;
    MetricWriter w(f.file, f.run);
    const RunRecord r = f.project.run(f.run);
    EXPECT_EQ(r.status, RunStatus::Running);
    EXPECT_EQ(r.writer_pid, getpid());
    EXPECT_TRUE(r.writer_alive);
    EXPECT_TRUE(r.started_at.has_value());
    EXPECT_TRUE(r.heartbeat_at.has_value());
    w.finish(RunStatus::Completed, "fine");
    const RunRecord done = f.project.run(f.run);
    EXPECT_EQ(done.status, RunStatus::Completed);
    EXPECT_EQ(done.message, "fine");
    EXPECT_TRUE(done.ended_at.has_value());
}

TEST(MetricWriter, PointsAcrossManyChunksAndFlushesComeBackInOrder) {
    Fixture f;
    MetricWriter w(f.file, f.run);
    // Flushes at odd sizes so the last chunk is rewritten and chunk boundaries are crossed.
    for (int i = 0; i < 5000; ++i) {
        w.append(i, "loss", 1.0 / (i + 1), 1.7e9 + i);
        if (i % 777 == 0) w.flush();
    }
    w.flush();
    EXPECT_EQ(w.committed_points(), 5000);
    const MetricSeries s = f.project.load_series(f.run, "loss");
    ASSERT_EQ(s.size(), 5000u);
    for (int i = 0; i < 5000; ++i) {
        ASSERT_EQ(s.steps[i], i);
        ASSERT_EQ(s.values[i], 1.0 / (i + 1));
        ASSERT_EQ(s.wall_times[i], 1.7e9 + i);
    }
    const auto summaries = f.project.metric_summaries(f.run);
    ASSERT_EQ(summaries.size(), 1u);
    EXPECT_EQ(summaries[0].points, 5000);
    EXPECT_EQ(summaries[0].last_step, 4999);
    w.finish(RunStatus::Completed);
}

TEST(MetricWriter, NaNAndInfinityAreKept) {
    Fixture f;
    MetricWriter w(f.file, f.run);
    w.append(0, "loss", 1.0);
    w.append(1, "loss", std::numeric_limits<double>::quiet_NaN());
    w.append(2, "loss", std::numeric_limits<double>::infinity());
    w.append(3, "loss", -std::numeric_limits<double>::infinity());
    w.finish(RunStatus::Failed, "loss became NaN at step 1");
    const MetricSeries s = f.project.load_series(f.run, "loss");
    ASSERT_EQ(s.size(), 4u);
    EXPECT_TRUE(std::isnan(s.values[1]));
    EXPECT_TRUE(std::isinf(s.values[2]) && s.values[2] > 0);
    EXPECT_TRUE(std::isinf(s.values[3]) && s.values[3] < 0);
}

// Readers see a point without anyone calling flush(): the writer's own timer commits it. How soon
// is the interval's business (asserted as configured); the wait below only bounds a hang, so a
// busy machine cannot fail this test.
TEST(MetricWriter, FlushesOnItsOwnAtTheConfiguredInterval) {
    Fixture f;
    MetricWriter::Options options;
    options.flush_interval = 100ms;
    MetricWriter w(f.file, f.run, options);
    EXPECT_EQ(w.flush_interval(), 100ms);
    w.append(0, "loss", 3.0);
    ProjectFile reader = ProjectFile::open(f.file, OpenMode::ReadOnly);
    const auto start = std::chrono::steady_clock::now();
    while (reader.load_series(f.run, "loss").empty() && std::chrono::steady_clock::now() - start < 120s)
        std::this_thread::sleep_for(10ms);
    EXPECT_EQ(reader.load_series(f.run, "loss").size(), 1u);
    w.finish(RunStatus::Completed);
}

TEST(MetricWriter, IntervalsBeyondOneSecondAreCapped) {
    Fixture f;
    MetricWriter::Options options;
    options.flush_interval = 60s;
    MetricWriter w(f.file, f.run, options);
    EXPECT_EQ(w.flush_interval(), 1000ms);
    {
        Fixture other;
        options.flush_interval = 0ms;
        MetricWriter fast(other.file, other.run, options);
        EXPECT_EQ(fast.flush_interval(), 1ms);
        fast.finish(RunStatus::Completed);
    }
    w.append(0, "loss", 3.0);
    ProjectFile reader = ProjectFile::open(f.file, OpenMode::ReadOnly);
    const auto start = std::chrono::steady_clock::now();
    while (reader.load_series(f.run, "loss").empty() && std::chrono::steady_clock::now() - start < 120s)
        std::this_thread::sleep_for(20ms);
    EXPECT_EQ(reader.load_series(f.run, "loss").size(), 1u);
    w.finish(RunStatus::Completed);
}

TEST(MetricWriter, AppendIsSafeFromManyThreads) {
    Fixture f;
    MetricWriter w(f.file, f.run);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&w, t] {
            for (int i = 0; i < 20000; ++i) w.append(i, "series" + std::to_string(t), t * 100000.0 + i);
        });
    for (auto& t : threads) t.join();
    w.finish(RunStatus::Completed);
    const auto all = f.project.load_metrics(f.run);
    ASSERT_EQ(all.size(), 4u);
    for (int t = 0; t < 4; ++t) {
        EXPECT_EQ(all[t].name, "series" + std::to_string(t));
        ASSERT_EQ(all[t].size(), 20000u);
        EXPECT_EQ(all[t].values[12345], t * 100000.0 + 12345);
    }
}

TEST(MetricWriter, IncrementalLoadsReturnOnlyNewSteps) {
    Fixture f;
    MetricWriter w(f.file, f.run);
    ProjectFile reader = ProjectFile::open(f.file, OpenMode::ReadOnly);
    std::vector<std::int64_t> seen;
    std::optional<std::int64_t> last;
    for (int round = 0; round < 5; ++round) {
        for (int i = 0; i < 700; ++i) w.append(round * 700 + i, "loss", i);
        w.flush();
        const MetricSeries s = reader.load_series(f.run, "loss", last);
        ASSERT_EQ(s.size(), 700u);
        seen.insert(seen.end(), s.steps.begin(), s.steps.end());
        last = s.steps.back();
    }
    EXPECT_TRUE(reader.load_series(f.run, "loss", last).empty());
    ASSERT_EQ(seen.size(), 3500u);
    for (std::size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], static_cast<std::int64_t>(i));
    w.finish(RunStatus::Completed);
}

TEST(MetricWriter, AResumedRunContinuesItsSeriesAndReloggedStepsWin) {
    Fixture f;
    {
        MetricWriter w(f.file, f.run);
        for (int i = 0; i < 1500; ++i) w.append(i, "loss", 1.0);
        w.finish(RunStatus::Cancelled, "paused");
    }
    {
        MetricWriter w(f.file, f.run);  // resume from a checkpoint at step 1200
        EXPECT_EQ(f.project.run(f.run).status, RunStatus::Running);
        for (int i = 1200; i < 2000; ++i) w.append(i, "loss", 2.0);
        w.finish(RunStatus::Completed);
    }
    const MetricSeries s = f.project.load_series(f.run, "loss");
    ASSERT_EQ(s.size(), 2000u);
    EXPECT_EQ(s.values[1199], 1.0);
    EXPECT_EQ(s.values[1200], 2.0);
    EXPECT_EQ(s.values[1999], 2.0);
}

TEST(MetricWriter, LayerStatsGoThroughTheSameBatches) {
    Fixture f;
    MetricWriter w(f.file, f.run);
    LayerStats s;
    s.layer = "fc1";
    s.kind = "activation_histogram";
    s.values = {1, 2, 3};
    w.append_layer_stats(s);
    w.flush();
    EXPECT_EQ(f.project.layer_stats(f.run).size(), 1u);
    w.finish(RunStatus::Completed);
}

TEST(MetricWriter, DestroyedWithoutFinishMarksTheRunInterrupted) {
    Fixture f;
    {
        MetricWriter w(f.file, f.run);
        w.append(0, "loss", 1.0);
    }
    const RunRecord r = f.project.run(f.run);
    EXPECT_EQ(r.status, RunStatus::Interrupted);
    EXPECT_EQ(f.project.load_series(f.run, "loss").size(), 1u);
}

TEST(MetricWriter, RefusesEndedRunsAndASecondLiveWriter) {
    Fixture f;
    MetricWriter w(f.file, f.run);
    EXPECT_THROW(MetricWriter(f.file, f.run), UserError);
    w.finish(RunStatus::Completed);
    EXPECT_THROW(MetricWriter(f.file, f.run), UserError);
    EXPECT_THROW(MetricWriter(f.file, 999), UserError);
}

TEST(MetricWriter, AppendAfterFinishIsAProgrammingError) {
    Fixture f;
    MetricWriter w(f.file, f.run);
    w.finish(RunStatus::Completed);
    EXPECT_THROW(w.append(0, "loss", 1.0), std::logic_error);
    EXPECT_THROW(w.finish(RunStatus::Completed), std::logic_error);
}

}  // namespace
}  // namespace ql::projects
