// SPDX-License-Identifier: GPL-3.0-or-later
// A transaction that rolls back unless commit() was reached: every multi-row write in projects/
// is one of these, so a crash or an error never leaves half of it in the file. Internal.
#pragma once

#include <string>
#include <string_view>

namespace ql::projects {

class Connection;

class Transaction {
public:
    // Immediate (for writes) takes the write lock at BEGIN, so a busy file fails (or waits) up
    // front instead of at the first write after reads, which SQLite cannot retry. Deferred
    // (for reads) holds one snapshot across several statements; works on read-only files too.
    enum class Kind { Immediate, Deferred };
    Transaction(Connection& connection, std::string_view doing, Kind kind = Kind::Immediate);
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    ~Transaction();

    void commit();

private:
    Connection& connection_;
    std::string doing_;
    bool open_ = false;
};

}  // namespace ql::projects
