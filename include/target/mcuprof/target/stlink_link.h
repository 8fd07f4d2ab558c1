#pragma once
// The ST-Link's own USB commands, spoken by the host (StlinkLink, stlink_link.cc): the 16-byte
// commands ST's firmware takes and the replies it gives, as OpenOCD's src/jtag/drivers/stlink_usb.c
// and the stlink-org tools document them. One object over any transport that carries a USB
// command and its reply: ST's stlink-server over TCP (make_stlink_server_transport), or the
// probe's USB endpoints. It counts the commands, each one USB round trip on a real probe: the
// measure of a sampler's cost on this link (docs/live.md, "ST-Link commands").
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mcuprof/link/byte_stream.h"
#include "mcuprof/link/tcp_connection.h"

namespace mcuprof::sources::stlink {

// The probe's and the server's words are little-endian: the 16- and 32-bit values at `at`.
inline uint32_t le16(const std::string& s, size_t at)
{
    return uint32_t(uint8_t(s[at])) | uint32_t(uint8_t(s[at + 1])) << 8;
}
inline uint32_t le32(const std::string& s, size_t at)
{
    return le16(s, at) | le16(s, at + 2) << 16;
}

// Command bytes (stlink_usb.c's STLINK_* names; ST's firmware defines them).
constexpr uint8_t get_version = 0xF1;
constexpr uint8_t debug_command = 0xF2;
constexpr uint8_t dfu_command = 0xF3;
constexpr uint8_t get_current_mode = 0xF5;
constexpr uint8_t get_version_ex = 0xFB;   // STLINK-V3: the version fields one byte each
// DEBUG_COMMAND sub-commands (debug API v2; V3's API v3 keeps them).
constexpr uint8_t readmem_32bit = 0x07;
constexpr uint8_t enter = 0x30;
constexpr uint8_t read_register = 0x33;
constexpr uint8_t write_debug_register = 0x35;
constexpr uint8_t read_debug_register = 0x36;
constexpr uint8_t read_all_registers = 0x3A;
constexpr uint8_t last_rw_status2 = 0x3E;
constexpr uint8_t readmem_32bit_no_increment = 0x54;   // READMEM_32BIT_NO_ADDR_INC: one address, read again and again
constexpr uint8_t dfu_exit = 0x07;             // DFU_COMMAND's "leave DFU mode"
constexpr uint8_t enter_swd_no_reset = 0xA3;   // ENTER's argument: SWD, the target not reset

// Status bytes (the first byte of most debug replies).
constexpr uint8_t status_ok = 0x80;
constexpr uint8_t status_fault = 0x81;
constexpr uint8_t status_swd_ap_wait = 0x10;   // the AP answered WAIT: the firmware asks again when told
constexpr uint8_t status_swd_dp_wait = 0x14;

// GET_CURRENT_MODE.
constexpr uint8_t mode_dfu = 0x00;
constexpr uint8_t mode_mass = 0x01;
constexpr uint8_t mode_debug = 0x02;

// READALLREGS (API v2): the status word, then DCRSR REGSELs 0-20, one word each (r0-r15,
// xPSR, MSP, PSP, REGSEL 19 reserved, REGSEL 20 CONTROL/FAULTMASK/BASEPRI/PRIMASK): 88 bytes.
constexpr unsigned all_registers_count = 21;
constexpr uint32_t all_registers_reply_length = 4 + 4 * all_registers_count;
// One READMEM_32BIT stays inside a 1 KiB block: the MEM-AP's TAR auto-increments within
// 1 KiB only (ADIv5, C2.2.2), and stlink_usb.c splits its 32-bit reads at those blocks.
constexpr uint32_t tar_block = 1024;
// The words one READMEM_32BIT_NO_ADDR_INC reads here: 4096 bytes, what OpenOCD's `profile`
// reads of DWT_PCSR in one command (stlink_usb.c's 4 KiB data buffer holds them).
constexpr unsigned same_address_words = 1024;

using Command = std::array<uint8_t, 16>;

// Carries one USB command to the probe and its reply back. Throws transport::Error.
class Transport {
public:
    virtual ~Transport() = default;
    // `command`, then `data_out` (to the probe); returns the `reply_length` bytes the probe sends back.
    virtual std::string transfer(const Command& command, std::string_view data_out, uint32_t reply_length) = 0;
    // How errors name the far end ("stlink-server 127.0.0.1:7184").
    virtual const std::string& peer() const = 0;
    // Which probe this is, in words (its serial, whether someone else holds it), for the header.
    virtual std::string device() const = 0;
    // Done with the probe: the other programs sharing it go on. Never throws.
    virtual void close() = 0;
    // How many programs have the probe open now, this one included; nothing where the far
    // end cannot say (an stlink-server without GET_NB_OF_DEV_CLIENTS). On USB the claimed
    // interface is this program's alone: 1.
    virtual std::optional<unsigned> clients() { return 1; }
};

// ST's stlink-server (TCP, port 7184 by default): opens the first ST-Link it lists, shared
// with whatever else uses it; clients() asks the server (GET_NB_OF_DEV_CLIENTS). Throws transport::Error (connect when nothing listens; protocol
// when it lists no probe, or one another program holds exclusively).
std::unique_ptr<Transport> make_stlink_server_transport(const transport::Endpoint& server, transport::Duration timeout);
// The same over a stream already open (the unit tests' scripted server).
std::unique_ptr<Transport> make_stlink_server_transport(std::unique_ptr<transport::ByteStream> stream,
                                                        transport::Duration timeout);

// The probe's own USB side: bulk transfers on its endpoints (libusb-1.0 on a real probe; a
// script in the framing tests). Throws transport::Error.
class UsbBulk {
public:
    virtual ~UsbBulk() = default;
    virtual void write(uint8_t endpoint, std::string_view bytes) = 0;
    // Exactly `length` bytes from the IN endpoint (the probe sends each reply whole).
    virtual std::string read(uint8_t endpoint, uint32_t length) = 0;
    virtual const std::string& peer() const = 0;   // "ST-Link on USB bus 1 device 7"
    virtual std::string device() const = 0;        // serial, VID:PID, bus and device
    virtual void close() = 0;                      // releases the interface; never throws
};

// Which bulk endpoints an ST-Link's product ID uses (stlink_usb.c: the ST-LINK/V2 sends commands
// to EP 2 OUT; the V2-1 and every V3 to EP 1 OUT; replies come from EP 1 IN on all).
struct UsbEndpoints {
    uint8_t command_out = 0x01;
    uint8_t reply_in = 0x81;
};
// The ST-Links by product ID (VID 0x0483): V2 0x3748, V2-1 0x374B/0x3752, V3 0x374E/0x374F/
// 0x3753/0x3754/0x3757 (the IDs OpenOCD 0.12's interface/stlink.cfg lists, and the V3PWR);
// nothing for another product.
std::optional<UsbEndpoints> stlink_usb_endpoints(uint16_t product_id);

// One USB command on the probe's endpoints: the 16 command bytes in one bulk OUT transfer,
// the data to the probe (a memory write's) in a second, then the reply in one bulk IN transfer.
std::unique_ptr<Transport> make_stlink_usb_transport(std::unique_ptr<UsbBulk> bulk, UsbEndpoints endpoints);
// The first ST-Link on USB whose serial is `serial` (any, when empty), through libusb-1.0:
// opened and its interface 0 claimed. Throws transport::Error (connect) naming what it found:
// no ST-Link, no permission to it (the udev rules), or one held by another program (named
// where its process is visible: processes_holding).
std::unique_ptr<Transport> open_stlink_usb(const std::string& serial, transport::Duration timeout);

// The firmware's versions (GET_VERSION, and GET_VERSION_EX on a V3).
struct Version {
    unsigned stlink = 0;   // 1, 2 or 3
    unsigned jtag = 0;     // the debug firmware's version ("V2J37": 37)
    uint16_t vid = 0;
    uint16_t pid = 0;
    std::string text() const;   // "V3J7 (0483:374E)"
    // READMEM_32BIT_NO_ADDR_INC is there: a V2 from firmware J32 on, a V3 from J2 on (stlink_usb.c,
    // STLINK_F_HAS_MEM_RD_NO_INC).
    bool reads_one_address() const { return (stlink == 2 && jtag >= 32) || (stlink >= 3 && jtag >= 2); }
};

// One core's registers as READALLREGS gives them (REGSEL order).
struct AllRegisters {
    std::array<uint32_t, all_registers_count> words{};
};

class StlinkLink {
public:
    explicit StlinkLink(std::unique_ptr<Transport> transport);

