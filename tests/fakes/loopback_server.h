#pragma once
// A one-client TCP server on a free loopback port, for the transports' unit tests: the
// socket, the serving thread and the log of what the client sent. Each fake protocol
// server (fake_gdb_server.h, fake_tcl_server.h) says only how it reads and answers.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace fakes {

class LoopbackServer {
public:
    LoopbackServer()
    {
        listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        address.sin_port = 0;   // a free port, chosen by the kernel
        ::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address);
        socklen_t length = sizeof address;
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
        port_ = ntohs(address.sin_port);
        ::listen(listener_, 1);
    }

    virtual ~LoopbackServer() { stop(); }
    LoopbackServer(const LoopbackServer&) = delete;
    LoopbackServer& operator=(const LoopbackServer&) = delete;

    uint16_t port() const { return port_; }

    // Every message received, in order, as the protocol server logged them.
    std::vector<std::string> received()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return received_;
    }

protected:
    // Serves one client on a thread: `greeting` first if any, then `on_bytes` with every
    // chunk read, until the client leaves or on_bytes returns false.
    void start(std::string greeting, std::function<bool(std::string_view)> on_bytes)
    {
        thread_ = std::thread([this, greeting = std::move(greeting), on_bytes = std::move(on_bytes)] {
            client_ = ::accept(listener_, nullptr, nullptr);
            if (client_ < 0)
                return;
            if (!greeting.empty())
                send(greeting);
            char buffer[4096];
            for (;;) {
                const ssize_t n = ::recv(client_, buffer, sizeof buffer, 0);
                if (n <= 0 || !on_bytes(std::string_view(buffer, size_t(n))))
                    return;
            }
        });
    }

    void log(const std::string& message)
    {
        std::lock_guard<std::mutex> lock(mutex_);
        received_.push_back(message);
    }

    void send(const std::string& bytes)
    {
        size_t sent = 0;
        while (sent < bytes.size()) {
            const ssize_t n = ::send(client_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
            if (n <= 0)
                return;
            sent += size_t(n);
        }
    }

    void hang_up() { ::shutdown(client_, SHUT_RDWR); }

    // Ends the serving thread. A protocol server calls it in its own destructor, before its
    // members (which the thread uses) go away.
    void stop()
    {
        if (listener_ < 0)
            return;
        ::shutdown(listener_, SHUT_RDWR);
        ::close(listener_);
        listener_ = -1;
        if (client_ >= 0)
            ::shutdown(client_, SHUT_RDWR);
        if (thread_.joinable())
            thread_.join();
        if (client_ >= 0)
            ::close(client_);
        client_ = -1;
    }

private:
    int listener_ = -1;
    int client_ = -1;
    uint16_t port_ = 0;
    std::thread thread_;
    std::mutex mutex_;
    std::vector<std::string> received_;
};

} // namespace fakes
