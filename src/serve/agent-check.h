#pragma once
// HAProxy's agent check, answered with this server's free-slot share (`rtf serve --agent-port N`):
// HAProxy connects to the agent port every `agent-inter`, reads one line and closes.
//
//   AgentCheck agent("127.0.0.1", 9101, [&] { return agent_reply(active, max_streams, stopping); });
//   ...                               // a thread answers until the object goes away
//
// Why: HAProxy's `balance leastconn` counts only the connections HAProxy itself made, so an
// instance busy with streams that came another way (a direct client, a second balancer)
// looks idle to it. The agent's weight says how many of the instance's slots are free, so new
// streams go where a slot is: examples/haproxy/haproxy.cfg, scripts/serve-haproxy.sh.
//
// The reply (HAProxy's agent protocol, one ASCII line):
//   "ready up P%\n"  P = 100 x free slots / slots; 0 when every slot is busy: no new streams
//                    from the balancer's normal servers (the example config then queues on
//                    every instance through `backup` lines, so a full farm still queues rather
//                    than refusing); "ready" ends a drain left by an earlier run of this instance
//   "drain\n"        stopping: no new streams, the running ones finish (or are cancelled)
#include <atomic>
#include <functional>
#include <string>
#include <thread>

namespace rtf::serve {

std::string agent_reply(int active, int max_streams, bool stopping);

class AgentCheck {
public:
    // Binds host:port (throws rtf::Error(Setup) naming --agent-port when it cannot) and starts
    // the answering thread. `reply` is called once per connection, on that thread.
    AgentCheck(const std::string &host, int port, std::function<std::string()> reply);
    ~AgentCheck();  // stops the thread (within ~100 ms) and closes the socket
    AgentCheck(const AgentCheck &) = delete;
    AgentCheck &operator=(const AgentCheck &) = delete;
    int port() const { return port_; }

private:
    void loop();
    int fd_ = -1;
    int port_ = 0;
    std::function<std::string()> reply_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

}  // namespace rtf::serve
