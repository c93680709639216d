// SPDX-License-Identifier: GPL-3.0-or-later
// Project files (docs/PROJECT_FILES.md): how fast a job can record metric points, and how fast
// a plot loads one run's 1 M points. Targets from issue 6: ≥ 200 k points/s batched and
// ≤ 200 ms per 1 M-point load. The files live in $TMPDIR (or /tmp) and are removed at exit.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "projects/metric_writer.h"
#include "projects/project_file.h"

namespace {

namespace fs = std::filesystem;
using ql::projects::MetricWriter;
using ql::projects::OpenMode;
using ql::projects::ProjectFile;
using ql::projects::RunStatus;

// One scratch folder for the whole process.
class BenchFolder {
public:
    BenchFolder() {
        const char* base = std::getenv("TMPDIR");
        std::string pattern = std::string(base && *base ? base : "/tmp") + "/quantlab-bench-XXXXXX";
        if (!::mkdtemp(pattern.data())) std::abort();
        path_ = pattern;
    }
    ~BenchFolder() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    const fs::path& path() const { return path_; }

private:
    fs::path path_;
};

const fs::path& folder() {
    static const BenchFolder f;
    return f.path();
}

constexpr std::int64_t kLoadPoints = 1'000'000;

ql::projects::RunSpec bench_run() {
    ql::projects::RunSpec spec;
    spec.kind = "bench";
    return spec;
}

// Appends points to a new run through MetricWriter, as a training loop does (four series
// interleaved, the wall clock read per point), and counts them only once flushed to disk.
void BM_ProjectInsertMetrics(benchmark::State& state) {
    const std::int64_t points = state.range(0);
    const fs::path file = folder() / "insert.qlab";
    if (!fs::exists(file)) ProjectFile::create(file);
    ProjectFile project = ProjectFile::open(file, OpenMode::ReadWrite);
    static const char* const names[] = {"loss", "kl", "lr", "grad_norm"};
    for (auto _ : state) {
        state.PauseTiming();
        const std::int64_t run = project.create_run(bench_run());
        state.ResumeTiming();
        MetricWriter writer(file, run);
        for (std::int64_t i = 0; i < points; ++i)
            writer.append(i / 4, names[i % 4], std::sin(static_cast<double>(i)));
        writer.finish(RunStatus::Completed);
    }
    state.SetItemsProcessed(state.iterations() * points);
}
BENCHMARK(BM_ProjectInsertMetrics)->Arg(200'000)->Unit(benchmark::kMillisecond)->UseRealTime();

// A project with one completed run of kLoadPoints "loss" points, made on first use.
const fs::path& load_file() {
    static const fs::path file = [] {
        const fs::path f = folder() / "load.qlab";
        ProjectFile p = ProjectFile::create(f);
        const std::int64_t id = p.create_run(bench_run());
        MetricWriter writer(f, id);
        for (std::int64_t i = 0; i < kLoadPoints; ++i) writer.append(i, "loss", 1.0 / static_cast<double>(i + 1));
        writer.finish(RunStatus::Completed);
        return f;
    }();
    return file;
}

// Loads one series of 1 M points from a completed run, as the plot of a finished run does.
void BM_ProjectLoadRunSeries(benchmark::State& state) {
    const ProjectFile reader = ProjectFile::open(load_file(), OpenMode::ReadOnly);
    const std::int64_t run = reader.runs().front().id;
    for (auto _ : state) {
        const auto series = reader.load_series(run, "loss");
        if (static_cast<std::int64_t>(series.size()) != kLoadPoints) state.SkipWithError("wrong point count");
        benchmark::DoNotOptimize(series.values.data());
    }
    state.SetItemsProcessed(state.iterations() * kLoadPoints);
}
BENCHMARK(BM_ProjectLoadRunSeries)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same with a fresh read-only open each time: what a plot pays when a project is opened.
void BM_ProjectOpenAndLoadRunSeries(benchmark::State& state) {
    const fs::path& file = load_file();
    for (auto _ : state) {
        const ProjectFile reader = ProjectFile::open(file, OpenMode::ReadOnly);
        const auto series = reader.load_series(reader.runs().front().id, "loss");
        benchmark::DoNotOptimize(series.values.data());
    }
    state.SetItemsProcessed(state.iterations() * kLoadPoints);
}
BENCHMARK(BM_ProjectOpenAndLoadRunSeries)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
