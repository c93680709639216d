// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/sqlite_transaction.h"

#include <sqlite3.h>

#include "projects/sqlite_connection.h"

namespace ql::projects {

Transaction::Transaction(Connection& connection, std::string_view doing, Kind kind)
    : connection_(connection), doing_(doing) {
    connection_.exec(kind == Kind::Immediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED", doing_);
    open_ = true;
}

Transaction::~Transaction() {
    // After a failed COMMIT (e.g. SQLITE_FULL) SQLite may already have rolled back itself;
    // then ROLLBACK reports "no transaction is active", which is harmless here.
    if (open_ && !sqlite3_get_autocommit(connection_.handle()))
        sqlite3_exec(connection_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
    connection_.exec("COMMIT", doing_);
    open_ = false;
}

}  // namespace ql::projects
