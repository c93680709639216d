// SPDX-License-Identifier: GPL-3.0-or-later
// A QuantLab project: one .qlab SQLite file that records models, recipes, runs, their metric
// series, per-layer statistics, artifacts and notes, so that work can be reopened, compared and
// re-run (docs/PROJECT_FILES.md has the schema and the guarantees).
//
// Concurrency: the file is in WAL mode. Any number of ProjectFile objects, in any processes on
// the same machine, may read it while one MetricWriter per run appends; readers never block the
// writer and see each commit as soon as it is made, so a GUI watches a run that quantlab-cli
// writes by polling load_series(run, name, after_step). A ProjectFile object is one SQLite
// connection and is not thread-safe: use one per thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "projects/experiment_records.h"
#include "projects/layer_stats.h"
#include "projects/metric_series.h"
#include "projects/project_records.h"
#include "projects/run_record.h"

namespace ql::projects {

class Connection;

enum class OpenMode {
    ReadOnly,         // never writes: watching a run, listing, exporting
    ReadWrite,        // a UserError if the file or its folder is read-only
    PreferReadWrite,  // read-write when the location allows it, else read-only; mode() tells
};

struct OpenOptions {
    // The largest size the file may grow to, in bytes (SQLite's max_page_count): writes beyond
    // it fail exactly as on a full disk. Unset: only the disk limits it.
    std::optional<std::int64_t> max_file_bytes;
    // A 'running' run written from another machine is taken as interrupted once its heartbeat
    // is this old (seconds). On this machine the writer's PID decides at once.
    double stale_heartbeat_s = 60.0;
};

class ProjectFile {
public:
    // Creates a new, empty project at `path` (its folder must exist; the file must not). The
    // file is built under a temporary name and linked into place complete, so a crash never
    // leaves a half-made project behind. Returns it opened read-write.
    static ProjectFile create(const std::filesystem::path& path, const OpenOptions& options = {});

    // Opens an existing project. Anything wrong gives a UserError naming the file and what is
    // wrong, and leaves the file as it was: missing, empty, not SQLite, truncated, another
    // application's database, a newer schema than this build knows, read-only when ReadWrite
    // was asked. Read-write opening upgrades an older schema (keeping a copy beside it, see
    // schema_migrations.h) and marks runs whose writer died as interrupted.
    static ProjectFile open(const std::filesystem::path& path, OpenMode mode, const OpenOptions& options = {});

    ProjectFile(ProjectFile&&) noexcept;
    ProjectFile& operator=(ProjectFile&&) noexcept;
    ~ProjectFile();

    const std::filesystem::path& path() const { return path_; }  // absolute
    std::filesystem::path folder() const { return path_.parent_path(); }
    OpenMode mode() const { return mode_; }  // ReadOnly or ReadWrite, never PreferReadWrite
    // Why the file was opened read-only under PreferReadWrite (empty otherwise).
    const std::string& read_only_reason() const { return read_only_reason_; }
    int schema_version() const { return schema_version_; }
    // Runs this open found 'running' with a dead writer and marked interrupted.
    const std::vector<std::int64_t>& interrupted_on_open() const { return interrupted_on_open_; }

    // "ok", or SQLite's description of every problem (PRAGMA integrity_check).
    std::string integrity_check() const;
    // A consistent copy of the whole project at `destination` (VACUUM INTO; must not exist).
    void save_copy(const std::filesystem::path& destination) const;

    // --- models ---------------------------------------------------------------------------
    // Hashes the file or folder at `path` (SHA-256) and records it; `path` inside the project's
    // folder is stored relative to it.
    std::int64_t add_model(const std::string& name, const std::filesystem::path& path,
                           const std::string& architecture_json = "{}");
    std::vector<ModelRecord> models() const;
    ModelRecord model(std::int64_t id) const;
    // Where the model is now; a UserError saying where it was looked for if it is not there.
    std::filesystem::path model_path(std::int64_t id) const;
    // Points a model at a new location; the content there must hash the same.
    void relink_model(std::int64_t id, const std::filesystem::path& new_path);

    // --- recipes --------------------------------------------------------------------------
    std::int64_t add_recipe(const std::string& name, const std::string& json);  // json: valid JSON text
    std::vector<RecipeRecord> recipes() const;
    RecipeRecord recipe(std::int64_t id) const;

