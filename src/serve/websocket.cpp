// websocketpp behind websocket.h. Built as C++17 (src/serve/CMakeLists.txt says why).
#define ASIO_STANDALONE
#include "serve/websocket.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <set>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <websocketpp/client.hpp>
#include <websocketpp/config/asio_no_tls.hpp>
#include <websocketpp/config/asio_no_tls_client.hpp>
#include <websocketpp/server.hpp>

namespace rtf::serve::ws {

namespace {
using Hdl = websocketpp::connection_hdl;
using WsServer = websocketpp::server<websocketpp::config::asio>;
using WsClient = websocketpp::client<websocketpp::config::asio_client>;
using websocketpp::frame::opcode::value;

value opcode(bool binary) { return binary ? websocketpp::frame::opcode::binary : websocketpp::frame::opcode::text; }

template <class Endpoint>
void quiet(Endpoint &e) {
    e.clear_access_channels(websocketpp::log::alevel::all);
    e.clear_error_channels(websocketpp::log::elevel::all);
}
}  // namespace

// ---- server ---------------------------------------------------------------------------------

struct Server::Impl {
    Handlers h;
    WsServer srv;
    mutable std::mutex mu;
    std::map<Hdl, ConnId, std::owner_less<Hdl>> ids;  // every connection from its handshake on
    std::map<ConnId, Hdl> open;                       // the opened ones
    std::set<ConnId> accepted;                        // handshake answered 101 (on_close owed)
    ConnId next = 1;
    bool stopping = false;

