#pragma once
// A GDB remote server on loopback for the transport's unit tests: it acknowledges each
// packet, hands its payload to a script, and sends back whatever raw bytes the script
// returns (framed packets, stray acks, NAKs). Only for tests of the RSP layer.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mcuprof/transport/rsp_packet.h"

namespace fakes {

class FakeGdbServer {
public:
    // script(payload) -> raw bytes to send; payload "\x03" stands for an interrupt byte.
    using Script = std::function<std::string(const std::string& payload)>;

    explicit FakeGdbServer(Script script, std::string greeting = {}) : script_(std::move(script))
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
        thread_ = std::thread([this, greeting] { serve(greeting); });
    }

    ~FakeGdbServer()
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

    // Every payload received, in order ("+" and "-" from the client included).
    std::vector<std::string> received()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return received_;
    }

private:
    void serve(const std::string& greeting)
    {
        client_ = ::accept(listener_, nullptr, nullptr);
        if (client_ < 0)
            return;
        if (!greeting.empty())
            send(greeting);
        mcuprof::transport::rsp::FrameReader reader;
        char buffer[4096];
        for (;;) {
            const ssize_t n = ::recv(client_, buffer, sizeof buffer, 0);
            if (n <= 0)
                return;
            reader.feed(std::string_view(buffer, size_t(n)));
            while (auto frame = reader.next()) {
                using Kind = mcuprof::transport::rsp::Frame::Kind;
                std::string payload;
                if (frame->kind == Kind::ack)
                    payload = "+";
                else if (frame->kind == Kind::nack)
                    payload = "-";
                else if (frame->kind == Kind::interrupt)
                    payload = "\x03";
                else
                    payload = frame->payload;
                {
                    std::lock_guard<std::mutex> lock(mutex_);
                    received_.push_back(payload);
                }
                if (frame->kind == Kind::ack || frame->kind == Kind::nack)
                    continue;
                std::string reply = frame->kind == Kind::packet ? "+" : "";
                reply += script_(payload);
                send(reply);
            }
        }
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

    Script script_;
    int listener_ = -1;
    int client_ = -1;
    uint16_t port_ = 0;
    std::thread thread_;
    std::mutex mutex_;
    std::vector<std::string> received_;
};

} // namespace fakes