    // GET_VERSION (+ GET_VERSION_EX); throws transport::Error (protocol) for a probe too old for
    // READALLREGS (API v1: an ST-Link/V1, or a V2 below J11).
    Version read_version();
    // Into SWD debug mode unless already there (another client of the server may have entered):
    // GET_CURRENT_MODE, leaving DFU mode, then ENTER SWD.
    void enter_swd();

    // One word of the debug registers or memory, through the MEM-AP (READDEBUGREG: its own status).
    uint32_t read_debug_register(uint32_t address);
    void write_debug_register(uint32_t address, uint32_t value);
    // Every core register of a halted core in one command; a running core fails (its DCRSR
    // transfers never set S_REGRDY: ARMv7-M ARM C1.6.3).
    AllRegisters read_all_registers();
    // Words of memory in one READMEM_32BIT each up to the next 1 KiB block (length and address
    // multiples of 4). The reply has no status: `check` asks GETLASTRWSTATUS2 after each, and
    // then an empty result is memory the target refused (a bus fault).
    std::string read_memory(uint32_t address, uint32_t length, bool check);
    // The word at `address` read `count` times, READMEM_32BIT_NO_ADDR_INC of up to
    // same_address_words each (Version::reads_one_address): the MEM-AP's TAR stays put (CSW
    // AddrInc off, ADIv5 C2.2.1), so a register such as DWT_PCSR is read again each time.
    // Unchecked, as the firmware's reply to it has no status.
    std::vector<uint32_t> read_word_repeatedly(uint32_t address, unsigned count);

    uint64_t commands() const { return commands_; }
    const std::string& peer() const { return transport_->peer(); }
    std::string device() const { return transport_->device(); }
    void close() { transport_->close(); }
    // Transport::clients: no USB command (a server request, or nothing), so not counted.
    std::optional<unsigned> clients() { return transport_->clients(); }

    // The 16-byte commands, for the tests and the transports' own framing tests.
    static Command debug(uint8_t sub, uint32_t address = 0, uint32_t value_or_length = 0, bool length16 = false);

private:
    std::string transfer(const Command& command, uint32_t reply_length, std::string_view data_out = {});
    // A debug command whose reply starts with a status byte: retried on WAIT, thrown otherwise.
    std::string checked(const Command& command, uint32_t reply_length, const char* what);

    std::unique_ptr<Transport> transport_;
    uint64_t commands_ = 0;
};

// A status byte in words ("0x81 (fault)").
std::string describe_status(uint8_t status);

} // namespace mcuprof::sources::stlink
