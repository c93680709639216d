// SPDX-License-Identifier: GPL-3.0-or-later
// The single writer of one run: jobs append metric points (and layer statistics) from any
// thread; a background thread commits them in batches, one transaction per flush, at least
// every second, and updates the run's heartbeat so that readers (a GUI in another process) see
// the run progress live and a later open can tell whether the writer is still alive.
//
// Crash safety: a point is on disk once a flush that took it has committed. Killing the
// process loses at most the points appended since the last flush (≤ flush_interval); the file
// stays consistent, and the run is marked interrupted at the next read-write open.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "projects/layer_stats.h"
#include "projects/metric_chunk.h"
#include "projects/project_file.h"
#include "projects/run_record.h"

namespace ql::projects {

class MetricWriter {
public:
    struct Options {
        // How long an appended point may wait in memory; readers see it no later than this.
        std::chrono::milliseconds flush_interval{500};
        // Flush early once this many points wait, which bounds memory when a job logs fast.
        std::size_t flush_at_points = 1 << 16;
        OpenOptions open;  // e.g. max_file_bytes
    };

    // Opens `project` read-write with its own connection and starts run `run_id` (created,
    // interrupted or cancelled ones; completed and failed runs are final): status 'running',
    // this process recorded as its writer. A UserError if another live process writes it.
    MetricWriter(const std::filesystem::path& project, std::int64_t run_id, Options options);
    MetricWriter(const std::filesystem::path& project, std::int64_t run_id);
    // Without finish(): flushes and marks the run interrupted ("closed before it finished").
    ~MetricWriter();
    MetricWriter(const MetricWriter&) = delete;
    MetricWriter& operator=(const MetricWriter&) = delete;

    // Thread-safe and cheap (no I/O): the point waits for the next flush. wall_time is Unix
    // seconds, now when not given. NaN and ±Inf are recorded as they are. Throws the UserError
    // of a failed flush (e.g. disk full) until a later flush succeeds, so a job stops with that
    // message rather than buffering without end.
    void append(std::int64_t step, std::string_view name, double value);
    void append(std::int64_t step, std::string_view name, double value, double wall_time);
    void append_layer_stats(LayerStats stats);

    // Returns once everything appended before the call is committed; throws UserError if the
    // write failed (the points stay queued and are retried at the next flush).
    void flush();
    // Flushes, records the final status (completed, failed, cancelled or interrupted) with its
    // message, and stops the writer; appending afterwards is a programming error.
    void finish(RunStatus status, const std::string& message = {});

    std::int64_t run_id() const { return run_id_; }
    // The flush interval in force: Options::flush_interval clamped to [1 ms, 1 s].
    std::chrono::milliseconds flush_interval() const { return options_.flush_interval; }
    const std::filesystem::path& path() const { return project_.path(); }
    std::int64_t committed_points() const;

private:
    struct Pending {
        std::uint32_t series;  // index into series_names_
        std::int64_t step;
        double value;
        double wall_time;
    };
    // Writer-thread state of one series: its id in metric_names and its last, not yet full
    // chunk, rewritten in place until it holds kMetricChunkPoints points.
    struct SeriesState {
        std::int64_t name_id = 0;  // 0: not looked up yet
        std::int64_t next_seq = 0;
        std::optional<std::int64_t> tail_seq;  // the stored chunk `tail` mirrors, if any
        ChunkPoints tail;
    };
    struct Batch {
        std::vector<Pending> points;
        std::vector<LayerStats> stats;
        std::vector<std::string> names;  // series first named since the last successful flush
        std::uint64_t appended = 0;      // appended_ at that moment
    };

    void claim_run();
    void run_flush_thread();
    void write_batch(const Batch& batch, double now);
    void stop_thread();
    std::uint32_t series_index(std::string_view name);  // caller holds mutex_
    void throw_if_failed() const;                        // caller holds mutex_

    ProjectFile project_;  // the writer connection: used by the flush thread, then by finish()
    std::int64_t run_id_;
    Options options_;

    mutable std::mutex mutex_;
    std::condition_variable wake_;     // to the flush thread
    std::condition_variable flushed_;  // from the flush thread
    std::vector<Pending> pending_;
    std::vector<LayerStats> pending_stats_;
    std::unordered_map<std::string, std::uint32_t> series_index_;
    std::vector<std::string> series_names_;
    std::uint64_t appended_ = 0;   // points and stats appended so far
    std::uint64_t committed_ = 0;  // appended_ covered by the last successful flush
    std::uint64_t attempts_started_ = 0;   // flush attempts, numbered from 1
    std::uint64_t attempts_finished_ = 0;
    std::int64_t committed_points_ = 0;
    bool flush_requested_ = false;
    bool stopping_ = false;
    bool thread_done_ = false;
    bool finished_ = false;
    std::optional<std::string> error_;  // the last flush's failure, until one succeeds

    std::vector<SeriesState> series_;  // flush thread only
    double last_heartbeat_ = 0.0;      // flush thread only
    std::thread thread_;
};

}  // namespace ql::projects
