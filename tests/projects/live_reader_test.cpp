// SPDX-License-Identifier: GPL-3.0-or-later
// Two processes: quantlab_project_writer_fixture writes a run while this test reads the same
// file, as the GUI watches a run that quantlab-cli writes.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "projects/project_file.h"
#include "tests/projects/test_support.h"

namespace ql::projects {
namespace {

using namespace std::chrono_literals;

TEST(LiveReader, SeesARunGrowWhileAnotherProcessWritesIt) {
    test::TempDir dir;
    const auto file = dir / "p.qlab";
    ProjectFile::create(file);
    // 3000 steps, 1 ms apart, no explicit flushes: only the writer's own 200 ms timer.
    test::ChildProcess writer({QUANTLAB_PROJECT_WRITER_FIXTURE, file.string(), "3000", "1000", "0", "200"});
    const auto first = writer.read_line(120s);
    ASSERT_TRUE(first.has_value()) << "the writer did not start";
    ASSERT_EQ(first->rfind("run ", 0), 0u) << *first;
    const std::int64_t run = std::stoll(first->substr(4));

    const ProjectFile reader = ProjectFile::open(file, OpenMode::ReadOnly);
    std::vector<std::int64_t> steps;
    std::vector<double> values;
    std::optional<std::int64_t> last;
    int polls_with_new_points_while_running = 0;
    // Only a hang bound: a busy machine may take much longer than the writer's 3 s of steps.
    const auto deadline = std::chrono::steady_clock::now() + 600s;
    for (;;) {
        const RunRecord r = reader.run(run);
        const MetricSeries s = reader.load_series(run, "loss", last);
        if (!s.empty()) {
            steps.insert(steps.end(), s.steps.begin(), s.steps.end());
            values.insert(values.end(), s.values.begin(), s.values.end());
            last = s.steps.back();
            if (r.status == RunStatus::Running) {
                EXPECT_TRUE(r.writer_alive);
                ++polls_with_new_points_while_running;
            }
        }
        if (r.status == RunStatus::Completed && s.empty()) break;
        ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the run never completed";
        std::this_thread::sleep_for(40ms);  // a GUI's ~25 Hz poll
    }
    EXPECT_EQ(writer.wait(), 0);
    // The points arrived in several batches while the run was going on, not all at the end.
    EXPECT_GE(polls_with_new_points_while_running, 3);
    ASSERT_EQ(steps.size(), 3000u);
    for (std::size_t i = 0; i < steps.size(); ++i) {
        ASSERT_EQ(steps[i], static_cast<std::int64_t>(i));
        ASSERT_EQ(values[i], static_cast<double>(i) * 0.5);
    }
    EXPECT_EQ(reader.load_series(run, "lr").size(), 3000u);
}

// The GUI may open a project between two of quantlab-cli's connections, when SQLite has removed
// FILE-shm and FILE-wal: the reader must still see what is written afterwards (it once fell back
// to an immutable snapshot there and never saw a point).
TEST(LiveReader, AReaderOpenedWhileNoWriterIsConnectedSeesLaterWrites) {
    test::TempDir dir;
    const auto file = dir / "p.qlab";
    ProjectFile::create(file);  // and closed: SQLite removes FILE-shm with the last connection
    ASSERT_FALSE(std::filesystem::exists(file.string() + "-shm"));
    const ProjectFile reader = ProjectFile::open(file, OpenMode::ReadOnly);
    EXPECT_TRUE(reader.runs().empty());
    test::ChildProcess writer({QUANTLAB_PROJECT_WRITER_FIXTURE, file.string(), "50", "0", "0", "50"});
    EXPECT_EQ(writer.wait(), 0);
    ASSERT_EQ(reader.runs().size(), 1u);
    const std::int64_t run = reader.runs().front().id;
    EXPECT_EQ(reader.load_series(run, "loss").size(), 50u);
    EXPECT_EQ(reader.run(run).status, RunStatus::Completed);
    // Reading never wrote: the reader refuses writes.
    EXPECT_THROW(const_cast<ProjectFile&>(reader).add_note(std::nullopt, "x"), std::exception);
}

// The GUI holds a reader on a project (the watcher) and opens the same file again for a moment
// (the workbench, to write). Opening once read the header through a second descriptor, and
// closing it dropped every POSIX lock of the process on the file: the next writer to close took
// itself for the last connection, deleted FILE-shm, and the reader kept an orphaned -shm and a
// stale snapshot forever (the GUI showed a finished run as running, with no points).
TEST(LiveReader, OpeningTheFileAgainInTheReadersProcessKeepsTheReaderLive) {
    test::TempDir dir;
    const auto file = dir / "p.qlab";
    ProjectFile::create(file);
    const ProjectFile reader = ProjectFile::open(file, OpenMode::ReadOnly);
    EXPECT_TRUE(reader.runs().empty());
    { const ProjectFile again = ProjectFile::open(file, OpenMode::ReadWrite); }
    { const ProjectFile again = ProjectFile::open(file, OpenMode::ReadOnly); }
    for (int writerIndex = 0; writerIndex < 2; ++writerIndex) {
        test::ChildProcess writer({QUANTLAB_PROJECT_WRITER_FIXTURE, file.string(), "20", "0", "0", "50"});
        ASSERT_EQ(writer.wait(), 0);
        // Another process's connection closed: the reader's one still holds FILE-shm.
        EXPECT_TRUE(std::filesystem::exists(file.string() + "-shm"));
    }
    const std::vector<RunRecord> runs = reader.runs();
    ASSERT_EQ(runs.size(), 2u);
    for (const RunRecord& r : runs) {
        EXPECT_EQ(r.status, RunStatus::Completed);
        EXPECT_EQ(reader.load_series(r.id, "loss").size(), 20u);
    }
}

}  // namespace
}  // namespace ql::projects
