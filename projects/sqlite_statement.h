// SPDX-License-Identifier: GPL-3.0-or-later
// A prepared statement owned RAII-style: bind by 1-based index, step, read columns by 0-based
// index (SQLite's own conventions). Internal to projects/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

struct sqlite3_stmt;

namespace ql::projects {

class Connection;

class Statement {
public:
    Statement(Connection& connection, std::string_view sql);
    Statement(Statement&& other) noexcept;
    Statement& operator=(Statement&&) = delete;
    Statement(const Statement&) = delete;
    ~Statement();

    Statement& bind_int64(int index, std::int64_t value);
    Statement& bind_double(int index, double value);
    Statement& bind_text(int index, std::string_view value);  // copied by SQLite
    Statement& bind_blob(int index, const void* data, std::size_t bytes);  // copied by SQLite
    Statement& bind_null(int index);
    Statement& bind_optional_int64(int index, const std::optional<std::int64_t>& value);
    Statement& bind_optional_double(int index, const std::optional<double>& value);

    // true: a row is ready to read; false: done. Errors throw (see throw_sqlite_error).
    bool step(std::string_view doing);
    // Steps a statement that returns no rows, then resets it for the next bind.
    void run(std::string_view doing);
    void reset();  // keeps bindings; clear them by binding again

    bool column_is_null(int column) const;
    std::int64_t column_int64(int column) const;
    double column_double(int column) const;
    std::string column_text(int column) const;
    std::optional<std::int64_t> column_optional_int64(int column) const;
    std::optional<double> column_optional_double(int column) const;
    // Valid until the next step/reset; `bytes` receives the size.
    const void* column_blob(int column, std::size_t& bytes) const;

private:
    Connection* connection_;
    sqlite3_stmt* stmt_ = nullptr;
};

}  // namespace ql::projects
