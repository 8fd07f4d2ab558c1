#include "mcuprof/vprobe/probe_server.h"

#include <array>
#include <csignal>
#include <utility>   // before Boost.Asio 1.74: its awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>

#include "mcuprof/vprobe/error.h"

namespace asio = boost::asio;
using asio::ip::tcp;

namespace mcuprof::vprobe {

struct ProbeServer::Impl {
    asio::io_context io;
    tcp::acceptor acceptor{io};
    tcp::socket socket{io};
    asio::signal_set signals{io};
    asio::steady_timer idle{io};
    asio::steady_timer latency{io};
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
        latency.cancel();
        io.stop();
    }
};

ProbeServer::ProbeServer(const std::string& protocol_name, const std::string& host, uint16_t port)
    : impl_(std::make_unique<Impl>())
{
    boost::system::error_code error;
    const auto address = asio::ip::make_address(host, error);
    impl_->listening = protocol_name + " " + host + ":" + std::to_string(port);
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

ProbeServer::~ProbeServer() = default;

uint16_t ProbeServer::port() const
{
    boost::system::error_code error;
    const auto endpoint = impl_->acceptor.local_endpoint(error);
    return error ? 0 : endpoint.port();
}

void ProbeServer::stop()
{
    asio::post(impl_->io, [impl = impl_.get()] { impl->finish(End::stopped); });
}

ProbeServer::End ProbeServer::serve_with(ByteProtocol& protocol, bool stop_on_signals)
{
    Impl& s = *impl_;
    if (stop_on_signals) {
        s.signals.add(SIGINT);
        s.signals.add(SIGTERM);
        s.signals.add(SIGUSR1);
        s.wait_for_signals(on_report);
    }

    // Read what OpenOCD sent, perform it, answer, read again. OpenOCD waits for the answer
    // of a scan or a command before it sends the next one, so each chunk ends in a write.
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
            const auto arrived = std::chrono::steady_clock::now();
            if (e) {
                s.finish(e == asio::error::operation_aborted ? s.end : End::disconnected);
                return;
            }
            s.replies.clear();
            const bool more = protocol.feed(std::string_view(s.buffer.data(), n), s.replies);
            auto next = [&, more](const boost::system::error_code& we, size_t) {
                if (we)
                    s.finish(End::disconnected);
                else if (!more)
                    s.finish(End::quit);
                else
                    read_more();
            };
            if (s.replies.empty()) {
                next({}, 0);
            } else if (reply_latency.count() == 0) {
                asio::async_write(s.socket, asio::buffer(s.replies), next);
            } else {
                s.latency.expires_at(arrived + reply_latency);
                s.latency.async_wait([&, next](const boost::system::error_code& te) {
                    if (!te)
                        asio::async_write(s.socket, asio::buffer(s.replies), next);
                });
            }
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
