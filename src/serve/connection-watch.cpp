#include "serve/connection-watch.h"

#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <vector>

namespace rtf::serve {

namespace {

constexpr short kGoneEvents = POLLRDHUP | POLLHUP | POLLERR | POLLNVAL;

// Numeric host and port of a socket address, as httplib formats a peer (getnameinfo).
bool host_port(const sockaddr_storage &a, socklen_t len, std::string &host, int &port) {
    char h[NI_MAXHOST], s[NI_MAXSERV];
    if (getnameinfo(reinterpret_cast<const sockaddr *>(&a), len, h, sizeof h, s, sizeof s, NI_NUMERICHOST | NI_NUMERICSERV) != 0)
        return false;
    host = h;
    port = std::atoi(s);
    return true;
}

}  // namespace

ConnectionWatch::ConnectionWatch(int period_ms) : period_ms_(period_ms < 1 ? 1 : period_ms) {
    thread_ = std::thread([this] { loop(); });
}

ConnectionWatch::~ConnectionWatch() {
    {
        std::lock_guard<std::mutex> l(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

int64_t ConnectionWatch::add(int fd, std::function<void()> on_gone) {
    std::lock_guard<std::mutex> l(mu_);
    const int64_t id = next_id_++;
    entries_[id] = Entry{fd, std::move(on_gone), false};
    cv_.notify_all();
    return id;
}

void ConnectionWatch::remove(int64_t id) {
    std::lock_guard<std::mutex> l(mu_);  // a poll round holds the lock: this waits for it
    entries_.erase(id);
}

size_t ConnectionWatch::watched() const {
    std::lock_guard<std::mutex> l(mu_);
    return entries_.size();
}

void ConnectionWatch::loop() {
    std::unique_lock<std::mutex> l(mu_);
    std::vector<pollfd> fds;
    std::vector<Entry *> of;
    while (!stop_) {
        fds.clear();
        of.clear();
        for (auto &[id, e] : entries_) {
            if (e.fd < 0 || e.fired) continue;
            fds.push_back(pollfd{e.fd, POLLRDHUP, 0});
            of.push_back(&e);
        }
        if (fds.empty()) {
            cv_.wait(l, [&] {
                if (stop_) return true;
                for (auto &[id, e] : entries_)
                    if (e.fd >= 0 && !e.fired) return true;
                return false;
            });
            continue;
        }
        // Timeout 0: the lock is held only for the check, never across a wait.
        if (poll(fds.data(), fds.size(), 0) > 0) {
            for (size_t i = 0; i < fds.size(); ++i) {
                if (!(fds[i].revents & kGoneEvents)) continue;
                of[i]->fired = true;
                if (of[i]->on_gone) of[i]->on_gone();
            }
        }
        cv_.wait_for(l, std::chrono::milliseconds(period_ms_), [&] { return stop_; });
    }
}

bool ConnectionWatch::peer_gone(int fd) {
    pollfd p{fd, POLLRDHUP, 0};
    return poll(&p, 1, 0) > 0 && (p.revents & kGoneEvents);
}

int ConnectionWatch::find_socket(int local_port, const std::string &remote_addr, int remote_port) {
    if (local_port <= 0 || remote_port <= 0 || remote_addr.empty()) return -1;
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    int found = -1;
    while (dirent *ent = readdir(d)) {
        char *end = nullptr;
        const long v = std::strtol(ent->d_name, &end, 10);
        if (end == ent->d_name || *end != '\0' || v < 0 || v == dirfd(d)) continue;
        const int fd = static_cast<int>(v);
        struct stat st{};
        if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
        sockaddr_storage a{};
        socklen_t len = sizeof a;
        std::string host;
        int port = -1;
        if (getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) != 0 || !host_port(a, len, host, port) ||
            port != local_port)
            continue;
        len = sizeof a;
        if (getpeername(fd, reinterpret_cast<sockaddr *>(&a), &len) != 0 || !host_port(a, len, host, port)) continue;
        if (port == remote_port && host == remote_addr) {
            found = fd;
            break;
        }
    }
    closedir(d);
    return found;
}

}  // namespace rtf::serve
