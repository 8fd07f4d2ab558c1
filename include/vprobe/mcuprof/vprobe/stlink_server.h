#pragma once
// An STLINK-V3 behind ST's stlink-server protocol, the probe side: ST-Link USB commands
// carried over TCP, as OpenOCD 0.12's `st-link backend tcp PORT` speaks it (its
// src/jtag/drivers/stlink_usb.c, the "STLINK TCP" commands). The probe is an SWD host: its
// commands become SW-DP and MEM-AP transactions on the same debug model as the JTAG front
// end (JtagDp, MemAp, CortexMDebug); nothing is answered from a second model.
//
// Framing (all integers little-endian): a request starts with its command byte.
//   0x00 refresh device list  2 bytes        -> status
//   0x01 number of devices    1 byte         -> count
//   0x02 device info          8 bytes        -> status, device id, serial[32], VID, PID, in use
//   0x03 open device          8 bytes        -> status, connection id (a fresh one per client)
//   0x04 close device         8 bytes        -> status
//   0x05 USB command          32 bytes: [4] connection id, [8..23] the 16-byte USB command,
//                             [24] direction (0 host to probe, 1 probe to host, 3 SWO),
//                             [28] data length; then the data when the host sends it
//                                            -> status, then the data when the probe sends it
//   0x06 server version       4 bytes        -> API, major, minor, build
//   0x07 the device's clients 8 bytes: [4] device id -> status, how many clients have it open
//                             (ST's GET_NB_OF_DEV_CLIENTS; OpenOCD 0.12 names it and never
//                             sends it: the layout is that of its neighbours, 0x03 and 0x04)
//
// Like ST's stlink-server, several programs may use the probe at once (a debugger's GDB
// server, OpenOCD, a sampler): each TCP client opens its own connection, and their USB
// commands reach the one probe one at a time, in the order they arrive.
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "mcuprof/vprobe/probe_server.h"
#include "mcuprof/vprobe/virtual_probe.h"

namespace mcuprof::vprobe {

namespace stlink {
// USB command bytes (OpenOCD's stlink_usb.c names them; ST's firmware defines them).
constexpr uint8_t get_version = 0xF1;
constexpr uint8_t debug_command = 0xF2;
constexpr uint8_t dfu_command = 0xF3;
constexpr uint8_t get_current_mode = 0xF5;
constexpr uint8_t get_target_voltage = 0xF7;
constexpr uint8_t get_version_ex = 0xFB;

// DEBUG_COMMAND sub-commands.
constexpr uint8_t readmem_32bit = 0x07;
constexpr uint8_t writemem_32bit = 0x08;
constexpr uint8_t readmem_8bit = 0x0C;
constexpr uint8_t writemem_8bit = 0x0D;
constexpr uint8_t exit_debug = 0x21;
constexpr uint8_t enter = 0x30;
constexpr uint8_t read_idcodes = 0x31;
constexpr uint8_t reset_system = 0x32;
constexpr uint8_t read_register = 0x33;
constexpr uint8_t write_register = 0x34;
constexpr uint8_t write_debug_register = 0x35;
constexpr uint8_t read_debug_register = 0x36;
constexpr uint8_t read_all_registers = 0x3A;
constexpr uint8_t last_rw_status = 0x3B;
constexpr uint8_t drive_nrst = 0x3C;
constexpr uint8_t last_rw_status2 = 0x3E;
constexpr uint8_t start_trace_rx = 0x40;
constexpr uint8_t stop_trace_rx = 0x41;
constexpr uint8_t get_trace_count = 0x42;
constexpr uint8_t read_dap_register = 0x45;
constexpr uint8_t write_dap_register = 0x46;
constexpr uint8_t readmem_16bit = 0x47;
constexpr uint8_t writemem_16bit = 0x48;
constexpr uint8_t init_ap = 0x4B;
constexpr uint8_t close_ap = 0x4C;
constexpr uint8_t writemem_32bit_no_increment = 0x50;
constexpr uint8_t readmem_32bit_no_increment = 0x54;
constexpr uint8_t set_com_frequency = 0x61;
constexpr uint8_t get_com_frequency = 0x62;

// ENTER's argument: SWD without reset (JTAG is not served).
constexpr uint8_t enter_swd_no_reset = 0xA3;
// READ/WRITE_DAP_REGISTER's port number for the DP itself.
constexpr uint16_t debug_port = 0xFFFF;

// Status bytes.
constexpr uint8_t ok = 0x80;
constexpr uint8_t fault = 0x81;
constexpr uint8_t jtag_idcode_error = 0x09;
constexpr uint8_t swd_ap_fault = 0x11;
constexpr uint8_t swd_dp_fault = 0x15;
constexpr uint8_t bad_ap = 0x1D;

// GET_CURRENT_MODE answers.
constexpr uint8_t mode_mass = 0x01;
constexpr uint8_t mode_debug = 0x02;

// stlink-server status words.
constexpr uint32_t server_ok = 0x00000001;
constexpr uint32_t server_bad_parameter = 0x00001002;
constexpr uint32_t server_command_not_available = 0x00001053;

// The probe: STLINK-V3E (ST's VID, PID 0x374E), firmware V3J7 (every flag OpenOCD 0.12
// knows: DAP registers, 16-bit and non-incrementing memory access, AP init, banked DP
// registers, 512-byte 8-bit transfers).
constexpr uint16_t vid = 0x0483;
constexpr uint16_t pid_v3e = 0x374E;
constexpr uint8_t firmware_jtag_version = 7;

// READALLREGS (debug API v2): the status word, then the DCRSR REGSELs 0 to 20 in order, one
// word each: r0-r15, xPSR, MSP, PSP, REGSEL 19 (reserved in ARMv7-M: 0) and REGSEL 20
// (CONTROL, FAULTMASK, BASEPRI, PRIMASK, bits 31:24 to 7:0). 88 bytes, as OpenOCD 0.12's
// stlink_usb_read_regs reads them ("status at offset 0, regs data from offset 4"); the
// stlink-org tools read the same words (r[16], xpsr, main_sp, process_sp, rw, rw2).
constexpr unsigned all_registers_count = 21;
constexpr uint32_t all_registers_reply_length = 4 + 4 * all_registers_count;
} // namespace stlink

// The ST-Link itself: its firmware's USB commands on the debug model, one probe for every
// client of the server, with the connections they opened and what each one sent.
class StlinkProbe {
public:
    explicit StlinkProbe(VirtualProbe& probe) : probe_(probe) {}

