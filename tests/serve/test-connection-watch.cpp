// ConnectionWatch on real loopback sockets: it finds a connection's socket from the
// addresses httplib gives a handler, fires once when the peer closes or resets, and not for a
// peer that is merely quiet or sends more data; AdmissionGate lets a waiter whose client
// hung up leave the queue. Threads: the watch's own, plus the test's (run under TSan too).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "common/eventually.h"
#include "serve/admission.h"
#include "serve/connection-watch.h"

using namespace rtf::serve;
using namespace std::chrono_literals;

namespace {

int port_of(int fd, bool peer) {
    sockaddr_in a{};
    socklen_t len = sizeof a;
    if ((peer ? getpeername(fd, reinterpret_cast<sockaddr *>(&a), &len) : getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len)) != 0)
        return -1;
    return ntohs(a.sin_port);
}

// A connected loopback pair: `server` is the accepted side (what httplib's handler has).
struct Pair {
    int listener = -1, client = -1, server = -1;
    Pair() {
        listener = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = 0;
        EXPECT_EQ(bind(listener, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
        EXPECT_EQ(listen(listener, 4), 0);
        socklen_t len = sizeof a;
        getsockname(listener, reinterpret_cast<sockaddr *>(&a), &len);
        client = socket(AF_INET, SOCK_STREAM, 0);
        EXPECT_EQ(connect(client, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
        server = accept(listener, nullptr, nullptr);
        EXPECT_GE(server, 0);
    }
    ~Pair() {
        for (int fd : {listener, client, server})
            if (fd >= 0) close(fd);
    }
    void close_client() {
        close(client);
        client = -1;
    }
};

bool wait_for(const std::atomic<int> &v, int want, std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
        if (v.load() == want) return true;
        std::this_thread::sleep_for(2ms);
    }
    return v.load() == want;
}

}  // namespace

TEST(ConnectionWatch, FindsTheSocketOfAConnection) {
    Pair p;
    const int local = port_of(p.server, false), remote = port_of(p.server, true);
    EXPECT_EQ(ConnectionWatch::find_socket(local, "127.0.0.1", remote), p.server);
    // the client's own socket has the mirrored ports: it is found as itself, never as the server side
    EXPECT_EQ(ConnectionWatch::find_socket(remote, "127.0.0.1", local), p.client);
    EXPECT_EQ(ConnectionWatch::find_socket(local, "127.0.0.2", remote), -1);
    EXPECT_EQ(ConnectionWatch::find_socket(local, "127.0.0.1", remote + 1 == local ? remote + 2 : remote + 1), -1);
    EXPECT_EQ(ConnectionWatch::find_socket(-1, "127.0.0.1", remote), -1);
    EXPECT_EQ(ConnectionWatch::find_socket(local, "", remote), -1);
}

TEST(ConnectionWatch, FiresOnceWhenThePeerCloses) {
    ConnectionWatch w(5);
    Pair p;
    std::atomic<int> fired{0};
    const int64_t id = w.add(p.server, [&] { ++fired; });
    std::this_thread::sleep_for(60ms);
    EXPECT_EQ(fired.load(), 0) << "a quiet open connection is not gone";
    EXPECT_FALSE(ConnectionWatch::peer_gone(p.server));
    p.close_client();
    EXPECT_TRUE(wait_for(fired, 1, 5000ms));
    std::this_thread::sleep_for(40ms);
    EXPECT_EQ(fired.load(), 1) << "fires at most once";
    EXPECT_TRUE(ConnectionWatch::peer_gone(p.server));
    w.remove(id);
    EXPECT_EQ(w.watched(), 0u);
}

TEST(ConnectionWatch, DataFromThePeerIsNotAHangUp) {
    ConnectionWatch w(5);
    Pair p;
    std::atomic<int> fired{0};
    const int64_t id = w.add(p.server, [&] { ++fired; });
    // a pipelined next request: readable, not closed; never read by the watch
    ASSERT_EQ(write(p.client, "GET / HTTP/1.1\r\n\r\n", 18), 18);
    std::this_thread::sleep_for(60ms);
    EXPECT_EQ(fired.load(), 0);
    char buf[32];
    EXPECT_EQ(read(p.server, buf, sizeof buf), 18) << "the bytes are still there for the server";
    w.remove(id);
}

TEST(ConnectionWatch, ManyEntriesAndANoOpOne) {
    ConnectionWatch w(2);
    Pair a, b;
    std::atomic<int> fa{0}, fb{0}, fnone{0};
    const int64_t ia = w.add(a.server, [&] { ++fa; });
    const int64_t ib = w.add(b.server, [&] { ++fb; });
    const int64_t in = w.add(-1, [&] { ++fnone; });
    EXPECT_EQ(w.watched(), 3u);
    b.close_client();
    EXPECT_TRUE(wait_for(fb, 1, 5000ms));
    EXPECT_EQ(fa.load(), 0);
    // removing while the thread polls, from another thread, many times: no race (TSan)
    std::thread t([&] {
        for (int i = 0; i < 200; ++i) w.remove(w.add(a.server, [] {}));
    });
    t.join();
    w.remove(ia);
    w.remove(ib);
    w.remove(in);
    w.remove(12345);  // unknown: ignored
    EXPECT_EQ(fnone.load(), 0);
    EXPECT_EQ(w.watched(), 0u);
}

TEST(Admission, AWaiterWhoseClientLeftLeavesTheQueue) {
    AdmissionGate g(1, 2);
    auto held = g.acquire(0);
    ASSERT_EQ(held.outcome, Admission::Admitted);
    std::atomic<bool> gone{false};
    std::atomic<int> outcome{-1};
    std::thread t([&] { outcome = static_cast<int>(g.acquire(60000, [&] { return gone.load(); }).outcome); });
    EXPECT_TRUE(rtf::test::eventually([&] { return g.queued() >= 1; })) << "the waiter never queued (10 s)";
    std::this_thread::sleep_for(80ms);
    EXPECT_EQ(outcome.load(), -1) << "still waiting while the client is there";
    const auto t0 = std::chrono::steady_clock::now();
    gone = true;
    t.join();
    EXPECT_EQ(outcome.load(), static_cast<int>(Admission::Abandoned));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
    EXPECT_EQ(g.queued(), 0);
    EXPECT_EQ(g.active(), 1) << "the held slot is untouched";
    held.lease.reset();
    EXPECT_EQ(g.acquire(0).outcome, Admission::Admitted) << "the line is empty again";
}
