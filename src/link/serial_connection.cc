#include "mcuprof/link/serial_connection.h"

#include <utility>

#include <boost/asio.hpp>

#include "deadline_stream.h"
#include "mcuprof/link/error.h"

namespace asio = boost::asio;

namespace mcuprof::transport {

struct SerialConnection::Impl : detail::DeadlineStream<asio::serial_port> {};

SerialConnection::SerialConnection(const std::string& device, unsigned baud, std::string peer)
    : impl_(std::make_unique<Impl>()), peer_(std::move(peer))
{
    boost::system::error_code error;
    // Asio's open puts the line in raw mode (termios: no echo, no canonical input, no
    // character translation) and sets CLOCAL, so that a modem line's carrier is not awaited.
    impl_->stream.open(device, error);
    if (error)
        throw Error(Error::Kind::connect, peer_, "", "cannot open " + device + ": " + error.message());
    using port = asio::serial_port;
    impl_->stream.set_option(port::baud_rate(baud), error);
    if (error)
        throw Error(Error::Kind::connect, peer_, "", "cannot set the line to " + std::to_string(baud) +
                                                         " baud: " + error.message());
    // 8N1 without flow control: what USB CDC-ACM GDB servers and UART bridges expect.
    auto set = [&](const auto& option) {
        impl_->stream.set_option(option, error);
        if (error)
            throw Error(Error::Kind::connect, peer_, "", "cannot set up the line (8N1): " + error.message());
    };
    set(port::character_size(8));
    set(port::parity(port::parity::none));
    set(port::stop_bits(port::stop_bits::one));
    set(port::flow_control(port::flow_control::none));
}

SerialConnection::~SerialConnection() = default;

void SerialConnection::write(std::string_view bytes, Duration timeout)
{
    impl_->write(bytes, timeout, peer_);
}

bool SerialConnection::try_read_some(std::string& into, Duration timeout)
{
    return impl_->try_read_some(into, timeout, peer_);
}

void SerialConnection::read_some(std::string& into, Duration timeout)
{
    impl_->read_some(into, timeout, peer_);
}

void SerialConnection::close()
{
    boost::system::error_code ignored;
    impl_->stream.close(ignored);
}

} // namespace mcuprof::transport