    // --- runs -----------------------------------------------------------------------------
    // A new run with status 'created'; a MetricWriter starts it.
    std::int64_t create_run(const RunSpec& spec);
    std::vector<RunRecord> runs() const;
    RunRecord run(std::int64_t id) const;
    // Ends a run that has no MetricWriter (e.g. a job that failed before it started). Only
    // completed, failed, cancelled or interrupted; a run already completed or failed stays so.
    void set_run_status(std::int64_t id, RunStatus status, const std::string& message = {});
    // Points run `id` at a recipe added now (a plan a run made, e.g. an experiment's mixed
    // precision search): the run's recipe is what it ran with.
    void set_run_recipe(std::int64_t id, const std::string& recipe_name, const std::string& recipe_json);
    void delete_run(std::int64_t id);  // with its metrics, statistics, artifacts rows and notes
    // Copies run `run_id` of the project at `source` (may be this one) into this project with
    // its metrics, layer statistics, artifacts and notes, and the model and recipe it refers to
    // (reused when an identical one exists here). Returns the new run's id.
    std::int64_t copy_run_from(const std::filesystem::path& source, std::int64_t run_id);

    // --- metrics (written by MetricWriter) ------------------------------------------------
    std::vector<SeriesSummary> metric_summaries(std::int64_t run_id) const;
    // Points of one series with step > after_step (all when unset): a live view polls with the
    // last step it has. An unknown name gives an empty series.
    MetricSeries load_series(std::int64_t run_id, std::string_view name,
                             std::optional<std::int64_t> after_step = std::nullopt) const;
    std::vector<MetricSeries> load_metrics(std::int64_t run_id) const;  // every series, by name

    // --- per-layer statistics -------------------------------------------------------------
    void add_layer_stats(std::int64_t run_id, const std::vector<LayerStats>& stats);  // one transaction
    std::vector<LayerStats> layer_stats(std::int64_t run_id, const std::optional<std::string>& layer = std::nullopt) const;

    // --- artifacts ------------------------------------------------------------------------
    // Records an exported file (or folder) with its SHA-256 and size.
    std::int64_t add_artifact(std::optional<std::int64_t> run_id, const std::string& kind,
                              const std::filesystem::path& path);
    std::vector<ArtifactRecord> artifacts(std::optional<std::int64_t> run_id = std::nullopt) const;
    // Where the artifact is; a UserError if it is missing or its content changed.
    std::filesystem::path verified_artifact_path(std::int64_t id) const;

    // --- notes ----------------------------------------------------------------------------
    std::int64_t add_note(std::optional<std::int64_t> run_id, const std::string& text);
    void update_note(std::int64_t id, const std::string& text);
    std::vector<NoteRecord> notes(std::optional<std::int64_t> run_id = std::nullopt) const;

    // --- experiments (project_file_experiments.cpp, docs/EXPERIMENTS.md) -------------------
    // The experiment with this name and identity, created when missing; its spec is updated to
    // `spec_json` (the same identity may differ in replicates and prose).
    std::int64_t ensure_experiment(const std::string& name, const std::string& identity_sha256, const std::string& spec_json);
    void append_experiment_manifest(std::int64_t experiment_id, const std::string& manifest_json);
    std::vector<ExperimentRecord> experiments() const;  // by id
    ExperimentRecord experiment(std::int64_t id) const;
    // Claims a cell's replicate for this process (one write transaction): Done when it has a
    // result, Taken when another live process claimed it, else Claimed (a dead claimant's or a
    // failed run's claim is taken over).
    ExperimentClaim claim_experiment_run(std::int64_t experiment_id, const std::string& cell, std::int64_t replicate,
                                         std::int64_t seed);
    void set_experiment_run_id(std::int64_t experiment_id, const std::string& cell, std::int64_t replicate, std::int64_t run_id);
    // Records what the run measured (a JSON object) and drops the claim.
    void set_experiment_run_result(std::int64_t experiment_id, const std::string& cell, std::int64_t replicate,
                                   const std::string& result_json);
    // Drops this process's claim without a result (the run failed or was stopped).
    void release_experiment_run(std::int64_t experiment_id, const std::string& cell, std::int64_t replicate);
    std::vector<ExperimentRunRecord> experiment_runs(std::int64_t experiment_id) const;

private:
    friend class MetricWriter;  // shares the open logic and owns its own writer connection

    ProjectFile(std::filesystem::path path, OpenMode mode, OpenOptions options, std::unique_ptr<Connection> connection);
    Connection& connection() const { return *connection_; }
    void require_writable(std::string_view doing) const;
    void require_run(std::int64_t run_id) const;
    void mark_dead_writers_interrupted();

    std::filesystem::path path_;
    OpenMode mode_ = OpenMode::ReadOnly;
    OpenOptions options_;
    std::unique_ptr<Connection> connection_;
    std::string read_only_reason_;
    int schema_version_ = 0;
    std::vector<std::int64_t> interrupted_on_open_;
};

}  // namespace ql::projects
