// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/metric_writer.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>

#include "engine/core/errors.h"
#include "projects/process_identity.h"
#include "projects/sqlite_connection.h"
#include "projects/sqlite_statement.h"
#include "projects/sqlite_transaction.h"
#include "projects/wall_clock.h"

namespace ql::projects {

namespace {

// The heartbeat tells other processes the writer lives; once a second is what the issue asks
// of flushes, and what OpenOptions::stale_heartbeat_s is measured against.
constexpr double kHeartbeatSeconds = 1.0;

}  // namespace

MetricWriter::MetricWriter(const std::filesystem::path& project, std::int64_t run_id)
    : MetricWriter(project, run_id, Options{}) {}

MetricWriter::MetricWriter(const std::filesystem::path& project, std::int64_t run_id, Options options)
    : project_(ProjectFile::open(project, OpenMode::ReadWrite, options.open)), run_id_(run_id), options_(options) {
    // "At least every second": a longer interval would break the crash-safety promise.
    options_.flush_interval = std::clamp(options_.flush_interval, std::chrono::milliseconds(1), std::chrono::milliseconds(1000));
    options_.flush_at_points = std::max<std::size_t>(options_.flush_at_points, 1);
    claim_run();
    last_heartbeat_ = unix_time_now();
    thread_ = std::thread([this] { run_flush_thread(); });
}

MetricWriter::~MetricWriter() {
    bool finished = false;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        finished = finished_;
    }
    if (!finished) {
        try {
            finish(RunStatus::Interrupted, "the writer was closed before the run finished");
        } catch (...) {
            // Nothing more can be done here; the next read-write open sees a dead writer.
        }
    }
    stop_thread();
}

void MetricWriter::claim_run() {
    Connection& c = project_.connection();
    Transaction tx(c, "starting run " + std::to_string(run_id_));
    const RunRecord run = project_.run(run_id_);
    const std::string which = "run " + std::to_string(run_id_) + " of '" + project_.path().string() + "'";
    if (run.status == RunStatus::Completed || run.status == RunStatus::Failed)
        throw UserError(which + " has already ended (" + std::string(to_string(run.status)) + "); create a new run");
    if (run.status == RunStatus::Running && run.writer_alive)
        throw UserError(which + " is already being written by process " + std::to_string(run.writer_pid.value_or(0)) +
                        " on " + run.host);
    const ProcessIdentity me = current_process();
    Statement st(c, "UPDATE runs SET status = 'running', started_at = coalesce(started_at, ?2), ended_at = NULL, "
                    "writer_pid = ?3, writer_start_ticks = ?4, writer_machine = ?5, host = ?6, heartbeat_at = ?2, "
                    "message = '' WHERE id = ?1");
    st.bind_int64(1, run_id_).bind_double(2, unix_time_now()).bind_int64(3, me.pid).bind_int64(4, me.start_ticks);
    st.bind_text(5, me.machine).bind_text(6, me.host).run("starting " + which);
    tx.commit();
}

std::uint32_t MetricWriter::series_index(std::string_view name) {
    const std::string key(name);
    const auto it = series_index_.find(key);
    if (it != series_index_.end()) return it->second;
    const auto index = static_cast<std::uint32_t>(series_names_.size());
    series_names_.push_back(key);
    series_index_.emplace(key, index);
    return index;
}

void MetricWriter::throw_if_failed() const {
    if (error_) throw UserError(*error_);
}

void MetricWriter::append(std::int64_t step, std::string_view name, double value) {
    append(step, name, value, unix_time_now());
}

void MetricWriter::append(std::int64_t step, std::string_view name, double value, double wall_time) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (finished_) throw std::logic_error("MetricWriter::append after finish()");
    throw_if_failed();
    pending_.push_back({series_index(name), step, value, wall_time});
    ++appended_;
    const bool full = pending_.size() >= options_.flush_at_points;
    lock.unlock();
    if (full) wake_.notify_one();
}

void MetricWriter::append_layer_stats(LayerStats stats) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_) throw std::logic_error("MetricWriter::append_layer_stats after finish()");
    throw_if_failed();
    pending_stats_.push_back(std::move(stats));
    ++appended_;
}

