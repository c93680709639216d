// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/io/whole_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "engine/core/allocation_limit.h"
#include "engine/core/errors.h"

namespace ql {

std::string read_whole_file(const std::string& path, const std::string& what) {
    const std::string the_what = what.empty() ? "" : " the " + what;
    std::ifstream in(path, std::ios::binary);
    if (!in) throw UserError(path + ": cannot open" + the_what + ": " + std::strerror(errno));
    struct stat st {};
    if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        // A regular file is read into a string of its size, refused first when that cannot fit.
        const auto size = static_cast<uint64_t>(st.st_size);
        require_allocatable(size, path, "reading" + (the_what.empty() ? std::string(" the file") : the_what));
        std::string bytes(static_cast<size_t>(size), '\0');
        in.read(bytes.data(), static_cast<std::streamsize>(size));
        if (in.bad() || static_cast<uint64_t>(in.gcount()) != size)
            throw UserError(path + ": cannot read" + the_what + " (" + std::to_string(in.gcount()) + " of " +
                            std::to_string(size) + " bytes; changed while reading?)");
        return bytes;
    }
    std::ostringstream ss;  // a pipe, a device or a /proc file: its size is not known up front
    ss << in.rdbuf();
    if (in.bad()) throw UserError(path + ": cannot read" + the_what);
    return ss.str();
}

}  // namespace ql
