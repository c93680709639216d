// SPDX-License-Identifier: GPL-3.0-or-later
// The Job API (shared/design/ARCHITECTURE.md, "The Job API"): how every long operation
// (eval, demo training, calibration, PTQ, QAT, QAD, export) reports and is stopped.
//
//   void run_something(const Config& config, JobSink& sink, const CancellationToken& cancel);
//
// - The job reports through the sink: progress(done, total, phase), metric(step, name, value),
//   layer_metric(layer, name, value), log(level, text), artifact(kind, path). Sinks are called
//   from the job's thread; a GUI sink forwards through queued signals, the CLI sink prints.
// - It calls cancel.throw_if_cancelled() at least every ~100 ms of work (between batches, steps,
//   layers), which throws JobCancelled. Whatever the job wrote stays consistent (files are
//   written atomically), so the caller only reports the cancellation.
// - Failures are exceptions with context (UserError for bad input, see engine/core/errors.h).
// Plain C++ (facade header): usable from ui/ and app/.
#pragma once

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ql {

enum class LogLevel { Debug, Info, Warning, Error };

// Receives a job's reports. Every method has an empty default, so a sink overrides only what it
// shows. Methods may be called often (every batch): sinks coalesce or throttle themselves.
class JobSink {
public:
    virtual ~JobSink() = default;
    // `done` of `total` units of the current phase ("eval", "train", "save" ...); total 0 means
    // unknown. A new phase restarts the count.
    virtual void progress(int64_t /*done*/, int64_t /*total*/, const std::string& /*phase*/) {}
    // A scalar time series point: step is the job's own step counter (training step, batch).
    // Names are stable ("train/loss", "train/lr", "eval/exact_match" ...). NaN/Inf are reported
    // as they are: a NaN loss is an event, never dropped.
    virtual void metric(int64_t /*step*/, const std::string& /*name*/, double /*value*/) {}
    // A per-layer result ("output_sqnr_db", "weight_mse" ...) of an algorithm that works layer
    // by layer (PTQ, sensitivity); the GUI's layer table and the project's layer stats.
    virtual void layer_metric(const std::string& /*layer*/, const std::string& /*name*/, double /*value*/) {}
    virtual void log(LogLevel /*level*/, const std::string& /*text*/) {}
    // A file the job produced: kind "model", "checkpoint", "report" ...
    virtual void artifact(const std::string& /*kind*/, const std::string& /*path*/) {}
};

// A sink that ignores everything (tests, library callers that do not care).
class NullJobSink final : public JobSink {};

// Thrown by CancellationToken::throw_if_cancelled; callers report it as "cancelled", not as an
// error (the CLI exits with 130, like a shell killed by SIGINT).
class JobCancelled : public std::runtime_error {
public:
    JobCancelled() : std::runtime_error("cancelled") {}
};

// Set from any thread (GUI button, SIGINT handler: cancel() is async-signal-safe, a lock-free
// atomic store); read by the job.
class CancellationToken {
public:
    void cancel() noexcept { cancelled_.store(true, std::memory_order_relaxed); }
    void reset() noexcept { cancelled_.store(false, std::memory_order_relaxed); }
    bool cancelled() const noexcept { return cancelled_.load(std::memory_order_relaxed); }
    void throw_if_cancelled() const {
        if (cancelled()) throw JobCancelled();
    }

private:
    std::atomic<bool> cancelled_{false};
    static_assert(std::atomic<bool>::is_always_lock_free, "cancel() must be async-signal-safe");
};

}  // namespace ql
