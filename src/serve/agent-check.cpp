#include "serve/agent-check.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "core/error.h"

namespace rtf::serve {

std::string agent_reply(int active, int max_streams, bool stopping) {
    if (stopping) return "drain\n";
    const int slots = std::max(1, max_streams);
    const int free_slots = std::clamp(slots - active, 0, slots);
    const int pct = static_cast<int>(std::lround(100.0 * free_slots / slots));
    return "ready up " + std::to_string(pct) + "%\n";
}

AgentCheck::AgentCheck(const std::string &host, int port, std::function<std::string()> reply) : reply_(std::move(reply)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1)
        throw_setup("--agent-port: cannot bind " + host + " (give --host as an IPv4 address)");
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw_setup(std::string("--agent-port: socket: ") + std::strerror(errno));
    const int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd_, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 || ::listen(fd_, 16) != 0) {
        const std::string why = std::strerror(errno);
        ::close(fd_);
        throw_setup("--agent-port: cannot bind " + host + ":" + std::to_string(port) + ": " + why);
    }
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr *>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { loop(); });
}

AgentCheck::~AgentCheck() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);
}

void AgentCheck::loop() {
    while (!stop_) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;  // a timeout (or EINTR): look at stop_ again
        const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) continue;
        // One short line to a peer that is waiting for it; a peer that does not read cannot
        // hold this thread longer than the send timeout.
        timeval tv{1, 0};
        ::setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        std::string line;
        try {
            line = reply_();
        } catch (...) {
            line = "down\n";  // the state could not be read: say so rather than guess
        }
        [[maybe_unused]] const ssize_t n = ::send(c, line.data(), line.size(), MSG_NOSIGNAL);
        ::close(c);
    }
}

}  // namespace rtf::serve