void MetricWriter::flush() {
    std::unique_lock<std::mutex> lock(mutex_);
    const std::uint64_t target = appended_;
    // Wait for an attempt that starts after this call, so it takes every point appended so far
    // (including any re-queued by an earlier failure).
    const std::uint64_t attempt = attempts_started_ + 1;
    flush_requested_ = true;
    wake_.notify_one();
    flushed_.wait(lock, [&] { return attempts_finished_ >= attempt || thread_done_; });
    if (committed_ >= target) return;
    if (error_) throw UserError(*error_);
    throw std::logic_error("MetricWriter::flush after the writer stopped");
}

std::int64_t MetricWriter::committed_points() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return committed_points_;
}

void MetricWriter::stop_thread() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void MetricWriter::run_flush_thread() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        wake_.wait_for(lock, options_.flush_interval, [&] {
            // After a failure only the timer retries, or a failing disk would be hammered.
            return stopping_ || flush_requested_ || (pending_.size() >= options_.flush_at_points && !error_);
        });
        Batch batch;
        batch.points.swap(pending_);
        batch.stats.swap(pending_stats_);
        batch.names.assign(series_names_.begin() + static_cast<std::ptrdiff_t>(series_.size()), series_names_.end());
        batch.appended = appended_;
        flush_requested_ = false;
        ++attempts_started_;
        const bool stop = stopping_;
        lock.unlock();

        const double now = unix_time_now();
        std::optional<std::string> failure;
        if (!batch.points.empty() || !batch.stats.empty() || now - last_heartbeat_ >= kHeartbeatSeconds) {
            try {
                write_batch(batch, now);
                last_heartbeat_ = now;
            } catch (const std::exception& e) {
                failure = e.what();
            }
        }

        lock.lock();
        ++attempts_finished_;
        if (failure) {
            // Keep the batch, in order, ahead of what came meanwhile; the next flush retries it.
            error_ = failure;
            pending_.insert(pending_.begin(), batch.points.begin(), batch.points.end());
            pending_stats_.insert(pending_stats_.begin(), std::make_move_iterator(batch.stats.begin()),
                                  std::make_move_iterator(batch.stats.end()));
        } else {
            error_.reset();
            committed_ = batch.appended;
            committed_points_ += static_cast<std::int64_t>(batch.points.size());
        }
        if (stop) {
            thread_done_ = true;
            flushed_.notify_all();
            return;
        }
        flushed_.notify_all();
    }
}

