// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/cli/cli_job_sink.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>

#include "engine/core/job_estimate.h"
#include "engine/core/process_memory.h"
#include "engine/jobs/ptq_progress.h"

namespace ql::cli {

std::string format_duration(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return "?";
    const long s = std::lround(seconds);
    char buf[32];
    if (s >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
    else std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
    return buf;
}

CliJobSink::CliJobSink(bool quiet) : tty_(isatty(STDERR_FILENO) == 1), quiet_(quiet) {}

CliJobSink::~CliJobSink() { finish_line(); }

void CliJobSink::finish_line() {
    if (line_open_) std::fputc('\n', stderr);
    line_open_ = false;
}

void CliJobSink::progress(int64_t done, int64_t total, const std::string& phase) {
    if (quiet_) return;
    const auto now = Clock::now();
    if (phase != phase_) {
        finish_line();
        phase_ = phase;
        phase_start_ = now;
        last_print_ = Clock::time_point{};
        last_decile_ = -1;
    }
    const double elapsed = std::chrono::duration<double>(now - phase_start_).count();
    const bool complete = total > 0 && done >= total;
    std::string line = "[" + phase + "] ";
    if (phase == "ptq" && ptq_progress_counts_parts(total)) {
        // A layer-by-layer PTQ counts thousandths of a block: the block in progress, of all.
        line += "block " + std::to_string(ptq_progress_part(done, total)) + "/" + std::to_string(ptq_progress_parts(total));
    } else {
        line += std::to_string(done);
        if (total > 0) line += "/" + std::to_string(total);
    }
    if (total > 0) {
        char pct[32];
        std::snprintf(pct, sizeof pct, " %3.0f%%", 100.0 * double(done) / double(total));
        line += pct;
        if (done > 0 && !complete && elapsed >= 1.0) line += "  ETA " + format_duration(elapsed * double(total - done) / double(done));
    }
    line += "  " + format_duration(elapsed);
    for (const auto& [name, value] : latest_) {
        char v[64];
        std::snprintf(v, sizeof v, "  %s %.4g", name.c_str(), value);
        line += v;
    }
    // The memory lane: this process's resident memory beside the progress (mapped weights
    // included), so a run heading for the machine's limit shows it before the kernel acts.
    auto with_memory = [&line]() {
        const ProcessMemory m = process_memory();
        if (m.rss_bytes > 0) line += "  RSS " + memory_text(static_cast<double>(m.rss_bytes));
    };
    if (tty_) {
        if (!complete && now - last_print_ < std::chrono::milliseconds(100)) return;
        last_print_ = now;
        with_memory();
        std::fprintf(stderr, "\r\033[K%s", line.c_str());
        line_open_ = true;
        if (complete) finish_line();
    } else {
        const int decile = total > 0 ? static_cast<int>(10 * done / total) : -1;
        const bool first = last_decile_ < 0;
        if (!complete && !first && (decile <= last_decile_ || now - last_print_ < std::chrono::seconds(5))) return;
        last_decile_ = std::max(decile, 0);
        last_print_ = now;
        with_memory();
        std::fprintf(stderr, "%s\n", line.c_str());
    }
    std::fflush(stderr);
}

void CliJobSink::metric(int64_t /*step*/, const std::string& name, double value) {
    // Only the headline numbers go beside the progress bar; the rest are for plots.
    if (name == "train/loss") latest_["loss"] = value;
    else if (name == "train/kl") latest_["kl"] = value;
    else if (name == "eval/exact_match") latest_["held-out exact"] = value;
}

void CliJobSink::log(LogLevel level, const std::string& text) {
    if (level == LogLevel::Debug || (quiet_ && level == LogLevel::Info)) return;
    finish_line();
    const char* prefix = level == LogLevel::Error ? "error: " : level == LogLevel::Warning ? "warning: " : "";
    std::fprintf(stderr, "quantlab-cli: %s%s\n", prefix, text.c_str());
}

namespace {

CancellationToken* g_token = nullptr;
struct sigaction g_old_int, g_old_term;

void on_signal(int sig) {
    if (g_token) g_token->cancel();
    // A second signal takes the default action (terminate).
    std::signal(sig, SIG_DFL);
}

}  // namespace

CancelOnSignal::CancelOnSignal(CancellationToken& token) {
    g_token = &token;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &g_old_int);
    sigaction(SIGTERM, &sa, &g_old_term);
}

CancelOnSignal::~CancelOnSignal() {
    sigaction(SIGINT, &g_old_int, nullptr);
    sigaction(SIGTERM, &g_old_term, nullptr);
    g_token = nullptr;
}

}  // namespace ql::cli
