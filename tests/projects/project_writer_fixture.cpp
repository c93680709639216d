// SPDX-License-Identifier: GPL-3.0-or-later
// A second process for the live-read and crash tests: creates a run in an existing project and
// appends metrics in a loop, as quantlab-cli does during a job.
//
//   quantlab_project_writer_fixture PROJECT POINTS SLEEP_US FLUSH_EVERY INTERVAL_MS
//
// Prints "run ID" once the run has started, "committed STEP" after each explicit flush (every
// FLUSH_EVERY steps; 0 = only the writer's own timer), and "done" at the end. Series "loss" has
// value step * 0.5, series "lr" 1 / (step + 1), so readers can check every point.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <thread>

#include "projects/metric_writer.h"
#include "projects/project_file.h"

int main(int argc, char** argv) {
    using namespace ql::projects;
    if (argc != 6) {
        std::fprintf(stderr, "usage: %s PROJECT POINTS SLEEP_US FLUSH_EVERY INTERVAL_MS\n", argv[0]);
        return 2;
    }
    try {
        const long long points = std::atoll(argv[2]);
        const long sleep_us = std::atol(argv[3]);
        const long long flush_every = std::atoll(argv[4]);
        MetricWriter::Options options;
        options.flush_interval = std::chrono::milliseconds(std::atol(argv[5]));

        std::int64_t run_id = 0;
        {
            ProjectFile project = ProjectFile::open(argv[1], OpenMode::ReadWrite);
            RunSpec spec;
            spec.kind = "fixture";
            spec.config_json = R"({"points": )" + std::to_string(points) + "}";
            run_id = project.create_run(spec);
        }
        MetricWriter writer(argv[1], run_id, options);
        std::printf("run %lld\n", static_cast<long long>(run_id));
        std::fflush(stdout);
        for (long long step = 0; step < points; ++step) {
            writer.append(step, "loss", static_cast<double>(step) * 0.5);
            writer.append(step, "lr", 1.0 / static_cast<double>(step + 1));
            if (flush_every > 0 && (step + 1) % flush_every == 0) {
                writer.flush();
                std::printf("committed %lld\n", step);
                std::fflush(stdout);
            }
            if (sleep_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
        }
        writer.finish(RunStatus::Completed, "fixture done");
        std::printf("done\n");
        std::fflush(stdout);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fixture: %s\n", e.what());
        return 1;
    }
}
