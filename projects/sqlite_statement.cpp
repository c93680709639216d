// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/sqlite_statement.h"

#include <sqlite3.h>

#include <stdexcept>
#include <string>

#include "projects/sqlite_connection.h"

namespace ql::projects {

Statement::Statement(Connection& connection, std::string_view sql) : connection_(&connection) {
    const int rc = sqlite3_prepare_v2(connection.handle(), sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
    if (rc != SQLITE_OK) {
        // Preparing reads the schema, so a damaged or foreign file can fail here too.
        connection.fail(rc, "preparing '" + std::string(sql.substr(0, 60)) + "'");
    }
}

Statement::Statement(Statement&& other) noexcept : connection_(other.connection_), stmt_(other.stmt_) {
    other.stmt_ = nullptr;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

static void check_bind(Connection& c, int rc) {
    if (rc != SQLITE_OK) c.fail(rc, "binding a statement parameter");
}

Statement& Statement::bind_int64(int index, std::int64_t value) {
    check_bind(*connection_, sqlite3_bind_int64(stmt_, index, value));
    return *this;
}

Statement& Statement::bind_double(int index, double value) {
    check_bind(*connection_, sqlite3_bind_double(stmt_, index, value));
    return *this;
}

Statement& Statement::bind_text(int index, std::string_view value) {
    check_bind(*connection_, sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
    return *this;
}

Statement& Statement::bind_blob(int index, const void* data, std::size_t bytes) {
    // A zero-length blob must still be a blob, not NULL: SQLite treats a null pointer as NULL.
    static const char empty = 0;
    check_bind(*connection_, sqlite3_bind_blob64(stmt_, index, bytes ? data : &empty, bytes, SQLITE_TRANSIENT));
    return *this;
}

Statement& Statement::bind_null(int index) {
    check_bind(*connection_, sqlite3_bind_null(stmt_, index));
    return *this;
}

Statement& Statement::bind_optional_int64(int index, const std::optional<std::int64_t>& value) {
    return value ? bind_int64(index, *value) : bind_null(index);
}

Statement& Statement::bind_optional_double(int index, const std::optional<double>& value) {
    return value ? bind_double(index, *value) : bind_null(index);
}

bool Statement::step(std::string_view doing) {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    sqlite3_reset(stmt_);  // leave the statement reusable after an error
    connection_->fail(rc, doing);
}

void Statement::run(std::string_view doing) {
    while (step(doing)) {
    }
    reset();
}

void Statement::reset() { sqlite3_reset(stmt_); }

bool Statement::column_is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

std::int64_t Statement::column_int64(int column) const { return sqlite3_column_int64(stmt_, column); }

double Statement::column_double(int column) const { return sqlite3_column_double(stmt_, column); }

std::string Statement::column_text(int column) const {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
    const int bytes = sqlite3_column_bytes(stmt_, column);
    return text ? std::string(text, static_cast<std::size_t>(bytes)) : std::string();
}

std::optional<std::int64_t> Statement::column_optional_int64(int column) const {
    if (column_is_null(column)) return std::nullopt;
    return column_int64(column);
}

std::optional<double> Statement::column_optional_double(int column) const {
    if (column_is_null(column)) return std::nullopt;
    return column_double(column);
}

const void* Statement::column_blob(int column, std::size_t& bytes) const {
    const void* data = sqlite3_column_blob(stmt_, column);
    bytes = static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column));
    return data;
}

}  // namespace ql::projects
