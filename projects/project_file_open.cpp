// SPDX-License-Identifier: GPL-3.0-or-later
// ProjectFile: creating, opening and checking the file; everything that decides whether and how
// a file may be used happens here, before SQLite is allowed to write to it.
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "engine/core/errors.h"
#include "projects/process_identity.h"
#include "projects/project_file.h"
#include "projects/schema_migrations.h"
#include "projects/sqlite_connection.h"
#include "projects/sqlite_statement.h"
#include "projects/sqlite_transaction.h"
#include "projects/wall_clock.h"

#ifndef QUANTLAB_VERSION
#define QUANTLAB_VERSION ""
#endif

namespace ql::projects {

namespace fs = std::filesystem;

namespace {

constexpr int kOpenFlags = SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX;

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

std::uint32_t be32(const unsigned char* p) {
    return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

std::uintmax_t size_or_zero(const fs::path& p) {
    std::error_code ec;
    const auto n = fs::file_size(p, ec);
    return ec ? 0 : n;
}

// What a stat() tells before SQLite opens the file: that it exists, is a regular file and is not
// empty (SQLite would happily make an empty file a new database). Returns its size in bytes.
std::uintmax_t check_file(const fs::path& file) {
    std::error_code ec;
    const fs::file_status status = fs::status(file, ec);
    if (ec || !fs::exists(status)) throw UserError("project file " + quoted(file) + " does not exist");
    if (!fs::is_regular_file(status)) throw UserError(quoted(file) + " is not a file, so not a QuantLab project");
    const std::uintmax_t size = fs::file_size(file, ec);
    if (ec) throw UserError("cannot read " + quoted(file) + ": " + ec.message());
    if (size == 0) throw UserError(quoted(file) + " is empty, not a QuantLab project");
    return size;
}

// Checks what the header alone tells, before SQLite reads the file: that it is an SQLite
// database at all, and that it is as long as its header says (sqlite.org/fileformat.html §1.3).
// A WAL with content may legitimately hold pages beyond the file's end, so the length check
// only applies when there is none. The bytes come through the connection's own descriptor
// (see Connection::read_file_start for why never through a second one).
void check_header(const Connection& c, const fs::path& file, std::uintmax_t size) {
    unsigned char header[100] = {};
    if (!c.read_file_start(header, sizeof header)) throw UserError("cannot read " + quoted(file) + ": input/output error");
    static const char magic[16] = "SQLite format 3";  // with its terminating NUL, as in the file
    const std::size_t got = static_cast<std::size_t>(std::min<std::uintmax_t>(size, sizeof header));
    if (std::memcmp(header, magic, std::min<std::size_t>(got, 16)) != 0)
        throw UserError(quoted(file) + " is not a QuantLab project: not an SQLite database");
    if (got < sizeof header)
        throw UserError(quoted(file) + " is truncated: " + std::to_string(size) + " bytes, shorter than an SQLite header");

    const std::uint32_t raw_page_size = header[16] * 256u + header[17];
    const std::uint32_t page_size = raw_page_size == 1 ? 65536u : raw_page_size;  // 1 encodes 65536
    const std::uint32_t change_counter = be32(header + 24), page_count = be32(header + 28);
    const std::uint32_t valid_for = be32(header + 92);
    fs::path wal = file;
    wal += "-wal";
    if (size_or_zero(wal) == 0 && valid_for == change_counter && page_count > 0 &&
        size < std::uintmax_t{page_count} * page_size)
        throw UserError(quoted(file) + " is truncated: its header says " +
                        std::to_string(std::uintmax_t{page_count} * page_size) + " bytes, the file has " +
                        std::to_string(size) + ". Restore it from a copy");
}

bool has_write_bits(const fs::path& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && (st.st_mode & 0222) != 0;
}

// Why the file cannot be written, or "" when it can. Permission bits are honoured even for root
// (who may write anything): a project marked read-only (chmod a-w) is treated as read-only, as
// editors do, so the same file behaves the same for every user.
std::string why_read_only(const fs::path& file) {
    const fs::path folder = file.parent_path();
    if (::access(file.c_str(), W_OK) != 0)
        return "the file is not writable (" + std::string(std::strerror(errno)) + ")";
    if (!has_write_bits(file)) return "the file is marked read-only (no write permission)";
    // SQLite creates FILE-wal and FILE-shm beside the file for every writer.
    if (::access(folder.c_str(), W_OK) != 0)
        return "its folder " + quoted(folder) + " is not writable (" + std::string(std::strerror(errno)) +
               "), and SQLite needs to create the -wal and -shm files there";
    if (!has_write_bits(folder)) return "its folder " + quoted(folder) + " is marked read-only (no write permission)";
    return {};
}

// The first statement is where SQLite reads the file, so its code tells whether a read-only
// WAL database is readable at all (it is not when FILE-shm is missing and cannot be created).
int probe(Connection& connection) {
    sqlite3_stmt* st = nullptr;
    int rc = sqlite3_prepare_v2(connection.handle(), "SELECT count(*) FROM sqlite_master", -1, &st, nullptr);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    return rc;
}

Connection open_read_only(const fs::path& file, std::uintmax_t size) {
    // Where the file and its folder are writable, a reader opens the file read-write (and the
    // project sets query_only): a WAL reader must be able to create FILE-shm. Opened with
    // mode=ro between two writers' connections (no -shm, empty WAL) it would fall back to
    // immutable below and never see the points a writer (quantlab-cli, another GUI) adds later.
    if (why_read_only(file).empty()) {
        Connection rw(file, sqlite_file_uri(file), SQLITE_OPEN_READWRITE | kOpenFlags);
        // A reader that is the last to close must not checkpoint: read-only never writes the file.
        sqlite3_db_config(rw.handle(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
        check_header(rw, file, size);
        const int rc = probe(rw);
        if (rc == SQLITE_OK) return rw;
        rw.fail(rc, "reading it");
    }
    Connection c(file, sqlite_file_uri(file, "mode=ro"), SQLITE_OPEN_READONLY | kOpenFlags);
    check_header(c, file, size);
    const int rc = probe(c);
    if (rc == SQLITE_OK) return c;
    fs::path wal = file;
    wal += "-wal";
    const int primary = rc & 0xff;
    if ((primary == SQLITE_READONLY || primary == SQLITE_CANTOPEN) && size_or_zero(wal) == 0) {
        // A read-only folder without FILE-shm: nobody can be writing (a writer needs the folder),
        // and no WAL holds pages, so the file alone is the whole database and may be read as
        // immutable (https://sqlite.org/uri.html#uriimmutable).
        Connection immutable(file, sqlite_file_uri(file, "immutable=1"), SQLITE_OPEN_READONLY | kOpenFlags);
        const int rc2 = probe(immutable);
        if (rc2 == SQLITE_OK) return immutable;
        immutable.fail(rc2, "reading it");
    }
    c.fail(rc, "reading it");
}

void check_identity(Connection& c, const fs::path& file) {
    const std::int64_t application_id = c.query_int("PRAGMA application_id", "reading its header");
    if (application_id == kProjectApplicationId) return;
    const std::int64_t tables = c.query_int("SELECT count(*) FROM sqlite_master", "reading its schema");
    if (application_id == 0 && tables == 0)
        throw UserError(quoted(file) + " is an empty SQLite database, not a QuantLab project "
                        "(create one with 'quantlab-cli project new')");
    char id[16];
    std::snprintf(id, sizeof id, "0x%08llx", static_cast<unsigned long long>(application_id) & 0xffffffffull);
    throw UserError(quoted(file) + " is an SQLite database of another application (application_id " + id +
                    "), not a QuantLab project");
}

// Settings of every read-write connection (qBittorrent's habit: switch WAL on and read it back,
// because a filesystem without shared memory silently keeps the old journal mode).
void configure_writer(Connection& c, const OpenOptions& options) {
    c.exec("PRAGMA foreign_keys = ON", "enabling foreign keys");
    const std::string journal = c.query_text("PRAGMA journal_mode = WAL", "switching to WAL");
    if (journal != "wal")
        throw UserError("project file " + quoted(c.file()) + ": cannot use write-ahead logging (journal mode stays '" +
                        journal + "'); is it on a network drive? Copy it to a local disk");
    // In WAL mode NORMAL loses no committed transaction when a process dies (only on power loss
    // may the last ones go), and a commit costs no fsync.
    c.exec("PRAGMA synchronous = NORMAL", "setting synchronous mode");
    // A WAL keeps its largest size after a checkpoint; cap what stays behind after a burst.
    c.exec("PRAGMA journal_size_limit = 67108864", "limiting the WAL size");
    if (options.max_file_bytes) {
        const std::int64_t page = c.query_int("PRAGMA page_size", "reading the page size");
        const std::int64_t pages = std::max<std::int64_t>(1, *options.max_file_bytes / page);
        c.exec("PRAGMA max_page_count = " + std::to_string(pages), "setting the size limit");
    }
}

}  // namespace

ProjectFile::ProjectFile(fs::path path, OpenMode mode, OpenOptions options, std::unique_ptr<Connection> connection)
    : path_(std::move(path)), mode_(mode), options_(std::move(options)), connection_(std::move(connection)) {}

ProjectFile::ProjectFile(ProjectFile&&) noexcept = default;
ProjectFile& ProjectFile::operator=(ProjectFile&&) noexcept = default;
ProjectFile::~ProjectFile() = default;

ProjectFile ProjectFile::open(const fs::path& path, OpenMode mode, const OpenOptions& options) {
    const fs::path file = fs::absolute(path).lexically_normal();
    const std::uintmax_t size = check_file(file);

    std::string reason;
    if (mode != OpenMode::ReadOnly) {
        reason = why_read_only(file);
        if (!reason.empty() && mode == OpenMode::ReadWrite)
            throw UserError("cannot open project file " + quoted(file) + " for writing: " + reason +
                            ". Open it read-only, or copy it to a folder you can write");
        mode = reason.empty() ? OpenMode::ReadWrite : OpenMode::ReadOnly;
    }

    std::unique_ptr<Connection> connection;
    if (mode == OpenMode::ReadWrite) {
        connection = std::make_unique<Connection>(file, sqlite_file_uri(file), SQLITE_OPEN_READWRITE | kOpenFlags);
        check_header(*connection, file, size);
    } else {
        connection = std::make_unique<Connection>(open_read_only(file, size));
    }
    check_identity(*connection, file);
    const std::int64_t version = connection->query_int("PRAGMA user_version", "reading the schema version");
    const int current = current_schema_version();
    if (version > current)
        throw UserError("project file " + quoted(file) + " has schema version " + std::to_string(version) +
                        ", newer than this QuantLab reads (up to " + std::to_string(current) +
                        "); open it with a newer QuantLab. The file was not changed");

    ProjectFile project(file, mode, options, std::move(connection));
    project.read_only_reason_ = reason;
    if (mode == OpenMode::ReadOnly) {
        if (version < current)
            throw UserError("project file " + quoted(file) + " has schema version " + std::to_string(version) +
                            ", older than this QuantLab's " + std::to_string(current) +
                            "; open it read-write once to upgrade it (a copy of the old file is kept)");
        project.connection().exec("PRAGMA query_only = 1", "opening it read-only");
    } else {
        configure_writer(project.connection(), options);
        fs::path backup = file;
        backup += ".schema-v" + std::to_string(version) + ".bak";
        migrate(project.connection(), schema_steps(), backup);
        project.mark_dead_writers_interrupted();
    }
    project.schema_version_ = current;
    return project;
}

ProjectFile ProjectFile::create(const fs::path& path, const OpenOptions& options) {
    const fs::path file = fs::absolute(path).lexically_normal();
    const fs::path folder = file.parent_path();
    std::error_code ec;
    if (fs::exists(fs::symlink_status(file, ec)))
        throw UserError("cannot create project " + quoted(file) + ": it already exists");
    if (!fs::is_directory(folder, ec))
        throw UserError("cannot create project " + quoted(file) + ": folder " + quoted(folder) + " does not exist");
    if (::access(folder.c_str(), W_OK) != 0 || !has_write_bits(folder))
        throw UserError("cannot create project " + quoted(file) + ": folder " + quoted(folder) + " is not writable");

    const fs::path temp = folder / ("." + file.filename().string() + ".creating-" + std::to_string(::getpid()));
    auto remove_temp = [&] {
        for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
            fs::path p = temp;
            p += suffix;
            fs::remove(p, ec);
        }
    };
    remove_temp();
    try {
        {
            Connection c(file, sqlite_file_uri(temp), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | kOpenFlags);
            configure_writer(c, options);
            migrate(c, schema_steps());
            Transaction tx(c, "recording who created the project");
            Statement info(c, "INSERT INTO project_info(key, value) VALUES (?1, ?2)");
            info.bind_text(1, "created_at").bind_text(2, format_utc(unix_time_now())).run("recording the creation time");
            info.bind_text(1, "created_by").bind_text(2, std::string("QuantLab ") + QUANTLAB_VERSION).run("recording the creator");
            info.bind_text(1, "created_on").bind_text(2, current_process().host).run("recording the host");
            tx.commit();
        }  // closing the only connection checkpoints the WAL into the file and removes it
        // link() fails if the name was taken meanwhile, where rename() would replace it.
        if (::link(temp.c_str(), file.c_str()) != 0) {
            const int err = errno;
            if (err == EEXIST) throw UserError("cannot create project " + quoted(file) + ": it already exists");
            // Filesystems without hard links (FAT, some FUSE): a plain rename after a last check.
            if (fs::exists(file, ec)) throw UserError("cannot create project " + quoted(file) + ": it already exists");
            fs::rename(temp, file, ec);
            if (ec) throw UserError("cannot create project " + quoted(file) + ": " + ec.message());
        }
        remove_temp();
    } catch (...) {
        remove_temp();
        throw;
    }
    return open(file, OpenMode::ReadWrite, options);
}

void ProjectFile::require_writable(std::string_view doing) const {
    if (mode_ != OpenMode::ReadWrite)
        throw UserError("project file " + quoted(path_) + " is open read-only; cannot " + std::string(doing) +
                        (read_only_reason_.empty() ? std::string() : " (" + read_only_reason_ + ")"));
}

void ProjectFile::require_run(std::int64_t run_id) const {
    Statement st(connection(), "SELECT 1 FROM runs WHERE id = ?1");
    st.bind_int64(1, run_id);
    if (!st.step("looking up a run"))
        throw UserError("project file " + quoted(path_) + " has no run " + std::to_string(run_id));
}

std::string ProjectFile::integrity_check() const {
    Statement st(connection(), "PRAGMA integrity_check");
    std::string out;
    while (st.step("checking its integrity")) {
        if (!out.empty()) out += '\n';
        out += st.column_text(0);
    }
    return out;
}

void ProjectFile::save_copy(const fs::path& destination) const {
    const fs::path dest = fs::absolute(destination);
    std::error_code ec;
    if (fs::exists(dest, ec)) throw UserError("cannot save a copy to " + quoted(dest) + ": it already exists");
    Statement st(connection(), "VACUUM INTO ?1");
    st.bind_text(1, dest.string());
    st.run("saving a copy to " + quoted(dest));
}

void ProjectFile::mark_dead_writers_interrupted() {
    struct Candidate {
        std::int64_t id;
        ProcessIdentity writer;
        std::optional<double> heartbeat;
    };
    std::vector<Candidate> dead;
    {
        Statement st(connection(), "SELECT id, writer_pid, writer_start_ticks, writer_machine, host, heartbeat_at "
                                   "FROM runs WHERE status = 'running'");
        const double now = unix_time_now();
        while (st.step("looking for interrupted runs")) {
            Candidate c{st.column_int64(0), {}, st.column_optional_double(5)};
            c.writer.pid = st.column_optional_int64(1).value_or(0);
            c.writer.start_ticks = st.column_optional_int64(2).value_or(0);
            c.writer.machine = st.column_text(3);
            c.writer.host = st.column_text(4);
            if (!writer_alive(c.writer, c.heartbeat, now, options_.stale_heartbeat_s)) dead.push_back(std::move(c));
        }
    }
    if (dead.empty()) return;
    Transaction tx(connection(), "marking interrupted runs");
    Statement update(connection(),
                     "UPDATE runs SET status = 'interrupted', ended_at = coalesce(heartbeat_at, started_at, created_at), "
                     "message = ?2 WHERE id = ?1 AND status = 'running' AND writer_pid IS ?3");
    for (const Candidate& c : dead) {
        const std::string message =
            "interrupted: its writer (pid " + std::to_string(c.writer.pid) + " on " + c.writer.host +
            ") stopped without finishing the run; metrics up to its last flush" +
            (c.heartbeat ? " at " + format_utc(*c.heartbeat) : std::string()) + " are kept";
        update.bind_int64(1, c.id).bind_text(2, message);
        if (c.writer.pid) update.bind_int64(3, c.writer.pid); else update.bind_null(3);
        update.run("marking run " + std::to_string(c.id) + " interrupted");
        if (connection().changes() > 0) interrupted_on_open_.push_back(c.id);
    }
    tx.commit();
}

}  // namespace ql::projects
