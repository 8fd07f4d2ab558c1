// ST's stlink-server protocol, the client side (OpenOCD 0.12's `st-link backend tcp`,
// stlink_usb.c's STLINK_TCP_* requests; the vprobe serves the same, docs/vprobe.md). All
// integers little-endian; every request starts with its command byte:
//   0x00 refresh device list  2 bytes -> status
//   0x01 number of devices    1 byte  -> count
//   0x02 device info          8 bytes ([1] the index) -> status, device id, serial[32], VID, PID, in use
//   0x03 open device          8 bytes ([3] 0: shared, [4] device id) -> status, connection id
//   0x04 close device         8 bytes ([4] connection id) -> status
//   0x05 USB command          32 bytes ([4] connection id, [8..23] the command, [24] direction:
//                             0 data to the probe, 1 data from it; [28] data length), then
//                             the data when it goes to the probe -> status, then the data from it
//   0x06 server version       4 bytes ([1] the client's API, 1) -> API, major, minor, build
//   0x07 the device's clients 8 bytes ([4] device id) -> status, how many have it open
//                             (GET_NB_OF_DEV_CLIENTS: named in stlink_usb.c and never sent
//                             there; the layout of its neighbours 0x03/0x04, docs/vprobe.md)
#include <cstdio>

#include "mcuprof/link/error.h"
#include "mcuprof/link/tcp_connection.h"
#include "mcuprof/target/stlink_link.h"

namespace mcuprof::sources::stlink {
namespace {

constexpr uint32_t server_ok = 1;
constexpr size_t usb_request_header = 32;
constexpr uint8_t to_probe = 0;
constexpr uint8_t from_probe = 1;
constexpr size_t device_info_length = 4 + 4 + 32 + 2 + 2 + 1;

void put32(std::string& s, size_t at, uint32_t value)
{
    for (size_t i = 0; i < 4; ++i)
        s[at + i] = char(uint8_t(value >> (8 * i)));
}

class ServerTransport : public Transport {
public:
    ServerTransport(std::unique_ptr<transport::ByteStream> stream, transport::Duration timeout)
        : stream_(std::move(stream)), timeout_(timeout), peer_(stream_->peer())
    {
        std::string refresh(2, '\0');   // [1] 0: keep the devices the server knows
        expect_ok(exchange(refresh, 4), "refresh device list");
        std::string count(1, '\x01');
        const uint32_t devices = le32(exchange(count, 4), 0);
        if (devices == 0)
            throw transport::Error(transport::Error::Kind::protocol, peer_, "device list",
                                   "the stlink-server lists no ST-Link (is the probe plugged in?)");
        std::string info(8, '\0');
        info[0] = 0x02;   // the first probe, [1] its index 0
        const std::string answer = exchange(info, device_info_length);
        expect_ok(answer, "device info");
        device_id_ = le32(answer, 4);
        serial_ = answer.substr(8, 32);
        serial_.resize(serial_.find('\0') == std::string::npos ? serial_.size() : serial_.find('\0'));
        char ids[16];
        std::snprintf(ids, sizeof ids, "%02X%02X:%02X%02X", uint8_t(answer[41]), uint8_t(answer[40]),
                      uint8_t(answer[43]), uint8_t(answer[42]));
        ids_ = ids;
        // Another program opened it exclusively (STM32CubeProgrammer can): the server will not share it.
        if (answer[44] != 0)
            throw transport::Error(transport::Error::Kind::protocol, peer_, "device info",
                                   "the ST-Link " + serial_ + " is held exclusively by another program of the "
                                                              "stlink-server (close it, or let it share the probe)");
        std::string open(8, '\0');
        open[0] = 0x03;   // [3] 0: shared with the server's other clients
        put32(open, 4, device_id_);
        const std::string opened = exchange(open, 8);
        expect_ok(opened, "open device");
        connection_ = le32(opened, 4);
        open_ = true;
    }
    ~ServerTransport() override { close(); }

    std::string transfer(const Command& command, std::string_view data_out, uint32_t reply_length) override
    {
        std::string request(usb_request_header, '\0');
        request[0] = 0x05;
        put32(request, 4, connection_);
        for (size_t i = 0; i < command.size(); ++i)
            request[8 + i] = char(command[i]);
        const bool sends = !data_out.empty();
        request[24] = char(sends ? to_probe : from_probe);
        put32(request, 28, uint32_t(sends ? data_out.size() : reply_length));
        request.append(data_out);
        std::string reply = exchange(request, 4 + (sends ? 0 : reply_length));
        const uint32_t status = le32(reply, 0);
        if (status != server_ok) {
            char text[64];
            std::snprintf(text, sizeof text, "the stlink-server refused the USB command (status 0x%X)", unsigned(status));
            throw transport::Error(transport::Error::Kind::protocol, peer_, "USB command", text);
        }
        return reply.substr(4);
    }
    const std::string& peer() const override { return peer_; }
    std::optional<unsigned> clients() override
    {
        if (!counts_clients_)
            return std::nullopt;
        std::string request(8, '\0');
        request[0] = 0x07;
        put32(request, 4, device_id_);
        // The status first: a server that does not know the command answers with it alone.
        if (le32(exchange(request, 4), 0) != server_ok) {
            counts_clients_ = false;   // "not available" now, and later
            return std::nullopt;
        }
        const uint32_t count = le32(exchange({}, 4), 0);
        if (count == 0)
            counts_clients_ = false;   // not even this one: the count means something else
        return count ? std::optional<unsigned>(count) : std::nullopt;
    }
    std::string device() const override { return "ST-Link " + serial_ + " (" + ids_ + ") through " + peer_; }
    void close() override
    {
        if (!open_)
            return;
        open_ = false;
        try {
            std::string request(8, '\0');
            request[0] = 0x04;
            put32(request, 4, connection_);
            exchange(request, 4);
        } catch (const transport::Error&) {
            // the server is gone: nothing of ours stays open there
        }
        stream_->close();
    }

private:
    std::string exchange(const std::string& request, size_t reply_length)
    {
        if (!request.empty())
            stream_->write(request, timeout_);
        while (pending_.size() < reply_length)
            stream_->read_some(pending_, timeout_);
        std::string reply = pending_.substr(0, reply_length);
        pending_.erase(0, reply_length);
        return reply;
    }
    void expect_ok(const std::string& reply, const char* what) const
    {
        if (le32(reply, 0) != server_ok)
            throw transport::Error(transport::Error::Kind::protocol, peer_, what,
                                   "the stlink-server answered status " + std::to_string(le32(reply, 0)));
    }

    std::unique_ptr<transport::ByteStream> stream_;
    transport::Duration timeout_;
    std::string peer_;
    std::string pending_;
    uint32_t device_id_ = 0;
    uint32_t connection_ = 0;
    std::string serial_;
    std::string ids_;
    bool open_ = false;
    bool counts_clients_ = true;
};

} // namespace

std::unique_ptr<Transport> make_stlink_server_transport(std::unique_ptr<transport::ByteStream> stream,
                                                        transport::Duration timeout)
{
    return std::make_unique<ServerTransport>(std::move(stream), timeout);
}

std::unique_ptr<Transport> make_stlink_server_transport(const transport::Endpoint& server, transport::Duration timeout)
{
    return make_stlink_server_transport(
        std::make_unique<transport::TcpConnection>(server, timeout, "stlink-server " + server.text(),
                                                   "start ST's stlink-server, or `mcuprof vprobe --stlink-port`"),
        timeout);
}

} // namespace mcuprof::sources::stlink
