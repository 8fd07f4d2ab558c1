#include "mcuprof/transport/tcp_connection.h"

#include <utility>

#include <boost/asio.hpp>

#include "mcuprof/transport/error.h"

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

struct TcpConnection::Impl {
    asio::io_context io;
    tcp::socket socket{io};

    // Runs the io_context until the operation's handler ran or the time is up. On time-out
    // the operation is cancelled and run to its handler, which then sees operation_aborted,
    // or success if it completed in the meantime: the caller looks at the error code, so
    // no byte that arrived is lost.
    void run_until_done(const bool& done, Duration timeout)
    {
        io.restart();
        io.run_for(timeout);
        if (done)
            return;
        boost::system::error_code ignored;
        socket.cancel(ignored);
        io.restart();
        io.run();
    }
};

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
    asio::async_connect(impl_->socket, endpoints, [&](const boost::system::error_code& e, const tcp::endpoint&) {
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
    impl_->socket.set_option(tcp::no_delay(true), error);   // small request/reply packets: no Nagle delay
}

TcpConnection::~TcpConnection() = default;

void TcpConnection::write(std::string_view bytes, Duration timeout)
{
    boost::system::error_code error;
    bool done = false;
    asio::async_write(impl_->socket, asio::buffer(bytes.data(), bytes.size()),
                      [&](const boost::system::error_code& e, size_t) {
                          error = e;
                          done = true;
                      });
    impl_->run_until_done(done, timeout);
    if (error == asio::error::operation_aborted)
        throw Error(Error::Kind::timeout, peer_, "", "write did not complete within the time-out");
    if (error)
        throw Error(Error::Kind::closed, peer_, "", "connection lost while writing: " + error.message());
}

bool TcpConnection::try_read_some(std::string& into, Duration timeout)
{
    char buffer[16384];
    boost::system::error_code error;
    size_t got = 0;
    bool done = false;
    impl_->socket.async_read_some(asio::buffer(buffer), [&](const boost::system::error_code& e, size_t n) {
        error = e;
        got = n;
        done = true;
    });
    impl_->run_until_done(done, timeout);
    if (error == asio::error::operation_aborted)
        return false;
    if (error == asio::error::eof || error == asio::error::connection_reset)
        throw Error(Error::Kind::closed, peer_, "", "connection closed by the peer");
    if (error)
        throw Error(Error::Kind::closed, peer_, "", "connection lost: " + error.message());
    into.append(buffer, got);
    return true;
}

void TcpConnection::read_some(std::string& into, Duration timeout)
{
    if (!try_read_some(into, timeout))
        throw Error(Error::Kind::timeout, peer_, "", "no answer within the time-out");
}

void TcpConnection::close()
{
    boost::system::error_code ignored;
    impl_->socket.shutdown(tcp::socket::shutdown_both, ignored);
    impl_->socket.close(ignored);
}

} // namespace mcuprof::transport
