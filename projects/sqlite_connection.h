// SPDX-License-Identifier: GPL-3.0-or-later
// One SQLite connection owned RAII-style, and the one place where SQLite result codes become
// messages that name the project file and say what was being done. Internal to projects/:
// other layers use ProjectFile and MetricWriter.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

struct sqlite3;

namespace ql::projects {

class Statement;

// A "file:" URI for `path` with the given query ("mode=ro", "immutable=1", or empty): every
// connection here is opened with SQLITE_OPEN_URI so ATTACH and read-only fallbacks can use them.
std::string sqlite_file_uri(const std::filesystem::path& path, std::string_view query = {});

// Throws ql::UserError for problems of the file or its location (not a database, damaged,
// read-only, disk full, locked, I/O) and std::runtime_error for anything else (a bug in our
// SQL). `doing` completes "while ...", e.g. "saving metrics of run 3".
[[noreturn]] void throw_sqlite_error(const std::filesystem::path& file, int rc, int system_errno,
                                     std::string_view detail, std::string_view doing);

class Connection {
public:
    // `sqlite_name` is what sqlite3_open_v2 gets (a path, or a file: URI when `flags` has
    // SQLITE_OPEN_URI); `file` is the project file named in messages.
    Connection(const std::filesystem::path& file, const std::string& sqlite_name, int flags);
    Connection(Connection&&) noexcept = default;
    Connection& operator=(Connection&&) noexcept = default;
    ~Connection() = default;

    sqlite3* handle() const { return db_.get(); }
    const std::filesystem::path& file() const { return file_; }

    // Runs one or more statements that return no rows.
    void exec(std::string_view sql, std::string_view doing);
    // The first column of the first row of `sql` (e.g. "PRAGMA user_version").
    std::int64_t query_int(std::string_view sql, std::string_view doing);
    std::string query_text(std::string_view sql, std::string_view doing);

    // Reads up to `bytes` bytes from the start of the main database file through SQLite's own
    // file descriptor, zero-filling past the end; returns false on an I/O error. A second
    // descriptor opened and closed on the file (std::ifstream) would drop every POSIX lock this
    // process holds on it, so another process could take this one for gone, delete the -shm
    // it maps, and leave it reading a stale snapshot forever (sqlite.org/howtocorrupt.html §2.2).
    bool read_file_start(void* buffer, int bytes) const;

    std::int64_t last_insert_rowid() const;
    std::int64_t changes() const;  // rows changed by the last INSERT/UPDATE/DELETE
    [[noreturn]] void fail(int rc, std::string_view doing) const;

private:
    struct Closer {
        void operator()(sqlite3* db) const;
    };
    std::filesystem::path file_;
    std::unique_ptr<sqlite3, Closer> db_;
};

}  // namespace ql::projects
