#include "mcuprof/vprobe/remote_bitbang.h"

#include <array>
#include <csignal>
#include <utility>   // before Boost.Asio 1.74: its awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>

#include "mcuprof/vprobe/error.h"

namespace asio = boost::asio;
using asio::ip::tcp;

namespace mcuprof::vprobe {

bool RemoteBitbangDecoder::feed(std::string_view bytes, std::string& replies)
{
    for (const char c : bytes) {
        if (c >= '0' && c <= '7') {
            const unsigned bits = unsigned(c - '0');
            pins_.write(bits & 4, bits & 2, bits & 1);
        } else if (c == 'R') {
            replies.push_back(pins_.tdo() ? '1' : '0');
            ++reads_;
        } else if (c >= 'r' && c <= 'u') {
            const unsigned bits = unsigned(c - 'r');
            pins_.reset(bits & 2, bits & 1);
        } else if (c == 'B' || c == 'b') {
            pins_.blink(c == 'B');
        } else if (c == 'Q') {
            ++requests_;
            return false;
        } else if (c == '\n' || c == '\r' || c == ' ') {
            continue;   // hand-typed sessions (telnet, nc) send these
        } else {
            ++unknown_;
            continue;
        }
        ++requests_;
    }
    return true;
}

struct RemoteBitbangServer::Impl {
    asio::io_context io;
    tcp::acceptor acceptor{io};
    tcp::socket socket{io};
    asio::signal_set signals{io};
    asio::steady_timer idle{io};
    std::string listening;
    std::array<char, 65536> buffer{};
    std::string replies;
    End end = End::stopped;

    // SIGINT and SIGTERM end the session; SIGUSR1 calls `report` and waits again.
    void wait_for_signals(const std::function<void()>& report)
    {
        signals.async_wait([this, &report](const boost::system::error_code& e, int signal) {
            if (e)
                return;
            if (signal != SIGUSR1) {
                finish(End::stopped);
                return;
            }
            if (report)
                report();
            wait_for_signals(report);
        });
    }

    void finish(End why)
    {
        end = why;
        boost::system::error_code ignored;
        acceptor.close(ignored);
        socket.shutdown(tcp::socket::shutdown_both, ignored);
        socket.close(ignored);
        signals.cancel(ignored);
        idle.cancel();
        io.stop();
    }
};

RemoteBitbangServer::RemoteBitbangServer(JtagPins& pins, const std::string& host, uint16_t port)
    : impl_(std::make_unique<Impl>()), decoder_(pins)
{
    boost::system::error_code error;
    const auto address = asio::ip::make_address(host, error);
    impl_->listening = "remote_bitbang " + host + ":" + std::to_string(port);
    if (error)
        throw Error(impl_->listening, "", "'" + host + "' is not an IP address");
    const tcp::endpoint endpoint(address, port);
    impl_->acceptor.open(endpoint.protocol(), error);
    if (!error)
        impl_->acceptor.set_option(tcp::acceptor::reuse_address(true), error);
    if (!error)
        impl_->acceptor.bind(endpoint, error);
    if (!error)
        impl_->acceptor.listen(1, error);
    if (error)
        throw Error(impl_->listening, "", "cannot listen: " + error.message());
}

RemoteBitbangServer::~RemoteBitbangServer() = default;

uint16_t RemoteBitbangServer::port() const
{
    boost::system::error_code error;
    const auto endpoint = impl_->acceptor.local_endpoint(error);
    return error ? 0 : endpoint.port();
}

void RemoteBitbangServer::stop()
{
    asio::post(impl_->io, [impl = impl_.get()] { impl->finish(End::stopped); });
}

RemoteBitbangServer::End RemoteBitbangServer::serve(bool stop_on_signals)
{
    Impl& s = *impl_;
    if (stop_on_signals) {
        s.signals.add(SIGINT);
        s.signals.add(SIGTERM);
        s.signals.add(SIGUSR1);
        s.wait_for_signals(on_report);
    }

    // Read what OpenOCD sent, perform it, answer the reads, read again. OpenOCD waits for
    // the answers of a scan before it sends the next one, so each chunk ends in a write.
    std::function<void()> read_more;
    read_more = [&] {
        if (on_idle) {
            s.idle.expires_after(idle_after);
            s.idle.async_wait([this](const boost::system::error_code& e) {
                if (!e)
                    on_idle();
            });
        }
        s.socket.async_read_some(asio::buffer(s.buffer), [&](const boost::system::error_code& e, size_t n) {
            s.idle.cancel();
            if (e) {
                s.finish(e == asio::error::operation_aborted ? s.end : End::disconnected);
                return;
            }
            s.replies.clear();
            const bool more = decoder_.feed(std::string_view(s.buffer.data(), n), s.replies);
            auto next = [&, more](const boost::system::error_code& we, size_t) {
                if (we)
                    s.finish(End::disconnected);
                else if (!more)
                    s.finish(End::quit);
                else
                    read_more();
            };
            if (s.replies.empty())
                next({}, 0);
            else
                asio::async_write(s.socket, asio::buffer(s.replies), next);
        });
    };

    s.acceptor.async_accept(s.socket, [&](const boost::system::error_code& e) {
        if (e) {
            if (e != asio::error::operation_aborted)
                s.finish(End::disconnected);
            return;
        }
        boost::system::error_code ignored;
        s.socket.set_option(tcp::no_delay(true), ignored);   // one small answer per scan: no Nagle delay
        s.acceptor.close(ignored);                           // one session; a second client is refused
        if (on_connected) {
            const auto peer = s.socket.remote_endpoint(ignored);
            on_connected(peer.address().to_string() + ":" + std::to_string(peer.port()));
        }
        read_more();
    });

    s.io.restart();
    s.io.run();
    return s.end;
}

} // namespace mcuprof::vprobe
