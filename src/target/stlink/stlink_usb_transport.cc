// The ST-Link's own USB transport: the 16-byte command, the data to the probe and the reply as
// bulk transfers on the probe's endpoints (OpenOCD's stlink_usb.c, stlink_usb_xfer_rw; the
// stlink-org tools' _stlink_usb_send), and the probe found and opened through libusb-1.0.
// Nothing here has run on a real probe on this project's machines (docs/live.md says so): the
// framing is held to byte-exact exchanges (tests/target/stlink_link_test.cc), the opening to
// what libusb reports.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include <libusb.h>

#include "mcuprof/link/error.h"
#include "mcuprof/link/usb_holders.h"
#include "mcuprof/target/stlink_link.h"

namespace mcuprof::sources::stlink {
namespace {

constexpr uint16_t st_vendor = 0x0483;

class UsbTransport : public Transport {
public:
    UsbTransport(std::unique_ptr<UsbBulk> bulk, UsbEndpoints endpoints)
        : bulk_(std::move(bulk)), endpoints_(endpoints)
    {
    }
    ~UsbTransport() override { close(); }

    std::string transfer(const Command& command, std::string_view data_out, uint32_t reply_length) override
    {
        bulk_->write(endpoints_.command_out, std::string_view(reinterpret_cast<const char*>(command.data()), command.size()));
        if (!data_out.empty())
            bulk_->write(endpoints_.command_out, data_out);
        return reply_length == 0 ? std::string() : bulk_->read(endpoints_.reply_in, reply_length);
    }
    const std::string& peer() const override { return bulk_->peer(); }
    std::string device() const override { return bulk_->device(); }
    void close() override { bulk_->close(); }

private:
    std::unique_ptr<UsbBulk> bulk_;
    UsbEndpoints endpoints_;
};

std::string usb_error(int code)
{
    return std::string(libusb_error_name(code)) + " (" + libusb_strerror(code) + ")";
}

// One claimed ST-Link on libusb.
class LibusbBulk : public UsbBulk {
public:
    LibusbBulk(libusb_context* context, libusb_device_handle* handle, std::string peer, std::string device,
               transport::Duration timeout)
        : context_(context), handle_(handle), peer_(std::move(peer)), device_(std::move(device)),
          timeout_ms_(unsigned(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()))
    {
    }
    ~LibusbBulk() override { close(); }

    void write(uint8_t endpoint, std::string_view bytes) override
    {
        int sent = 0;
        std::string copy(bytes);   // libusb takes a mutable buffer
        const int r = libusb_bulk_transfer(handle_, endpoint, reinterpret_cast<unsigned char*>(copy.data()),
                                           int(copy.size()), &sent, timeout_ms_);
        if (r != 0 || size_t(sent) != bytes.size())
            fail(r, "bulk OUT", sent, bytes.size());
    }
    std::string read(uint8_t endpoint, uint32_t length) override
    {
        std::string reply(length, '\0');
        int got = 0;
        const int r = libusb_bulk_transfer(handle_, endpoint, reinterpret_cast<unsigned char*>(reply.data()),
                                           int(length), &got, timeout_ms_);
        if (r != 0 || uint32_t(got) != length)
            fail(r, "bulk IN", got, length);
        return reply;
    }
    const std::string& peer() const override { return peer_; }
    std::string device() const override { return device_; }
    void close() override
    {
        if (handle_ != nullptr) {
            libusb_release_interface(handle_, 0);
            libusb_close(handle_);
            handle_ = nullptr;
        }
        if (context_ != nullptr) {
            libusb_exit(context_);
            context_ = nullptr;
        }
    }

private:
    [[noreturn]] void fail(int code, const char* what, int done, size_t wanted) const
    {
        using Kind = transport::Error::Kind;
        if (code == LIBUSB_ERROR_NO_DEVICE)
            throw transport::Error(Kind::closed, peer_, what, "the ST-Link was unplugged");
        if (code == LIBUSB_ERROR_TIMEOUT)
            throw transport::Error(Kind::timeout, peer_, what, "the ST-Link did not answer");
        if (code != 0)
            throw transport::Error(Kind::protocol, peer_, what, usb_error(code));
        throw transport::Error(Kind::protocol, peer_, what,
                               std::to_string(done) + " of " + std::to_string(wanted) + " bytes transferred");
    }

