// SPDX-License-Identifier: GPL-3.0-or-later
// The CLI's JobSink: progress on stderr (a live line with percentage and ETA when stderr is a
// terminal; otherwise a line every 10 % at most every 5 s, so logs stay short), log lines, and
// Ctrl-C wired to the job's cancellation token.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "engine/jobs/job.h"

namespace ql::cli {

class CliJobSink : public JobSink {
public:
    explicit CliJobSink(bool quiet = false);
    ~CliJobSink() override;

    void progress(int64_t done, int64_t total, const std::string& phase) override;
    void metric(int64_t step, const std::string& name, double value) override;
    void log(LogLevel level, const std::string& text) override;

    // Ends a live progress line (call before printing results).
    void finish_line();

private:
    using Clock = std::chrono::steady_clock;
    bool tty_;
    bool quiet_;
    bool line_open_ = false;
    std::string phase_;
    Clock::time_point phase_start_, last_print_;
    int last_decile_ = -1;
    std::map<std::string, double> latest_;  // last train/loss etc., shown beside the progress
};

// Installs a SIGINT/SIGTERM handler that cancels `token` (a second Ctrl-C kills the process
// the usual way); the previous handlers come back when this object goes away.
class CancelOnSignal {
public:
    explicit CancelOnSignal(CancellationToken& token);
    ~CancelOnSignal();
    CancelOnSignal(const CancelOnSignal&) = delete;
    CancelOnSignal& operator=(const CancelOnSignal&) = delete;
};

// "1:05" / "12:03:09"
std::string format_duration(double seconds);

}  // namespace ql::cli
