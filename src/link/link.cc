#include "mcuprof/link/link.h"

#include "mcuprof/link/error.h"
#include "mcuprof/link/serial_connection.h"

namespace mcuprof::transport {

LinkAddress LinkAddress::parse(std::string_view text, const std::string& what, unsigned baud)
{
    LinkAddress address;
    if (!text.empty() && (text.front() == '/' || text.front() == '.')) {
        address.device = std::string(text);
        if (baud != 0)
            address.baud = baud;
        return address;
    }
    address.tcp = Endpoint::parse(text, what);
    if (baud != 0)
        throw Error(Error::Kind::protocol, what, "", "--baud is for a serial device; '" + std::string(text) +
                                                         "' is HOST:PORT");
    return address;
}

std::unique_ptr<ByteStream> open_link(const LinkAddress& address, Duration timeout, std::string peer,
                                      const std::string& when_refused)
{
    if (address.serial())
        return std::make_unique<SerialConnection>(address.device, address.baud, std::move(peer));
    return std::make_unique<TcpConnection>(address.tcp, timeout, std::move(peer), when_refused);
}

} // namespace mcuprof::transport
