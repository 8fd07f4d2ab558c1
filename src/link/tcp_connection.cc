#include "mcuprof/link/tcp_connection.h"

#include <utility>

#include <boost/asio.hpp>

#include "mcuprof/link/error.h"
#include "deadline_stream.h"

namespace asio = boost::asio;
using asio::ip::tcp;

namespace mcuprof::transport {

Endpoint Endpoint::parse(std::string_view text, const std::string& what)
{
    Endpoint e;
    std::string_view port = text;
    const size_t colon = text.rfind(':');
    if (colon != std::string_view::npos) {
        if (colon > 0)
            e.host = std::string(text.substr(0, colon));
        port = text.substr(colon + 1);
    }
    unsigned value = 0;
    bool ok = !port.empty() && port.size() <= 5;
    for (char c : port) {
        ok = ok && c >= '0' && c <= '9';
        value = value * 10 + unsigned(c - '0');
    }
    if (!ok || value == 0 || value > 65535)
        throw Error(Error::Kind::protocol, what, "", "'" + std::string(text) + "' is not HOST:PORT");
    e.port = static_cast<uint16_t>(value);
    return e;
}

struct TcpConnection::Impl : detail::DeadlineStream<tcp::socket> {};

TcpConnection::TcpConnection(const Endpoint& endpoint, Duration timeout, std::string peer,
                             const std::string& when_refused)
    : impl_(std::make_unique<Impl>()), peer_(std::move(peer))
{
    boost::system::error_code error;
    tcp::resolver resolver(impl_->io);
    auto endpoints = resolver.resolve(endpoint.host, std::to_string(endpoint.port), error);
    if (error)
        throw Error(Error::Kind::connect, peer_, "", "cannot resolve " + endpoint.host + ": " + error.message());
    bool done = false;
    asio::async_connect(impl_->stream, endpoints, [&](const boost::system::error_code& e, const tcp::endpoint&) {
        error = e;
        done = true;
    });
    impl_->run_until_done(done, timeout);
    if (error == asio::error::operation_aborted)
        throw Error(Error::Kind::timeout, peer_, "", "no connection within the time-out");
    if (error == asio::error::connection_refused && !when_refused.empty())
        throw Error(Error::Kind::connect, peer_, "", "nothing listens on " + endpoint.text() + ": " + when_refused);
    if (error)
        throw Error(Error::Kind::connect, peer_, "", "cannot connect: " + error.message());
    impl_->stream.set_option(tcp::no_delay(true), error);   // small request/reply packets: no Nagle delay
}

TcpConnection::~TcpConnection() = default;

void TcpConnection::write(std::string_view bytes, Duration timeout)
{
    impl_->write(bytes, timeout, peer_);
}

bool TcpConnection::try_read_some(std::string& into, Duration timeout)
{
    return impl_->try_read_some(into, timeout, peer_);
}

void TcpConnection::read_some(std::string& into, Duration timeout)
{
    impl_->read_some(into, timeout, peer_);
}

void TcpConnection::close()
{
    boost::system::error_code ignored;
    impl_->stream.shutdown(tcp::socket::shutdown_both, ignored);
    impl_->stream.close(ignored);
}

} // namespace mcuprof::transport
