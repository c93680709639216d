// SPDX-License-Identifier: GPL-3.0-or-later
// `quantlab-cli project …` as scripts call it: the real binary in a subprocess.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "projects/metric_writer.h"
#include "projects/project_file.h"
#include "tests/build_paths.h"
#include "tests/projects/test_support.h"

namespace ql::projects {
namespace {

struct Result {
    int exit_code = 0;
    std::string out;
};

Result cli(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {ql::test::quantlab_cli()};
    argv.insert(argv.end(), args.begin(), args.end());
    test::ChildProcess child(argv);
    Result r;
    while (const auto line = child.read_line(std::chrono::seconds(60))) r.out += *line + "\n";
    r.exit_code = child.wait();
    return r;
}

std::int64_t add_run(const std::filesystem::path& file) {
    ProjectFile p = ProjectFile::open(file, OpenMode::ReadWrite);
    const std::int64_t run = p.create_run(test::run_spec("qat", "cli test"));
    MetricWriter w(file, run);
    for (int i = 0; i < 3; ++i) {
        w.append(i, "loss", 4.0 - i, 1700000000.0 + i);
        w.append(i, "lr", 0.5, 1700000000.0 + i);
    }
    w.finish(RunStatus::Completed);
    return run;
}

TEST(ProjectCli, NewRunsAndMetrics) {
    test::TempDir dir;
    const std::string file = (dir / "p.qlab").string();
    ASSERT_EQ(cli({"project", "new", file}).exit_code, 0);
    EXPECT_TRUE(std::filesystem::exists(file));
    EXPECT_EQ(cli({"project", "new", file}).exit_code, 1);  // exists already

    const std::int64_t run = add_run(file);
    const Result table = cli({"project", "runs", file});
    EXPECT_EQ(table.exit_code, 0);
    EXPECT_NE(table.out.find("completed"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("cli test"), std::string::npos) << table.out;

    const Result json = cli({"project", "runs", file, "--json"});
    ASSERT_EQ(json.exit_code, 0);
    const auto j = nlohmann::json::parse(json.out);
    ASSERT_EQ(j["runs"].size(), 1u);
    EXPECT_EQ(j["runs"][0]["id"], run);
    EXPECT_EQ(j["runs"][0]["status"], "completed");
    EXPECT_EQ(j["runs"][0]["kind"], "qat");
    EXPECT_EQ(j["runs"][0]["metric_points"], 6);

    const Result csv = cli({"project", "metrics", file, "--run", std::to_string(run), "--csv", "--name", "loss"});
    ASSERT_EQ(csv.exit_code, 0);
    const std::string r = std::to_string(run);
    EXPECT_EQ(csv.out, "run,name,step,value,wall_time\n" + r + ",loss,0,4,1700000000\n" + r +
                           ",loss,1,3,1700000001\n" + r + ",loss,2,2,1700000002\n");

    const Result mjson = cli({"project", "metrics", file, "--run", r, "--json"});
    ASSERT_EQ(mjson.exit_code, 0);
    EXPECT_EQ(nlohmann::json::parse(mjson.out)["metrics"].size(), 2u);

    const Result summary = cli({"project", "metrics", file, "--run", r});
    ASSERT_EQ(summary.exit_code, 0);
    EXPECT_NE(summary.out.find("loss"), std::string::npos) << summary.out;

    EXPECT_EQ(cli({"project", "check", file}).exit_code, 0);
}

TEST(ProjectCli, CopyRun) {
    test::TempDir dir;
    const std::string a = (dir / "a.qlab").string(), b = (dir / "b.qlab").string();
    ASSERT_EQ(cli({"project", "new", a}).exit_code, 0);
    ASSERT_EQ(cli({"project", "new", b}).exit_code, 0);
    const std::int64_t run = add_run(a);
    ASSERT_EQ(cli({"project", "copy-run", a, "--run", std::to_string(run), b}).exit_code, 0);
    EXPECT_EQ(ProjectFile::open(b, OpenMode::ReadOnly).load_series(1, "loss").size(), 3u);
}

TEST(ProjectCli, BadInputExitsWithOne) {
    test::TempDir dir;
    const std::string file = (dir / "p.qlab").string();
    test::write_bytes(file, "not a database");
    EXPECT_EQ(cli({"project", "runs", file}).exit_code, 1);
    EXPECT_EQ(cli({"project", "runs", (dir / "missing.qlab").string()}).exit_code, 1);
    EXPECT_EQ(cli({"project", "metrics", file}).exit_code, 1);  // no --run
    EXPECT_EQ(cli({"project", "frobnicate"}).exit_code, 1);
    EXPECT_EQ(cli({"project"}).exit_code, 1);
    EXPECT_EQ(test::read_bytes(file), "not a database");
}

}  // namespace
}  // namespace ql::projects