    // One USB command of `connection`: its 16 bytes and the data it carries to the probe;
    // `reply` gets what the probe sends back (the caller pads or cuts it to the length the
    // host reads).
    void usb_command(uint32_t connection, const uint8_t* command, std::string_view data_out, std::string& reply);

    // OPEN_DEV and CLOSE_DEV: a fresh connection id (never 0) for each open.
    uint32_t open_connection();
    void close_connection(uint32_t connection);
    bool is_open(uint32_t connection) const { return open_.count(connection) != 0; }
    bool in_use() const { return !open_.empty(); }
    size_t open_connections() const { return open_.size(); }

    // What happened, for reports and benchmarks: USB commands (what a real probe would be
    // sent over USB, each one bus round trip), in total and by connection id (a closed
    // connection's count stays).
    uint64_t usb_commands() const { return usb_commands_; }
    uint64_t usb_commands(uint32_t connection) const;
    const std::map<uint32_t, uint64_t>& usb_commands_by_connection() const { return by_connection_; }
    // The USB commands by kind, named as OpenOCD's stlink_usb.c names them; a memory command
    // with the debug register it touches ("READMEM_32BIT DHCSR"), a DAP register command with
    // the register ("READ_DAP_REG DP 0x4"): what tells which OpenOCD code sent it.
    const std::map<std::string, uint64_t>& usb_command_kinds() const { return usb_command_kinds_; }
    // Those counts on one line, "NAME N, NAME N, ...", most frequent first.
    std::string usb_command_kinds_text() const;
    // The counts by connection on one line, "connection 1: N, connection 2: N".
    std::string usb_commands_by_connection_text() const;

private:
    void perform_debug_command(const uint8_t* command, std::string_view data_out, std::string& reply);
    // The debug commands' handlers: each sets reply[0] (OK already) and what follows it.
    void enter_debug(const uint8_t* command, std::string& reply);
    void core_register_command(const uint8_t* command, std::string& reply);    // READREG, WRITEREG
    void debug_register_command(const uint8_t* command, std::string& reply);   // READ/WRITEDEBUGREG
    void drive_reset_line(uint8_t level);                                      // DRIVE_NRST
    void dap_register_command(const uint8_t* command, std::string& reply);     // READ/WRITE_DAP_REG
    void com_frequency_command(const uint8_t* command, std::string& reply);    // SET/GET_COM_FREQ
    // READMEM_* and WRITEMEM_*; false when the command is none of them.
    bool memory_command(const uint8_t* command, std::string_view data_out, std::string& reply);
    static std::string kind_of(const uint8_t* command);

