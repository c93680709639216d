// SPDX-License-Identifier: GPL-3.0-or-later
// Files and locations that are not what they should be: each gives a clear UserError naming the
// file, and nothing already stored is changed or lost.
#include <gtest/gtest.h>
#include <sched.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>

#include "engine/core/errors.h"
#include "projects/metric_writer.h"
#include "projects/project_file.h"
#include "tests/projects/test_support.h"

namespace ql::projects {
namespace {

namespace fs = std::filesystem;
using test::read_bytes;
using test::TempDir;
using test::write_bytes;

// The UserError message of `f`, or a failure when it throws none.
std::string user_error(const std::function<void()>& f) {
    try {
        f();
    } catch (const UserError& e) {
        return e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "not a UserError: " << e.what();
        return {};
    }
    ADD_FAILURE() << "no error";
    return {};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A project with one completed run of `points` "loss" points (value = step).
std::int64_t make_project(const fs::path& file, int points) {
    ProjectFile p = ProjectFile::create(file);
    const std::int64_t run = p.create_run(test::run_spec("qat"));
    MetricWriter w(file, run);
    for (int i = 0; i < points; ++i) w.append(i, "loss", i);
    w.finish(RunStatus::Completed);
    return run;
}

void expect_refused_untouched(const fs::path& file, const std::string& expected_words) {
    const std::string before = read_bytes(file);
    for (OpenMode mode : {OpenMode::ReadOnly, OpenMode::ReadWrite, OpenMode::PreferReadWrite}) {
        const std::string message = user_error([&] { ProjectFile::open(file, mode); });
        EXPECT_TRUE(contains(message, file.string())) << message;
        EXPECT_TRUE(contains(message, expected_words)) << message;
    }
    EXPECT_EQ(read_bytes(file), before);
    EXPECT_FALSE(fs::exists(file.string() + "-wal"));
}

TEST(BadProjectFile, MissingFile) {
    TempDir dir;
    const std::string m = user_error([&] { ProjectFile::open(dir / "nope.qlab", OpenMode::ReadOnly); });
    EXPECT_TRUE(contains(m, "does not exist")) << m;
}

TEST(BadProjectFile, NotSQLite) {
    TempDir dir;
    write_bytes(dir / "notes.qlab", "These are my notes, not a database. They must survive.\n");
    expect_refused_untouched(dir / "notes.qlab", "not an SQLite database");
}

TEST(BadProjectFile, EmptyFile) {
    TempDir dir;
    write_bytes(dir / "empty.qlab", "");
    expect_refused_untouched(dir / "empty.qlab", "empty");
}

TEST(BadProjectFile, TruncatedInTheHeader) {
    TempDir dir;
    make_project(dir / "p.qlab", 10);
    write_bytes(dir / "cut.qlab", read_bytes(dir / "p.qlab").substr(0, 60));
    expect_refused_untouched(dir / "cut.qlab", "truncated");
}

TEST(BadProjectFile, TruncatedAfterTheHeader) {
    TempDir dir;
    make_project(dir / "p.qlab", 20000);
    const std::string whole = read_bytes(dir / "p.qlab");
    ASSERT_GT(whole.size(), 100000u);
    write_bytes(dir / "cut.qlab", whole.substr(0, whole.size() / 2));
    expect_refused_untouched(dir / "cut.qlab", "truncated");
}

TEST(BadProjectFile, AnotherApplicationsDatabase) {
    TempDir dir;
    sqlite3* db = nullptr;
    sqlite3_open((dir / "other.db").c_str(), &db);
    sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES (1); PRAGMA application_id = 1234;", nullptr, nullptr, nullptr);
    sqlite3_close(db);
    expect_refused_untouched(dir / "other.db", "another application");

    sqlite3_open((dir / "plain.db").c_str(), &db);
    sqlite3_exec(db, "CREATE TABLE t(x);", nullptr, nullptr, nullptr);
    sqlite3_close(db);
    expect_refused_untouched(dir / "plain.db", "not a QuantLab project");
}

TEST(BadProjectFile, NewerSchemaVersion) {
    TempDir dir;
    make_project(dir / "p.qlab", 10);
    sqlite3* db = nullptr;
    sqlite3_open((dir / "p.qlab").c_str(), &db);
    sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr);
    sqlite3_close(db);
    expect_refused_untouched(dir / "p.qlab", "newer");
    EXPECT_THROW(MetricWriter(dir / "p.qlab", 1), UserError);
    EXPECT_EQ(read_bytes(dir / "p.qlab").size(), fs::file_size(dir / "p.qlab"));
}

TEST(BadProjectFile, DamagedPagesAreReportedAsDamage) {
    TempDir dir;
    const fs::path file = dir / "p.qlab";
    const std::int64_t run = make_project(file, 20000);
    std::string bytes = read_bytes(file);
    const std::size_t page = 4096, middle = bytes.size() / page / 2 * page;
    bytes.replace(middle, page, std::string(page, '\xAB'));  // one page of a metric blob chain
    write_bytes(file, bytes);
    const ProjectFile p = ProjectFile::open(file, OpenMode::ReadOnly);  // the header is fine
    EXPECT_NE(p.integrity_check(), "ok");
    const std::string m = user_error([&] { p.load_series(run, "loss"); });
    EXPECT_TRUE(contains(m, "damaged")) << m;
    EXPECT_TRUE(contains(m, file.string())) << m;
}

// --- read-only locations --------------------------------------------------------------------

TEST(BadProjectFile, ReadOnlyFileIsRefusedForWritingAndOpenedReadOnlyWhenPreferred) {
    // chmod 0444 stops a normal user at the kernel; root would pass that check, so the library
    // also honours the permission bits themselves: the same file behaves the same for both.
    TempDir dir;
    const std::int64_t run = make_project(dir / "p.qlab", 100);
    fs::permissions(dir / "p.qlab", fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    const std::string before = read_bytes(dir / "p.qlab");

    const std::string m = user_error([&] { ProjectFile::open(dir / "p.qlab", OpenMode::ReadWrite); });
    EXPECT_TRUE(contains(m, "read-only")) << m;
    EXPECT_TRUE(contains(m, (dir / "p.qlab").string())) << m;
    EXPECT_THROW(MetricWriter(dir / "p.qlab", run), UserError);

    ProjectFile p = ProjectFile::open(dir / "p.qlab", OpenMode::PreferReadWrite);
    EXPECT_EQ(p.mode(), OpenMode::ReadOnly);
    EXPECT_TRUE(contains(p.read_only_reason(), "read-only")) << p.read_only_reason();
    EXPECT_EQ(p.load_series(run, "loss").size(), 100u);
    const std::string write_error = user_error([&] { p.add_note(std::nullopt, "x"); });
    EXPECT_TRUE(contains(write_error, "read-only")) << write_error;
    EXPECT_EQ(read_bytes(dir / "p.qlab"), before);
}

TEST(BadProjectFile, ReadOnlyFolderForAnUnprivilegedUser) {
    // The real case: a user who cannot write the folder, so SQLite cannot create FILE-wal and
    // FILE-shm. Run as root, the check switches to the 'nobody' user in a child process.
    TempDir dir;
    fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                    fs::perms::others_read | fs::perms::others_exec);
    fs::create_directories(dir / "ro");
    const std::int64_t run = make_project(dir / "ro/p.qlab", 3000);
    fs::permissions(dir / "ro", fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                    fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
    const fs::path file = dir / "ro/p.qlab";
    const std::string before = read_bytes(file);

    auto check = [&]() -> int {  // an exit code: 0 when everything behaved
        try {
            ProjectFile::open(file, OpenMode::ReadWrite);
            return 10;
        } catch (const UserError& e) {
            if (!contains(e.what(), "not writable")) return 11;
        }
        ProjectFile p = ProjectFile::open(file, OpenMode::PreferReadWrite);
        if (p.mode() != OpenMode::ReadOnly) return 12;
        if (p.load_series(run, "loss").size() != 3000u) return 13;
        ProjectFile q = ProjectFile::open(file, OpenMode::ReadOnly);
        if (q.runs().size() != 1u) return 14;
        return 0;
    };
    if (geteuid() != 0) {
        EXPECT_EQ(check(), 0);
    } else {
        const pid_t child = fork();
        ASSERT_GE(child, 0);
        if (child == 0) {
            if (setgid(65534) != 0 || setuid(65534) != 0) _exit(77);
            if (access(file.c_str(), R_OK) != 0) _exit(77);  // $TMPDIR below a private folder
            _exit(check());
        }
        int status = 0;
        waitpid(child, &status, 0);
        ASSERT_TRUE(WIFEXITED(status));
        if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "user nobody cannot be used or cannot reach " << file;
        EXPECT_EQ(WEXITSTATUS(status), 0) << "see the return codes in check()";
    }
    EXPECT_EQ(read_bytes(file), before);
}

// --- full disks -----------------------------------------------------------------------------

TEST(BadProjectFile, SizeLimitReachedWhileWritingMetricsKeepsEverythingCommitted) {
    TempDir dir;
    const fs::path file = dir / "p.qlab";
    const std::int64_t first = make_project(file, 5000);
    std::int64_t second = 0;
    {
        ProjectFile p = ProjectFile::open(file, OpenMode::ReadWrite);
        second = p.create_run(test::run_spec("qad"));
    }
    MetricWriter::Options options;
    options.open.max_file_bytes = static_cast<std::int64_t>(fs::file_size(file)) + 64 * 1024;
    std::string message;
    std::int64_t committed_steps = 0;
    {
        MetricWriter w(file, second, options);
        try {
            for (int round = 0; round < 1000; ++round) {
                for (int i = 0; i < 1000; ++i) w.append(round * 1000 + i, "loss", i);
                w.flush();
                committed_steps = (round + 1) * 1000;
            }
            FAIL() << "the size limit was never reached";
        } catch (const UserError& e) {
            message = e.what();
        }
        // Appending now reports the same failure instead of buffering without end.
        EXPECT_THROW(w.append(0, "loss", 0), UserError);
        EXPECT_THROW(w.finish(RunStatus::Completed), UserError);
    }
    EXPECT_TRUE(contains(message, "disk is full")) << message;
    EXPECT_TRUE(contains(message, file.string())) << message;
    EXPECT_GT(committed_steps, 0);

    ProjectFile p = ProjectFile::open(file, OpenMode::ReadWrite);
    EXPECT_EQ(p.integrity_check(), "ok");
    EXPECT_EQ(p.load_series(first, "loss").size(), 5000u);
    const MetricSeries s = p.load_series(second, "loss");
    ASSERT_GE(static_cast<std::int64_t>(s.size()), committed_steps);
    for (std::int64_t i = 0; i < committed_steps; ++i) ASSERT_EQ(s.steps[i], i);
    EXPECT_EQ(p.run(second).status, RunStatus::Failed);
    EXPECT_TRUE(contains(p.run(second).message, "could not be saved")) << p.run(second).message;
}

TEST(BadProjectFile, SizeLimitReachedByOtherWritesIsAClearErrorToo) {
    TempDir dir;
    const fs::path file = dir / "p.qlab";
    const std::int64_t run = make_project(file, 100);
    OpenOptions options;
    options.max_file_bytes = static_cast<std::int64_t>(fs::file_size(file));
    ProjectFile p = ProjectFile::open(file, OpenMode::ReadWrite, options);
    LayerStats big{"layer", "weight_histogram", 0, -1, 1, std::vector<float>(200000, 1.0f), "{}"};
    const std::string m = user_error([&] { p.add_layer_stats(run, {big}); });
    EXPECT_TRUE(contains(m, "disk is full")) << m;
    EXPECT_TRUE(p.layer_stats(run).empty());  // the failed transaction left nothing half-written
    EXPECT_EQ(p.load_series(run, "loss").size(), 100u);
    EXPECT_EQ(p.integrity_check(), "ok");
}

TEST(BadProjectFile, RealFullDiskOnASmallTmpfs) {
    // A real ENOSPC: a 1 MiB tmpfs, mounted in a private mount namespace of a child process so
    // nothing outside the test sees it. Skipped where mounting is not allowed.
    TempDir dir;
    const fs::path mount_point = dir / "small";
    fs::create_directories(mount_point);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        if (unshare(CLONE_NEWNS) != 0) _exit(77);
        if (mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) _exit(77);
        if (mount("tmpfs", mount_point.c_str(), "tmpfs", 0, "size=1m") != 0) _exit(77);
        const fs::path file = mount_point / "p.qlab";
        std::int64_t run = 0;
        std::int64_t committed = 0;
        try {
            ProjectFile p = ProjectFile::create(file);
            run = p.create_run(test::run_spec("qat"));
        } catch (...) {
            _exit(20);
        }
        bool full = false;
        try {
            MetricWriter w(file, run);
            for (int round = 0; round < 400; ++round) {
                for (int i = 0; i < 1000; ++i) w.append(round * 1000 + i, "loss", i);
                w.flush();
                committed = (round + 1) * 1000;
            }
        } catch (const UserError& e) {
            full = contains(e.what(), "disk is full");
        } catch (...) {
            _exit(21);
        }
        if (!full) _exit(22);
        if (committed == 0) _exit(23);
        try {
            ProjectFile p = ProjectFile::open(file, OpenMode::PreferReadWrite);
            if (p.integrity_check() != "ok") _exit(24);
            const MetricSeries s = p.load_series(run, "loss");
            if (static_cast<std::int64_t>(s.size()) < committed) _exit(25);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "reopen: %s\n", e.what());
            _exit(26);
        }
        _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "no permission to mount a tmpfs here";
    EXPECT_EQ(WEXITSTATUS(status), 0) << "see the exit codes in the child";
}

// --- moved projects -------------------------------------------------------------------------

TEST(BadProjectFile, MovedProjectFindsModelsMovedWithItAndNamesMissingOnes) {
    TempDir dir;
    fs::create_directories(dir / "a/models");
    fs::create_directories(dir / "shared");
    write_bytes(dir / "a/models/m.safetensors", "inside");
    write_bytes(dir / "shared/base.safetensors", "outside");
    std::int64_t inside = 0, outside = 0;
    {
        ProjectFile p = ProjectFile::create(dir / "a/p.qlab");
        inside = p.add_model("inside", dir / "a/models/m.safetensors");
        outside = p.add_model("outside", dir / "shared/base.safetensors");
    }
    fs::rename(dir / "a", dir / "b");
    ProjectFile p = ProjectFile::open(dir / "b/p.qlab", OpenMode::ReadWrite);
    EXPECT_EQ(p.model_path(inside), dir / "b/models/m.safetensors");
    EXPECT_EQ(fs::weakly_canonical(p.model_path(outside)), fs::weakly_canonical(dir / "shared/base.safetensors"));

    fs::remove(dir / "b/models/m.safetensors");
    const std::string m = user_error([&] { p.model_path(inside); });
    EXPECT_TRUE(contains(m, "inside")) << m;
    EXPECT_TRUE(contains(m, "models/m.safetensors")) << m;
    EXPECT_TRUE(contains(m, "relative to the project's folder")) << m;
    EXPECT_EQ(p.models().size(), 2u);  // the record itself is kept
}

}  // namespace
}  // namespace ql::projects
