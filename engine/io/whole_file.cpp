// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/io/whole_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "engine/core/errors.h"

namespace ql {

std::string read_whole_file(const std::string& path, const std::string& what) {
    const std::string the_what = what.empty() ? "" : " the " + what;
    std::ifstream in(path, std::ios::binary);
    if (!in) throw UserError(path + ": cannot open" + the_what + ": " + std::strerror(errno));
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) throw UserError(path + ": cannot read" + the_what);
    return ss.str();
}

}  // namespace ql