    // The firmware's sequences of DP/AP transactions.
    bool ap_read(uint8_t apsel, uint8_t address, uint32_t& value);
    bool ap_write(uint8_t apsel, uint8_t address, uint32_t value);
    // A memory transfer of `count` items of `size` bytes through the MEM-AP of `apsel`;
    // `csw_high` is bits 31:8 of the CSW the host asks for (0: the probe's default). Sets
    // the last read/write status.
    void read_memory(uint8_t apsel, uint32_t csw_high, uint32_t address, unsigned size, uint32_t length,
                     bool increment, std::string& data);
    void write_memory(uint8_t apsel, uint32_t csw_high, uint32_t address, unsigned size, std::string_view data,
                      bool increment);
    bool start_transfer(uint8_t apsel, uint32_t csw_high, uint32_t address, unsigned size, bool increment);
    void transfer_failed(uint32_t address);
    bool read_word(uint32_t address, uint32_t& value);
    bool write_word(uint32_t address, uint32_t value);
    // One core register through DCRSR, DHCSR.S_REGRDY and DCRDR (ARMv7-M, C1.6.3); false on a
    // running core, which never sets S_REGRDY.
    bool read_core_register(uint8_t regsel, uint32_t& value);
    // READALLREGS: the status byte in reply[0] (already OK), the 21 words from offset 4.
    void read_all_core_registers(std::string& reply);

    VirtualProbe& probe_;
    std::set<uint32_t> open_;   // the connection ids open now
    uint32_t last_connection_ = 0;
    bool debug_mode_ = false;
    uint8_t last_rw_status_ = stlink::ok;
    uint32_t last_rw_fault_address_ = 0;
    uint32_t com_frequency_khz_ = 1000;
    uint64_t usb_commands_ = 0;
    std::map<uint32_t, uint64_t> by_connection_;
    std::map<std::string, uint64_t> usb_command_kinds_;
};

// One client's side of the server: its requests, its connection to the probe.
class StlinkServerProtocol : public ByteProtocol {
public:
    explicit StlinkServerProtocol(StlinkProbe& probe) : probe_(probe) {}

    bool feed(std::string_view bytes, std::string& replies) override;
    // The client went away without CLOSE_DEV: its connection closes, the others go on.
    void disconnected() override;

    // USB commands are the probe's; the other requests the server answers itself.
    bool used_probe() const override { return fed_usb_; }

    // The connection id OPEN_DEV gave this client (0 before).
    uint32_t connection() const { return connection_; }
    uint64_t server_requests() const { return server_requests_; }

private:
    // The length of the request at the start of `pending`, or 0 while it is incomplete.
    static size_t request_length(std::string_view pending);
    // Performs one whole request; false once the client closed the device.
    bool perform(std::string_view request, std::string& replies);
    void perform_usb_request(std::string_view request, std::string& replies);

    StlinkProbe& probe_;
    std::string pending_;
    uint32_t connection_ = 0;
    uint64_t server_requests_ = 0;
    bool fed_usb_ = false;   // the last feed performed a USB command
};

// Listens on TCP and serves every client that connects, at once, as stlink-server would.
class StlinkServer : public ProbeServer {
public:
    StlinkServer(VirtualProbe& probe, const std::string& host, uint16_t port)
        : ProbeServer("st-link", host, port), probe_(probe)
    {
    }

    // Serves clients until the last one has gone (each closing its device or its socket),
    // stop(), or (with `stop_on_signals`) SIGINT or SIGTERM; SIGUSR1 then calls on_report.
    End serve(bool stop_on_signals)
    {
        return serve_clients([this] { return std::make_unique<StlinkServerProtocol>(probe_); }, stop_on_signals);
    }

    // Read it while serve() runs only from on_report or the other callbacks (one thread).
    const StlinkProbe& probe() const { return probe_; }

private:
    StlinkProbe probe_;
};

} // namespace mcuprof::vprobe
