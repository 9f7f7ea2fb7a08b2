#pragma once
// WebSocket transport (RFC 6455) for `rtf serve`'s /v1/realtime and `rtf load --duplex`:
//
//   ws::Server::Handlers h;
//   h.on_handshake = [](ws::ConnId, const std::string &resource) { return ws::HandshakeReply{}; };  // 101
//   h.on_message = [&](ws::ConnId id, ws::Message &&m) { srv.send(id, "{...}", false); };
//   ws::Server srv(h);
//   int port = srv.bind("127.0.0.1", 0);  std::thread t([&] { srv.run(); });  ...  srv.stop(); t.join();
//
//   ws::Client c;  c.connect("127.0.0.1", port, "/v1/realtime", 5000);   // 101 = open
//   c.send(R"({"type":"session.update"})", false);  auto m = c.receive(1000);
//
// Built on websocketpp (Debian's libwebsocketpp-dev 0.8.2, header-only, over standalone asio
// from libasio-dev): the one WebSocket library Debian packages for C++ with both a server and
// a client, complete protocol handling (handshake, fragmentation, ping/pong, close codes,
// message size limits), thread-safe sends, and the handshake's HTTP status ours to choose
// (429/503 for a full server). Its headers do not compile as C++20 with GCC 12, so they stay in
// websocket.cpp, built as C++17 (its own target); this header is the whole interface.
//
// Threads: the server's handlers run on its one network thread (run()): keep them short.
// send() and close() may be called from any thread (close() is carried out on the network thread,
// after what was queued before it). A connection's ConnId is never reused.
// Errors: bind() throws std::runtime_error naming host:port; the rest report by return value.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rtf::serve::ws {

using ConnId = uint64_t;

struct Message {
    bool binary = false;
    std::string data;
};

// What the handshake answers: 101 opens the connection; anything else is an HTTP reply.
struct HandshakeReply {
    int status = 101;
    std::string body;                                           // for status != 101
    std::string content_type = "application/json";
    std::vector<std::pair<std::string, std::string>> headers;  // e.g. Retry-After
};

class Server {
public:
    struct Handlers {
        std::function<HandshakeReply(ConnId, const std::string &resource)> on_handshake;  // empty = accept all
        std::function<void(ConnId)> on_open;
        std::function<void(ConnId, Message &&)> on_message;
        // Once per connection whose handshake was accepted (101), however it ended (also one that
        // failed before it opened): what on_handshake reserved can be released here.
        std::function<void(ConnId)> on_close;
    };
    explicit Server(Handlers h, size_t max_message_bytes = 1 << 20);
    ~Server();
    Server(const Server &) = delete;
    Server &operator=(const Server &) = delete;

    int bind(const std::string &host, int port);  // the bound port (0 = any free one)
    void run();                                   // blocks, serving, until stop()
    void stop();                                  // closes every connection (1001), returns at once
    bool send(ConnId id, const std::string &data, bool binary);  // false when the connection is gone
    void close(ConnId id, uint16_t code, const std::string &reason);
    size_t open_connections() const;

private:
    struct Impl;
    std::unique_ptr<Impl> p_;
};

// A blocking client for one connection (tests, `rtf load --duplex`); its network thread is its own.
class Client {
public:
    Client();
    ~Client();  // closes and joins
    Client(const Client &) = delete;
    Client &operator=(const Client &) = delete;

    // Opens ws://host:port`resource`. Returns the handshake's HTTP status: 101 = open; a
    // refusal's status (and `body`) otherwise; 0 = no answer within `timeout_ms` or no server.
    int connect(const std::string &host, int port, const std::string &resource, double timeout_ms,
                std::string *body = nullptr);
    bool send(const std::string &data, bool binary);
    // The next message, or nullopt after `timeout_ms` or once closed and drained.
    std::optional<Message> receive(double timeout_ms);
    bool closed() const;
    uint16_t close_code() const;  // the server's close code once closed (0 = none yet)
    void close(uint16_t code = 1000, const std::string &reason = "");
    void drop();                  // ends the TCP connection without a close handshake (a client that vanishes)

private:
    struct Impl;
    std::unique_ptr<Impl> p_;
};

}  // namespace rtf::serve::ws
