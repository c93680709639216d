// SPDX-License-Identifier: GPL-3.0-or-later
// Sizes that cannot be allocated are refused before anything is allocated: a config.json, a
// header or an option that asks for more memory than the machine has is a user error naming
// the file, the key and the bytes it would need (never a failed allocation, an internal error
// or an OOM kill half-way through). Plain C++.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

namespace ql {

// The machine's physical memory in bytes (sysconf _SC_PHYS_PAGES x _SC_PAGESIZE): more than one
// process can ever hold. QUANTLAB_MEMORY_LIMIT_BYTES (a positive integer) overrides it, for tests
// and for machines whose real limit is lower (a cgroup).
uint64_t physical_memory_bytes();

// The product of `factors`, or nullopt when it does not fit 64 bits (a lying size).
std::optional<uint64_t> checked_product(std::initializer_list<uint64_t> factors);
// a + b, or nullopt on overflow (either nullopt gives nullopt).
std::optional<uint64_t> checked_sum(std::optional<uint64_t> a, std::optional<uint64_t> b);

// "5.0 GB (5000000000 bytes)", or "more than 18446744073709551615 bytes" for nullopt.
std::string bytes_text(std::optional<uint64_t> bytes);

// Throws UserError "<where>: <what> would need <bytes_text>, more than this machine's memory
// (<bytes_text>)" when `bytes` (nullopt: beyond 64 bits) exceeds physical_memory_bytes().
// `where` names the file and key ("config.json: key 'hidden_size' = 1099511627776").
void require_allocatable(std::optional<uint64_t> bytes, const std::string& where, const std::string& what);

}  // namespace ql