    libusb_context* context_;
    libusb_device_handle* handle_;
    std::string peer_;
    std::string device_;
    unsigned timeout_ms_;
};

// The probe's serial as OpenOCD compares it: the string descriptor, or its bytes in hex where an
// older ST-LINK/V2 firmware reports binary ones (stlink_usb.c, stlink_usb_get_alternate_serial).
std::vector<std::string> serial_spellings(libusb_device_handle* handle, uint8_t index)
{
    unsigned char raw[128] = {};
    const int n = index == 0 ? 0 : libusb_get_string_descriptor_ascii(handle, index, raw, sizeof raw);
    if (n <= 0)
        return {};
    std::string text(reinterpret_cast<char*>(raw), size_t(n)), hex;
    for (unsigned char c : text) {
        char two[3];
        std::snprintf(two, sizeof two, "%02X", c);
        hex += two;
    }
    return {text, hex};
}

bool same_serial(const std::vector<std::string>& spellings, const std::string& wanted)
{
    return std::any_of(spellings.begin(), spellings.end(), [&](const std::string& s) {
        return s.size() == wanted.size() && std::equal(s.begin(), s.end(), wanted.begin(), [](char a, char b) {
                   return std::toupper(static_cast<unsigned char>(a)) == std::toupper(static_cast<unsigned char>(b));
               });
    });
}

} // namespace

std::optional<UsbEndpoints> stlink_usb_endpoints(uint16_t product_id)
{
    switch (product_id) {
    case 0x3748:   // ST-LINK/V2
        return UsbEndpoints{0x02, 0x81};
    case 0x374B: case 0x3752:                                 // ST-LINK/V2-1
    case 0x374E: case 0x374F: case 0x3753: case 0x3754: case 0x3757:   // STLINK-V3
        return UsbEndpoints{0x01, 0x81};
    default:
        return std::nullopt;
    }
}

std::unique_ptr<Transport> make_stlink_usb_transport(std::unique_ptr<UsbBulk> bulk, UsbEndpoints endpoints)
{
    return std::make_unique<UsbTransport>(std::move(bulk), endpoints);
}

std::unique_ptr<Transport> open_stlink_usb(const std::string& serial, transport::Duration timeout)
{
    using Kind = transport::Error::Kind;
    const std::string where = serial.empty() ? "usb" : "usb:" + serial;
    libusb_context* context = nullptr;
    if (const int r = libusb_init(&context); r != 0)
        throw transport::Error(Kind::connect, where, "libusb_init", usb_error(r));
    libusb_device** list = nullptr;
    const ssize_t count = libusb_get_device_list(context, &list);
    std::vector<std::string> skipped;   // what was found and could not be used, for the error
    std::unique_ptr<UsbBulk> opened;
    UsbEndpoints chosen;
    for (ssize_t i = 0; i < count && !opened; ++i) {
        libusb_device_descriptor d{};
        if (libusb_get_device_descriptor(list[i], &d) != 0 || d.idVendor != st_vendor)
            continue;
        const std::optional<UsbEndpoints> endpoints = stlink_usb_endpoints(d.idProduct);
        if (!endpoints)
            continue;
        const unsigned bus = libusb_get_bus_number(list[i]), address = libusb_get_device_address(list[i]);
        const std::string node = transport::usb_device_node(bus, address);
        char ids[16];
        std::snprintf(ids, sizeof ids, "%04X:%04X", d.idVendor, d.idProduct);
        libusb_device_handle* handle = nullptr;
        if (const int r = libusb_open(list[i], &handle); r != 0) {
            skipped.push_back(std::string(ids) + " at " + node + ": " +
                              (r == LIBUSB_ERROR_ACCESS ? "no permission (Debian's openocd package installs the udev "
                                                          "rules for ST-Links: replug the probe after installing it)"
                                                        : usb_error(r)));
            continue;
        }
        const std::vector<std::string> serials = serial_spellings(handle, d.iSerialNumber);
        if (!serial.empty() && !same_serial(serials, serial)) {
            skipped.push_back(std::string(ids) + " at " + node + ": serial " +
                              (serials.empty() ? std::string("unreadable") : serials.front()) + ", not " + serial);
            libusb_close(handle);
            continue;
        }
        const std::string named = serials.empty() ? "" : " serial " + serials.front();
        if (const int r = libusb_claim_interface(handle, 0); r != 0) {
            std::string why = usb_error(r);
            if (r == LIBUSB_ERROR_BUSY) {
                const std::vector<std::string> holders = transport::processes_holding({node});
                why = "held by another program" +
                      (holders.empty() ? std::string(" (OpenOCD, STM32CubeIDE's ST-LINK GDB server, stlink-server?)")
                                       : ": " + holders.front()) +
                      "; share it through ST's stlink-server instead (--stlink HOST[:PORT])";
            }
            skipped.push_back(std::string(ids) + named + " at " + node + ": " + why);
            libusb_close(handle);
            continue;
        }
        chosen = *endpoints;
        opened = std::make_unique<LibusbBulk>(context, handle, "ST-Link on USB " + node,
                                              std::string(ids) + named + " on USB " + node, timeout);
    }
    if (list != nullptr)
        libusb_free_device_list(list, 1);
    if (!opened) {
        libusb_exit(context);
        const std::string wanted = serial.empty() ? "an ST-Link" : "the ST-Link with serial " + serial;
        throw transport::Error(Kind::connect, where, "open",
                               skipped.empty() ? "no ST-Link on USB (VID 0483, the PIDs of ST-LINK/V2, V2-1 and V3)"
                                               : wanted + " could not be opened: " + skipped.front() +
                                                     (skipped.size() > 1 ? " (and " + std::to_string(skipped.size() - 1) +
                                                                               " more)" : ""));
    }
    return make_stlink_usb_transport(std::move(opened), chosen);
}

} // namespace mcuprof::sources::stlink
