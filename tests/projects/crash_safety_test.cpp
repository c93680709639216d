// SPDX-License-Identifier: GPL-3.0-or-later
// SIGKILL a writing process at random moments, again and again, on the same file: every time
// the file must pass integrity_check, keep every point committed before the kill, keep all
// earlier runs, and mark the killed run interrupted at the next read-write open.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <map>
#include <random>
#include <thread>

#include "projects/project_file.h"
#include "tests/projects/test_support.h"

namespace ql::projects {
namespace {

using namespace std::chrono_literals;

TEST(CrashSafety, RepeatedKillsNeverLoseCommittedPointsOrCorruptTheFile) {
    test::TempDir dir;
    const auto file = dir / "p.qlab";
    ProjectFile::create(file);
    std::mt19937 random(20240501u);  // fixed seed: a failure can be reproduced
    std::map<std::int64_t, std::int64_t> runs;  // run id → steps known committed
    constexpr int kKills = 16;
    for (int round = 0; round < kKills; ++round) {
        // A fast writer (a point every 50 µs, an explicit flush every 100 steps, the timer every
        // 100 ms), so kills land during inserts, commits, chunk rewrites and checkpoints.
        test::ChildProcess writer({QUANTLAB_PROJECT_WRITER_FIXTURE, file.string(), "100000000", "50", "100", "100"});
        std::int64_t run = 0;
        std::int64_t committed = -1;  // the last step reported committed
        auto take = [&](const std::string& line) {
            if (line.rfind("run ", 0) == 0) run = std::stoll(line.substr(4));
            if (line.rfind("committed ", 0) == 0) committed = std::stoll(line.substr(10));
        };
        // Every fourth round dies at a random moment after the start, maybe before its run
        // exists; the others once the run is going, after a random working time.
        const bool early = round % 4 == 0;
        if (!early) {
            const auto first = writer.read_line(120s);
            ASSERT_TRUE(first.has_value()) << "the writer did not start";
            take(*first);
            ASSERT_NE(run, 0) << *first;
        }
        const auto delay = std::chrono::milliseconds(early ? random() % 30 : 20 + random() % 300);
        const auto kill_at = std::chrono::steady_clock::now() + delay;
        while (std::chrono::steady_clock::now() < kill_at) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(kill_at - std::chrono::steady_clock::now());
            if (const auto line = writer.read_line(std::max(left, 1ms))) take(*line);
        }
        writer.kill(SIGKILL);
        EXPECT_EQ(writer.wait(), 128 + SIGKILL);
        // Lines written before the kill are still in the pipe.
        while (const auto line = writer.read_line(100ms)) take(*line);

        ProjectFile p = ProjectFile::open(file, OpenMode::ReadWrite);
        ASSERT_EQ(p.integrity_check(), "ok") << "round " << round;
        if (run != 0) {
            runs[run] = committed + 1;
            const RunRecord r = p.run(run);
            EXPECT_EQ(r.status, RunStatus::Interrupted) << "round " << round;
            EXPECT_NE(std::find(p.interrupted_on_open().begin(), p.interrupted_on_open().end(), run),
                      p.interrupted_on_open().end());
            EXPECT_NE(r.message.find("stopped without finishing"), std::string::npos) << r.message;
        }
        // Every run so far still has at least the points it had committed, all correct.
        for (const auto& [id, steps] : runs) {
            const MetricSeries s = p.load_series(id, "loss");
            ASSERT_GE(static_cast<std::int64_t>(s.size()), steps) << "run " << id << " round " << round;
            for (std::int64_t i = 0; i < static_cast<std::int64_t>(s.size()); ++i) {
                ASSERT_EQ(s.steps[i], i);
                ASSERT_EQ(s.values[i], static_cast<double>(i) * 0.5);
            }
        }
    }
    EXPECT_GE(runs.size(), static_cast<std::size_t>(kKills * 3 / 4));
    std::int64_t with_points = 0;
    for (const auto& entry : runs) with_points += entry.second > 0;
    EXPECT_GE(with_points, kKills / 4) << "kills came too early to test much";
}

}  // namespace
}  // namespace ql::projects
