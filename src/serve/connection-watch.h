#pragma once
// ConnectionWatch — notices a client that hung up while its request waits for a slot or
// before its stream has written anything, and says so at once.
//
//   ConnectionWatch watch;                                   // one thread for the whole server
//   int fd = ConnectionWatch::find_socket(req.local_port, req.remote_addr, req.remote_port);
//   auto id = watch.add(fd, [&] { gone = true; cancel.cancel(); });   // -1 fd: never fires
//   ... queue wait, prefill, streaming ...
//   watch.remove(id);                                        // before the connection can close
//
// Why: cpp-httplib (0.11, Debian's) tells a handler about a gone client only when a write to
// it fails, and a stream writes nothing until its first audio; a request waiting in the
// admission queue writes nothing at all. So a client that disconnects early used to hold its
// queue place, then its slot until the first chunk was made (seconds on the cpu kit). The
// watch polls the connections' sockets for POLLRDHUP / POLLHUP / POLLERR (the peer closed or
// reset) every `period_ms`, without reading: a client that merely pauses, or sends a next
// request on the same connection, is not taken for gone. A client that half-closes its
// sending side after the request (legal, rare: no common HTTP client does) is taken for gone.
//
// Finding the socket: httplib does not hand the handler its socket, but it does give the
// connection's local port and the peer's address and port, which name exactly one socket of
// this process while the connection is open (find_socket scans /proc/self/fd). The fd cannot
// be closed and reused under the watch: httplib closes a connection only after its handler
// and content provider returned, and the caller removes its entry before that; remove()
// waits for a poll round in progress.
//
// Thread-safety: add/remove from any thread. `on_gone` runs on the watch thread under its
// lock, at most once per entry: keep it short and do not call back into the watch.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace rtf::serve {

class ConnectionWatch {
public:
    explicit ConnectionWatch(int period_ms = 20);
    ~ConnectionWatch();
    ConnectionWatch(const ConnectionWatch &) = delete;
    ConnectionWatch &operator=(const ConnectionWatch &) = delete;

    // Watches `fd` (< 0: a no-op entry that never fires); returns the entry's id.
    int64_t add(int fd, std::function<void()> on_gone);
    // Stops watching; waits for a poll round that is running. Unknown ids are ignored.
    void remove(int64_t id);
    size_t watched() const;

    // The TCP socket of this process whose local port is `local_port` and whose peer is
    // `remote_addr`:`remote_port` (numeric IPv4/IPv6 as httplib writes it), or -1.
    static int find_socket(int local_port, const std::string &remote_addr, int remote_port);
    // Whether the peer of `fd` has closed or reset the connection (a non-blocking poll).
    static bool peer_gone(int fd);

private:
    struct Entry {
        int fd = -1;
        std::function<void()> on_gone;
        bool fired = false;
    };
    void loop();

    const int period_ms_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::map<int64_t, Entry> entries_;
    int64_t next_id_ = 1;
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace rtf::serve
