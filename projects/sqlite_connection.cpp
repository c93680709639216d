// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/sqlite_connection.h"

#include <sqlite3.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "engine/core/errors.h"
#include "projects/sqlite_statement.h"

namespace ql::projects {

std::string sqlite_file_uri(const std::filesystem::path& path, std::string_view query) {
    // RFC 3986 percent-encoding of everything but unreserved characters and '/', which is what
    // SQLite's URI parser decodes (https://sqlite.org/uri.html).
    static const char* hex = "0123456789ABCDEF";
    std::string uri = "file:";
    for (const unsigned char c : std::filesystem::absolute(path).string()) {
        if (std::isalnum(c) || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
            uri += static_cast<char>(c);
        } else {
            uri += '%';
            uri += hex[c >> 4];
            uri += hex[c & 15];
        }
    }
    if (!query.empty()) uri += "?" + std::string(query);
    return uri;
}

void throw_sqlite_error(const std::filesystem::path& file, int rc, int system_errno, std::string_view detail,
                        std::string_view doing) {
    const std::string where = "project file '" + file.string() + "'";
    const std::string what = " while " + std::string(doing);
    const std::string why = detail.empty() ? std::string() : " (" + std::string(detail) + ")";
    // SQLite reports ENOSPC as SQLITE_FULL from unixWrite, but some paths surface it as an I/O error.
    const int primary = rc & 0xff;
    if (primary == SQLITE_FULL || (primary == SQLITE_IOERR && system_errno == ENOSPC)) {
        throw UserError(where + ": the disk is full or the project's size limit is reached" + what +
                        "; everything saved before is intact. Free some space and try again");
    }
    switch (primary) {
    case SQLITE_READONLY:
        throw UserError(where + " is read-only" + what + why +
                        "; open it read-only, or copy it to a folder you can write");
    case SQLITE_NOTADB:
        throw UserError(where + " is not a QuantLab project: not an SQLite database" + why);
    case SQLITE_CORRUPT:
        throw UserError(where + " is damaged" + what + why +
                        "; nothing was written to it. Restore it from a copy, or try 'sqlite3 FILE .recover'");
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        throw UserError(where + " is locked by another process" + what + why + "; try again when it is done");
    case SQLITE_CANTOPEN:
        throw UserError("cannot open " + where + why +
                        (system_errno ? std::string(": ") + std::strerror(system_errno) : std::string()));
    case SQLITE_PERM:
    case SQLITE_AUTH:
        throw UserError(where + ": permission denied" + what + why);
    case SQLITE_IOERR:
        throw UserError(where + ": input/output error" + what + why +
                        (system_errno ? std::string(": ") + std::strerror(system_errno) : std::string()));
    default:
        throw std::runtime_error(where + ": SQLite error " + std::to_string(rc) + what + why);
    }
}

void Connection::Closer::operator()(sqlite3* db) const {
    // close_v2 defers the close until the last statement is finalized, so order never matters.
    sqlite3_close_v2(db);
}

Connection::Connection(const std::filesystem::path& file, const std::string& sqlite_name, int flags)
    : file_(file) {
    sqlite3* raw = nullptr;
    const int rc = sqlite3_open_v2(sqlite_name.c_str(), &raw, flags, nullptr);
    db_.reset(raw);  // even on failure SQLite hands back a handle that must be closed
    if (rc != SQLITE_OK) {
        const int err = raw ? sqlite3_system_errno(raw) : 0;
        throw_sqlite_error(file_, rc, err, raw ? sqlite3_errmsg(raw) : "out of memory", "opening it");
    }
    sqlite3_extended_result_codes(raw, 1);
    // Readers and the writer take turns on the WAL's locks; wait rather than fail at once.
    sqlite3_busy_timeout(raw, 5000);
}

void Connection::fail(int rc, std::string_view doing) const {
    throw_sqlite_error(file_, rc, sqlite3_system_errno(db_.get()), sqlite3_errmsg(db_.get()), doing);
}

void Connection::exec(std::string_view sql, std::string_view doing) {
    const std::string text(sql);
    const int rc = sqlite3_exec(db_.get(), text.c_str(), nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) fail(rc, doing);
}

std::int64_t Connection::query_int(std::string_view sql, std::string_view doing) {
    Statement st(*this, sql);
    if (!st.step(doing)) throw std::runtime_error("no row from: " + std::string(sql));
    return st.column_int64(0);
}

std::string Connection::query_text(std::string_view sql, std::string_view doing) {
    Statement st(*this, sql);
    if (!st.step(doing)) throw std::runtime_error("no row from: " + std::string(sql));
    return st.column_text(0);
}

bool Connection::read_file_start(void* buffer, int bytes) const {
    sqlite3_file* fd = nullptr;
    if (sqlite3_file_control(db_.get(), "main", SQLITE_FCNTL_FILE_POINTER, &fd) != SQLITE_OK || !fd || !fd->pMethods)
        return false;
    const int rc = fd->pMethods->xRead(fd, buffer, bytes, 0);
    return rc == SQLITE_OK || rc == SQLITE_IOERR_SHORT_READ;  // a short read zero-fills the rest
}

std::int64_t Connection::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_.get()); }

std::int64_t Connection::changes() const { return sqlite3_changes64(db_.get()); }

}  // namespace ql::projects