    ConnId id_of(const Hdl &hdl) {
        std::lock_guard<std::mutex> l(mu);
        auto it = ids.find(hdl);
        return it == ids.end() ? 0 : it->second;
    }
    void maybe_finish_stop() {  // on the network thread
        bool done;
        {
            std::lock_guard<std::mutex> l(mu);
            done = stopping && open.empty();
        }
        if (done) srv.stop();
    }
};

Server::Server(Handlers h, size_t max_message_bytes) : p_(std::make_unique<Impl>()) {
    Impl &p = *p_;
    p.h = std::move(h);
    quiet(p.srv);
    p.srv.init_asio();
    p.srv.set_reuse_addr(true);
    p.srv.set_max_message_size(max_message_bytes);
    p.srv.set_validate_handler([&p](Hdl hdl) -> bool {
        auto con = p.srv.get_con_from_hdl(hdl);
        ConnId id;
        bool stopping;
        {
            std::lock_guard<std::mutex> l(p.mu);
            id = p.next++;
            p.ids[hdl] = id;
            stopping = p.stopping;
        }
        HandshakeReply r;
        if (stopping) {
            r.status = 503;
            r.body = R"({"error":{"message":"the server is stopping","type":"unavailable"}})";
        } else if (p.h.on_handshake) {
            try {
                r = p.h.on_handshake(id, con->get_resource());
            } catch (...) {
                r.status = 500;
                r.body = R"({"error":{"message":"internal error in the handshake","type":"internal"}})";
            }
        }
        if (r.status == 101) {
            std::lock_guard<std::mutex> l(p.mu);
            p.accepted.insert(id);
            return true;
        }
        con->set_status(static_cast<websocketpp::http::status_code::value>(r.status));
        con->set_body(r.body);
        con->replace_header("Content-Type", r.content_type);
        for (const auto &[k, v] : r.headers) con->replace_header(k, v);
        return false;
    });
    p.srv.set_open_handler([&p](Hdl hdl) {
        ConnId id;
        {
            std::lock_guard<std::mutex> l(p.mu);
            id = p.ids[hdl];
            p.open[id] = hdl;
        }
        if (p.h.on_open) p.h.on_open(id);
    });
    p.srv.set_message_handler([&p](Hdl hdl, WsServer::message_ptr msg) {
        const ConnId id = p.id_of(hdl);
        if (id == 0 || !p.h.on_message) return;
        Message m;
        m.binary = msg->get_opcode() == websocketpp::frame::opcode::binary;
        m.data = std::move(msg->get_raw_payload());
        p.h.on_message(id, std::move(m));
    });
    auto ended = [&p](Hdl hdl) {
        ConnId id = 0;
        bool owed = false;
        {
            std::lock_guard<std::mutex> l(p.mu);
            auto it = p.ids.find(hdl);
            if (it != p.ids.end()) {
                id = it->second;
                p.ids.erase(it);
                p.open.erase(id);
                owed = p.accepted.erase(id) > 0;
            }
        }
        if (owed && p.h.on_close) p.h.on_close(id);
        p.maybe_finish_stop();
    };
    p.srv.set_close_handler(ended);
    p.srv.set_fail_handler(ended);
}

Server::~Server() = default;

int Server::bind(const std::string &host, int port) {
    asio::error_code ec;
    const auto addr = asio::ip::make_address(host, ec);
    if (ec) throw std::runtime_error("websocket: '" + host + "' is not an IP address: " + ec.message());
    p_->srv.listen(asio::ip::tcp::endpoint(addr, static_cast<unsigned short>(port)), ec);
    if (ec) throw std::runtime_error("websocket: cannot listen on " + host + ":" + std::to_string(port) + ": " + ec.message());
    p_->srv.start_accept(ec);
    if (ec) throw std::runtime_error("websocket: cannot accept on " + host + ":" + std::to_string(port) + ": " + ec.message());
    const auto ep = p_->srv.get_local_endpoint(ec);
    if (ec) throw std::runtime_error("websocket: no local endpoint: " + ec.message());
    return ep.port();
}

void Server::run() { p_->srv.run(); }

void Server::stop() {
    Impl &p = *p_;
    {
        std::lock_guard<std::mutex> l(p.mu);
        if (p.stopping) return;
        p.stopping = true;
    }
    asio::post(p.srv.get_io_service(), [&p] {
        websocketpp::lib::error_code ec;
        p.srv.stop_listening(ec);
        std::vector<Hdl> all;
        {
            std::lock_guard<std::mutex> l(p.mu);
            for (const auto &[id, hdl] : p.open) all.push_back(hdl);
        }
        for (auto &hdl : all) p.srv.close(hdl, websocketpp::close::status::going_away, "server stopping", ec);
        p.maybe_finish_stop();
        // A peer that never answers the close: stop anyway.
        p.srv.set_timer(2000, [&p](const websocketpp::lib::error_code &) { p.srv.stop(); });
    });
}

bool Server::send(ConnId id, const std::string &data, bool binary) {
    Hdl hdl;
    {
        std::lock_guard<std::mutex> l(p_->mu);
        auto it = p_->open.find(id);
        if (it == p_->open.end()) return false;
        hdl = it->second;
    }
    websocketpp::lib::error_code ec;
    p_->srv.send(hdl, data, opcode(binary), ec);
    return !ec;
}

void Server::close(ConnId id, uint16_t code, const std::string &reason) {
    Hdl hdl;
    {
        std::lock_guard<std::mutex> l(p_->mu);
        auto it = p_->open.find(id);
        if (it == p_->open.end()) return;
        hdl = it->second;
    }
    // On the network thread: websocketpp's read path reads the connection's state unlocked,
    // and close() writes it (ThreadSanitizer saw the race when close came from a session thread).
    Impl &p = *p_;
    asio::post(p.srv.get_io_service(), [&p, hdl, code, reason] {
        websocketpp::lib::error_code ec;
        p.srv.close(hdl, code, reason, ec);
    });
}

size_t Server::open_connections() const {
    std::lock_guard<std::mutex> l(p_->mu);
    return p_->open.size();
}

// ---- client ---------------------------------------------------------------------------------

struct Client::Impl {
    WsClient c;
    std::thread th;
    std::mutex mu;
    std::condition_variable cv;
    WsClient::connection_ptr con;
    std::deque<Message> q;
    bool answered = false, opened = false, ended = false;
    int status = 0;
    uint16_t close_code = 0;
    std::string body;
};

Client::Client() : p_(std::make_unique<Impl>()) {
    quiet(p_->c);
    p_->c.init_asio();
    p_->c.start_perpetual();
    p_->th = std::thread([this] { p_->c.run(); });
}

Client::~Client() {
    close();
    {
        std::unique_lock<std::mutex> l(p_->mu);
        p_->cv.wait_for(l, std::chrono::seconds(2), [&] { return !p_->opened || p_->ended; });
    }
    p_->c.stop_perpetual();
    p_->c.stop();
    if (p_->th.joinable()) p_->th.join();
}

int Client::connect(const std::string &host, int port, const std::string &resource, double timeout_ms, std::string *body) {
    Impl &p = *p_;
    websocketpp::lib::error_code ec;
    auto con = p.c.get_connection("ws://" + host + ":" + std::to_string(port) + resource, ec);
    if (ec) return 0;
    con->set_open_handler([&p](Hdl) {
        std::lock_guard<std::mutex> l(p.mu);
        p.answered = p.opened = true;
        p.status = 101;
        p.cv.notify_all();
    });
    con->set_fail_handler([&p, con](Hdl) {
        std::lock_guard<std::mutex> l(p.mu);
        p.answered = p.ended = true;
        p.status = static_cast<int>(con->get_response_code());
        p.body = con->get_response().get_body();
        p.cv.notify_all();
    });
    con->set_message_handler([&p](Hdl, WsClient::message_ptr msg) {
        std::lock_guard<std::mutex> l(p.mu);
        Message m;
        m.binary = msg->get_opcode() == websocketpp::frame::opcode::binary;
        m.data = std::move(msg->get_raw_payload());
        p.q.push_back(std::move(m));
        p.cv.notify_all();
    });
    con->set_close_handler([&p, con](Hdl) {
        std::lock_guard<std::mutex> l(p.mu);
        p.ended = true;
        p.close_code = con->get_remote_close_code();
        p.cv.notify_all();
    });
    {
        std::lock_guard<std::mutex> l(p.mu);
        p.con = con;
    }
    p.c.connect(con);
    std::unique_lock<std::mutex> l(p.mu);
    p.cv.wait_for(l, std::chrono::duration<double, std::milli>(timeout_ms), [&] { return p.answered; });
    if (body) *body = p.body;
    return p.answered ? p.status : 0;
}

bool Client::send(const std::string &data, bool binary) {
    WsClient::connection_ptr con;
    {
        std::lock_guard<std::mutex> l(p_->mu);
        if (!p_->opened || p_->ended) return false;
        con = p_->con;
    }
    return !con->send(data, opcode(binary));
}

std::optional<Message> Client::receive(double timeout_ms) {
    std::unique_lock<std::mutex> l(p_->mu);
    p_->cv.wait_for(l, std::chrono::duration<double, std::milli>(timeout_ms), [&] { return !p_->q.empty() || p_->ended; });
    if (p_->q.empty()) return std::nullopt;
    Message m = std::move(p_->q.front());
    p_->q.pop_front();
    return m;
}

bool Client::closed() const {
    std::lock_guard<std::mutex> l(p_->mu);
    return p_->ended;
}

uint16_t Client::close_code() const {
    std::lock_guard<std::mutex> l(p_->mu);
    return p_->close_code;
}

void Client::close(uint16_t code, const std::string &reason) {
    WsClient::connection_ptr con;
    {
        std::lock_guard<std::mutex> l(p_->mu);
        if (!p_->opened || p_->ended) return;
        con = p_->con;
    }
    // On the network thread, as Server::close (websocketpp reads the state unlocked there).
    asio::post(p_->c.get_io_service(), [con, code, reason] {
        websocketpp::lib::error_code ec;
        con->close(code, reason, ec);
    });
}

void Client::drop() {
    WsClient::connection_ptr con;
    {
        std::lock_guard<std::mutex> l(p_->mu);
        if (!p_->opened || p_->ended) return;
        con = p_->con;
    }
    asio::post(p_->c.get_io_service(), [con] {
        asio::error_code ec;
        con->get_socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
        con->get_socket().close(ec);
    });
}

}  // namespace rtf::serve::ws
