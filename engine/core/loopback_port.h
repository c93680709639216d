// SPDX-License-Identifier: GPL-3.0-or-later
// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, read back, released):
// the rendezvous port of local distributed ranks (train --nproc) and of their tests. Another
// process may take it between the release and our TCPStore's bind; the store then fails with
// an error naming the address. Header-only so that it adds no engine translation unit.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/core/errors.h"

namespace ql {

inline int free_loopback_port() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) throw UserError("cannot open a socket to find a free TCP port on 127.0.0.1");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
    close(fd);
    if (!ok) throw UserError("cannot find a free TCP port on 127.0.0.1");
    return ntohs(a.sin_port);
}

}  // namespace ql
