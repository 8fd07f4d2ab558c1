#pragma once
// OpenOCD's Tcl RPC server on loopback, for the Tcl client's unit tests: it collects each
// message up to the byte 0x1a, hands it to a script and sends back the script's answer in
// the pieces the script chooses, each piece after a short pause (to cut replies across TCP
// reads), then 0x1a. An answer of nullopt sends nothing; "\x04" closes the connection.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace fakes {

class FakeTclServer {
public:
    using Script = std::function<std::optional<std::vector<std::string>>(const std::string& message)>;

    explicit FakeTclServer(Script script) : script_(std::move(script))
    {
        listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address);
        socklen_t length = sizeof address;
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
        port_ = ntohs(address.sin_port);
        ::listen(listener_, 1);
        thread_ = std::thread([this] { serve(); });
    }

    ~FakeTclServer()
    {
        ::shutdown(listener_, SHUT_RDWR);
        ::close(listener_);
        if (client_ >= 0)
            ::shutdown(client_, SHUT_RDWR);
        thread_.join();
        if (client_ >= 0)
            ::close(client_);
    }

    uint16_t port() const { return port_; }

    std::vector<std::string> received()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return received_;
    }

private:
    void serve()
    {
        client_ = ::accept(listener_, nullptr, nullptr);
        if (client_ < 0)
            return;
        std::string pending;
        char buffer[4096];
        for (;;) {
            const ssize_t n = ::recv(client_, buffer, sizeof buffer, 0);
            if (n <= 0)
                return;
            pending.append(buffer, size_t(n));
            size_t end;
            while ((end = pending.find('\x1a')) != std::string::npos) {
                const std::string message = pending.substr(0, end);
                pending.erase(0, end + 1);
                {
                    std::lock_guard<std::mutex> lock(mutex_);
                    received_.push_back(message);
                }
                const auto answer = script_(message);
                if (!answer)
                    continue;
                if (!answer->empty() && answer->front() == "\x04") {
                    ::shutdown(client_, SHUT_RDWR);
                    return;
                }
                for (const std::string& piece : *answer) {
                    send(piece);
                    std::this_thread::sleep_for(std::chrono::milliseconds(2));
                }
                send("\x1a");
            }
        }
    }

    void send(const std::string& bytes)
    {
        ::send(client_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    }

    Script script_;
    int listener_ = -1;
    int client_ = -1;
    uint16_t port_ = 0;
    std::thread thread_;
    std::mutex mutex_;
    std::vector<std::string> received_;
};

} // namespace fakes