void MetricWriter::write_batch(const Batch& batch, double now) {
    Connection& c = project_.connection();
    const std::string doing = "saving metrics of run " + std::to_string(run_id_);
    Transaction tx(c, doing);

    // Work on a copy of the series state and keep it only if the transaction commits, so a
    // failed flush leaves memory matching the file.
    std::vector<SeriesState> next = series_;
    if (!batch.names.empty()) {
        Statement add_name(c, "INSERT OR IGNORE INTO metric_names(name) VALUES (?1)");
        Statement find_name(c, "SELECT id FROM metric_names WHERE name = ?1");
        Statement last_chunk(c, "SELECT seq, point_count, points FROM metric_chunks WHERE run_id = ?1 AND name_id = ?2 "
                                "ORDER BY seq DESC LIMIT 1");
        for (const std::string& name : batch.names) {
            SeriesState s;
            add_name.bind_text(1, name).run(doing);
            find_name.bind_text(1, name);
            if (!find_name.step(doing)) throw std::runtime_error("metric name vanished: " + name);
            s.name_id = find_name.column_int64(0);
            find_name.reset();
            // A resumed run continues the series it already has, filling its last chunk.
            last_chunk.bind_int64(1, run_id_).bind_int64(2, s.name_id);
            if (last_chunk.step(doing)) {
                const std::int64_t seq = last_chunk.column_int64(0), count = last_chunk.column_int64(1);
                s.next_seq = seq + 1;
                if (count < static_cast<std::int64_t>(kMetricChunkPoints)) {
                    std::size_t bytes = 0;
                    const void* blob = last_chunk.column_blob(2, bytes);
                    decode_metric_chunk(blob, bytes, count, s.tail, project_.path());
                    s.tail_seq = seq;
                }
            }
            last_chunk.reset();
            next.push_back(std::move(s));
        }
    }

    std::vector<bool> touched(next.size(), false);
    for (const Pending& p : batch.points) {
        ChunkPoints& tail = next[p.series].tail;
        tail.steps.push_back(p.step);
        tail.values.push_back(p.value);
        tail.wall_times.push_back(p.wall_time);
        touched[p.series] = true;
    }

    Statement insert(c, "INSERT INTO metric_chunks(run_id, name_id, seq, point_count, min_step, max_step, points) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    Statement update(c, "UPDATE metric_chunks SET point_count = ?4, min_step = ?5, max_step = ?6, points = ?7 "
                        "WHERE run_id = ?1 AND name_id = ?2 AND seq = ?3");
    for (std::size_t s = 0; s < next.size(); ++s) {
        if (!touched[s]) continue;
        SeriesState& state = next[s];
        const std::size_t n = state.tail.size();
        std::size_t begin = 0;
        std::int64_t last_seq = 0;
        std::size_t last_count = 0;
        while (begin < n) {
            const std::size_t count = std::min(kMetricChunkPoints, n - begin);
            const auto first = state.tail.steps.begin() + static_cast<std::ptrdiff_t>(begin);
            const auto [lo, hi] = std::minmax_element(first, first + static_cast<std::ptrdiff_t>(count));
            const std::vector<unsigned char> blob = encode_metric_chunk(state.tail, begin, count);
            // The first chunk is the stored tail when there is one: rewrite it in place.
            const bool rewrite = begin == 0 && state.tail_seq.has_value();
            Statement& st = rewrite ? update : insert;
            last_seq = rewrite ? *state.tail_seq : state.next_seq++;
            st.bind_int64(1, run_id_).bind_int64(2, state.name_id).bind_int64(3, last_seq);
            st.bind_int64(4, static_cast<std::int64_t>(count)).bind_int64(5, *lo).bind_int64(6, *hi);
            st.bind_blob(7, blob.data(), blob.size()).run(doing);
            begin += count;
            last_count = count;
        }
        // Keep the last chunk in memory while it is not full, to extend it at the next flush.
        ChunkPoints rest;
        if (last_count < kMetricChunkPoints) {
            const auto from = static_cast<std::ptrdiff_t>(n - last_count);
            rest.steps.assign(state.tail.steps.begin() + from, state.tail.steps.end());
            rest.values.assign(state.tail.values.begin() + from, state.tail.values.end());
            rest.wall_times.assign(state.tail.wall_times.begin() + from, state.tail.wall_times.end());
            state.tail_seq = last_seq;
        } else {
            state.tail_seq.reset();
        }
        state.tail = std::move(rest);
    }

    if (!batch.stats.empty()) {
        Statement st(c, "INSERT INTO layer_stats(run_id, layer, kind, step, data, outliers, created_at) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
        for (const LayerStats& s : batch.stats) {
            const std::vector<unsigned char> blob = encode_layer_stats_blob(s);
            st.bind_int64(1, run_id_).bind_text(2, s.layer).bind_text(3, s.kind).bind_int64(4, s.step);
            st.bind_blob(5, blob.data(), blob.size()).bind_text(6, s.outliers_json).bind_double(7, now);
            st.run(doing);
        }
    }

    Statement heartbeat(c, "UPDATE runs SET heartbeat_at = ?2 WHERE id = ?1");
    heartbeat.bind_int64(1, run_id_).bind_double(2, now).run(doing);
    tx.commit();
    series_ = std::move(next);
}

void MetricWriter::finish(RunStatus status, const std::string& message) {
    if (status == RunStatus::Created || status == RunStatus::Running)
        throw std::invalid_argument("MetricWriter::finish needs a final status");
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (finished_) throw std::logic_error("MetricWriter::finish called twice");
        finished_ = true;
    }
    stop_thread();  // its last attempt flushes what is pending
    std::optional<std::string> flush_error;
    std::size_t lost = 0;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        flush_error = error_;
        lost = pending_.size() + pending_stats_.size();
    }
    // A run whose last points could not be saved did not complete as recorded.
    std::string text = message;
    if (flush_error) {
        status = RunStatus::Failed;
        text = "the last " + std::to_string(lost) + " metric points could not be saved: " + *flush_error;
    }
    Connection& c = project_.connection();
    Transaction tx(c, "ending run " + std::to_string(run_id_));
    Statement st(c, "UPDATE runs SET status = ?2, message = ?3, ended_at = ?4, heartbeat_at = ?4 WHERE id = ?1");
    st.bind_int64(1, run_id_).bind_text(2, to_string(status)).bind_text(3, text).bind_double(4, unix_time_now());
    st.run("ending run " + std::to_string(run_id_));
    tx.commit();
    if (flush_error) throw UserError(*flush_error + " (" + std::to_string(lost) + " metric points of run " +
                                     std::to_string(run_id_) + " were not saved)");
}

}  // namespace ql::projects
