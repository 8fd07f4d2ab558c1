#include "mcuprof/target/stlink_link.h"

#include <algorithm>
#include <cstdio>

#include "mcuprof/link/error.h"

namespace mcuprof::sources::stlink {
namespace {

void put32(Command& c, size_t at, uint32_t value)
{
    for (size_t i = 0; i < 4; ++i)
        c[at + i] = uint8_t(value >> (8 * i));
}

// WAIT from the access port: the firmware gave up on a slow bus; stlink_usb.c asks again
// (stlink_cmd_allow_retry), a few times.
constexpr int wait_retries = 8;

} // namespace

std::string describe_status(uint8_t status)
{
    const char* name = "an error";
    switch (status) {
    case status_ok: name = "ok"; break;
    case status_fault: name = "fault"; break;
    case status_swd_ap_wait: name = "SWD AP wait"; break;
    case status_swd_dp_wait: name = "SWD DP wait"; break;
    case 0x11: name = "SWD AP fault"; break;
    case 0x15: name = "SWD DP fault"; break;
    case 0x09: name = "no IDCODE"; break;
    case 0x1D: name = "bad AP"; break;
    default: break;
    }
    char text[48];
    std::snprintf(text, sizeof text, "0x%02X (%s)", unsigned(status), name);
    return text;
}

std::string Version::text() const
{
    char out[48];
    std::snprintf(out, sizeof out, "V%uJ%u (%04X:%04X)", stlink, jtag, unsigned(vid), unsigned(pid));
    return out;
}

StlinkLink::StlinkLink(std::unique_ptr<Transport> transport) : transport_(std::move(transport)) {}

Command StlinkLink::debug(uint8_t sub, uint32_t address, uint32_t value_or_length, bool length16)
{
    Command c{};
    c[0] = debug_command;
    c[1] = sub;
    put32(c, 2, address);
    if (length16) {   // READMEM: a 16-bit length after the address
        c[6] = uint8_t(value_or_length);
        c[7] = uint8_t(value_or_length >> 8);
    } else {
        put32(c, 6, value_or_length);
    }
    return c;
}

std::string StlinkLink::transfer(const Command& command, uint32_t reply_length, std::string_view data_out)
{
    ++commands_;
    std::string reply = transport_->transfer(command, data_out, reply_length);
    if (reply.size() != reply_length)
        throw transport::Error(transport::Error::Kind::protocol, peer(), "USB reply",
                               "the probe answered " + std::to_string(reply.size()) + " bytes, not " +
                                   std::to_string(reply_length));
    return reply;
}

std::string StlinkLink::checked(const Command& command, uint32_t reply_length, const char* what)
{
    for (int attempt = 0;; ++attempt) {
        std::string reply = transfer(command, reply_length);
        const uint8_t status = uint8_t(reply[0]);
        if (status == status_ok)
            return reply;
        if ((status == status_swd_ap_wait || status == status_swd_dp_wait) && attempt < wait_retries)
            continue;
        throw transport::Error(transport::Error::Kind::protocol, peer(), what,
                               "the ST-Link answered status " + describe_status(status));
    }
}

Version StlinkLink::read_version()
{
    Command c{};
    c[0] = get_version;
    // Six bytes: a big-endian word of 4-bit ST-Link, 6-bit JTAG and 6-bit SWIM versions, then
    // VID and PID (stlink_usb_version).
    const std::string v = transfer(c, 6);
    const uint32_t word = uint32_t(uint8_t(v[0])) << 8 | uint8_t(v[1]);
    Version version;
    version.stlink = (word >> 12) & 0xF;
    version.jtag = (word >> 6) & 0x3F;
    version.vid = uint16_t(le16(v, 2));
    version.pid = uint16_t(le16(v, 4));
    if (version.stlink >= 3) {
        // A V3 leaves those fields 0 and gives each version a byte of its own: ST-Link, SWIM,
        // JTAG, mass storage, bridge; VID and PID at 8.
        Command ex{};
        ex[0] = get_version_ex;
        const std::string x = transfer(ex, 12);
        version.stlink = uint8_t(x[0]);
        version.jtag = uint8_t(x[2]);
        version.vid = uint16_t(le16(x, 8));
        version.pid = uint16_t(le16(x, 10));
    }
    // READALLREGS with a status word, READDEBUGREG and WRITEDEBUGREG are debug API v2: a V2
    // from JTAG firmware 11 on, every V3 (stlink_usb.c: jtag_api = STLINK_JTAG_API_V2).
    if (version.stlink < 2 || (version.stlink == 2 && version.jtag < 11))
        throw transport::Error(transport::Error::Kind::protocol, peer(), "GET_VERSION",
                               "the ST-Link " + version.text() +
                                   " speaks debug API v1 only; mcuprof needs a V2 with firmware J11 or later, or a V3 "
                                   "(update it with ST's STLinkUpgrade)");
    return version;
}

void StlinkLink::enter_swd()
{
    Command mode{};
    mode[0] = get_current_mode;
    const uint8_t current = uint8_t(transfer(mode, 2)[0]);
    if (current == mode_debug)
        return;   // another client of the server entered it: its session goes on
    if (current == mode_dfu) {
        Command leave{};
        leave[0] = dfu_command;
        leave[1] = dfu_exit;
        transfer(leave, 0);
    }
    Command c = debug(enter);
    c[2] = enter_swd_no_reset;
    c[3] = c[4] = c[5] = 0;
    checked(c, 2, "ENTER SWD");
}

uint32_t StlinkLink::read_debug_register(uint32_t address)
{
    // API v2: the status word, then the value.
    return le32(checked(debug(stlink::read_debug_register, address), 8, "READDEBUGREG"), 4);
}

void StlinkLink::write_debug_register(uint32_t address, uint32_t value)
{
    checked(debug(stlink::write_debug_register, address, value), 2, "WRITEDEBUGREG");
}

AllRegisters StlinkLink::read_all_registers()
{
    const std::string reply = checked(debug(stlink::read_all_registers), all_registers_reply_length, "READALLREGS");
    AllRegisters registers;
    for (unsigned i = 0; i < all_registers_count; ++i)
        registers.words[i] = le32(reply, 4 + 4 * i);
    return registers;
}

std::string StlinkLink::read_memory(uint32_t address, uint32_t length, bool check)
{
    std::string bytes;
    while (bytes.size() < length) {
        const uint32_t at = address + uint32_t(bytes.size());
        const uint32_t left = length - uint32_t(bytes.size());
        const uint32_t chunk = std::min(left, tar_block - (at & (tar_block - 1)));
        bytes += transfer(debug(readmem_32bit, at, chunk, true), chunk);
        if (check) {
            // GETLASTRWSTATUS2: the status of the last memory command, the faulting address at 4.
            const std::string status = transfer(debug(last_rw_status2), 12);
            if (uint8_t(status[0]) != status_ok)
                return {};
        }
    }
    return bytes;
}

std::vector<uint32_t> StlinkLink::read_word_repeatedly(uint32_t address, unsigned count)
{
    std::vector<uint32_t> words;
    words.reserve(count);
    while (words.size() < count) {
        const unsigned chunk = std::min(count - unsigned(words.size()), same_address_words);
        const std::string bytes = transfer(debug(readmem_32bit_no_increment, address, 4 * chunk, true), 4 * chunk);
        for (unsigned i = 0; i < chunk; ++i)
            words.push_back(le32(bytes, 4 * i));
    }
    return words;
}

} // namespace mcuprof::sources::stlink
