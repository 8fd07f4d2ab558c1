#include "mcuprof/vprobe/stlink_server.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <vector>

namespace mcuprof::vprobe {

using namespace stlink;

namespace {

uint32_t le16(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8; }
uint32_t le24(const uint8_t* p) { return le16(p) | uint32_t(p[2]) << 16; }
uint32_t le32(const uint8_t* p) { return le24(p) | uint32_t(p[3]) << 24; }

void put16(std::string& out, size_t at, uint32_t value)
{
    if (out.size() < at + 2)
        out.resize(at + 2, '\0');
    out[at] = char(value & 0xFF);
    out[at + 1] = char((value >> 8) & 0xFF);
}

void put32(std::string& out, size_t at, uint32_t value)
{
    put16(out, at, value & 0xFFFF);
    put16(out, at + 2, value >> 16);
}

void append32(std::string& out, uint32_t value) { put32(out, out.size(), value); }

const uint8_t* bytes(std::string_view text) { return reinterpret_cast<const uint8_t*>(text.data()); }

// The stlink-server request of a USB command: a 32-byte header, then the data it carries
// to the probe (OpenOCD's stlink_tcp_xfer_noerrcheck).
constexpr size_t usb_request_header = 32;
constexpr uint8_t direction_to_probe = 0;
// OpenOCD's send buffer is 10240 bytes: a longer request is no request of a real client.
constexpr uint32_t largest_transfer = 1u << 16;

// The SWD clock rates an STLINK-V3 offers (kHz; OpenOCD asks with GET_COM_FREQ and picks the
// nearest below what the configuration asks for).
constexpr std::array<uint32_t, 7> swd_frequencies_khz{24000, 8000, 3300, 1000, 200, 50, 5};

// The CSW bits 31:8 the probe uses when the host leaves them 0 (the high-level commands):
// Prot = privileged data access, as the MEM-AP's reset value.
constexpr uint32_t default_csw_high = 0x03000000;
} // namespace

size_t StlinkServerProtocol::request_length(std::string_view pending)
{
    if (pending.empty())
        return 0;
    const uint8_t* p = bytes(pending);
    size_t length = 0;
    switch (p[0]) {
    case 0x00: length = 2; break;    // refresh the device list
    case 0x01: length = 1; break;    // number of devices
    case 0x02:                       // device info
    case 0x03:                       // open device
    case 0x04:                       // close device
    case 0x07: length = 8; break;    // the device's clients
    case 0x06: length = 4; break;    // server version
    case 0x05:                       // a USB command
        if (pending.size() < usb_request_header)
            return 0;
        length = usb_request_header;
        if (p[24] == direction_to_probe && le32(p + 28) <= largest_transfer)
            length += le32(p + 28);
        break;
    default:
        return pending.size();       // unknown: answered "not available" as a whole
    }
    return pending.size() >= length ? length : 0;
}

bool StlinkServerProtocol::feed(std::string_view input, std::string& replies)
{
    pending_.append(input);
    size_t used = 0;
    bool more = true;
    fed_usb_ = false;
    while (more) {
        const std::string_view rest = std::string_view(pending_).substr(used);
        const size_t length = request_length(rest);
        if (length == 0)
            break;
        fed_usb_ = fed_usb_ || uint8_t(rest[0]) == 0x05;
        more = perform(rest.substr(0, length), replies);
        used += length;
    }
    pending_.erase(0, used);
    return more;
}

bool StlinkServerProtocol::perform(std::string_view request, std::string& replies)
{
    ++server_requests_;
    const uint8_t* p = bytes(request);
    switch (p[0]) {
    case 0x00:
        append32(replies, server_ok);
        return true;
    case 0x01:
        append32(replies, 1);   // one ST-Link
        return true;
    case 0x02: {
        // TDeviceInfo2: device id, serial (32 bytes), VID, PID, and whether another program
        // holds it exclusively (OpenOCD 0.12 then refuses it, "the selected device is already
        // used"). Every open here is shared, as OpenOCD's own (its OPEN_DEV's reserved bytes
        // are 0): several clients use the probe at once.
        std::string info;
        append32(info, p[1] == 0 ? server_ok : server_bad_parameter);
        append32(info, 1);
        std::string serial = "VPROBE000000000000000001";
        serial.resize(32, '\0');
        info += serial;
        put16(info, info.size(), vid);
        put16(info, info.size(), pid_v3e);
        info.push_back(0);
        replies += info;
        return true;
    }
    case 0x03: {
        // The one device has id 1; every client that opens it gets a connection of its own.
        const bool device_known = le32(p + 4) == 1;
        if (device_known && connection_ == 0)
            connection_ = probe_.open_connection();
        append32(replies, device_known ? server_ok : server_bad_parameter);
        append32(replies, device_known ? connection_ : 0);
        return true;
    }
    case 0x04:
        // This client is done with the probe: its session ends, the other clients' go on.
        append32(replies, server_ok);
        disconnected();
        return false;
    case 0x05:
        perform_usb_request(request, replies);
        return true;
    case 0x06:
        // stlink-server 2.1.0, API version 2: OpenOCD then uses neither the 1 KiB packet limit
        // of API 1 nor the RW_MISC batches that need API 3.
        append32(replies, 2);
        append32(replies, 2);
        append32(replies, 1);
        append32(replies, 0);
        return true;
    case 0x07:
        // GET_NB_OF_DEV_CLIENTS: how many clients have the device open (the asker too), which
        // lets a client that halts the core step aside while a debugger shares the probe.
        append32(replies, le32(p + 4) == 1 ? server_ok : server_bad_parameter);
        append32(replies, le32(p + 4) == 1 ? uint32_t(probe_.open_connections()) : 0);
        return true;
    default:
        append32(replies, server_command_not_available);
        return true;
    }
}

void StlinkServerProtocol::perform_usb_request(std::string_view request, std::string& replies)
{
    const uint8_t* p = bytes(request);
    const uint32_t length = le32(p + 28);
    const bool to_probe = p[24] == direction_to_probe;
    if (connection_ == 0 || le32(p + 4) != connection_ || length > largest_transfer) {
        append32(replies, server_bad_parameter);
        if (!to_probe && length <= largest_transfer)
            replies.append(length, '\0');
        return;
    }
    std::string reply;
    probe_.usb_command(connection_, p + 8, to_probe ? request.substr(usb_request_header) : std::string_view(),
                       reply);
    append32(replies, server_ok);
    reply.resize(to_probe ? 0 : length, '\0');
    replies += reply;
}

void StlinkServerProtocol::disconnected()
{
    if (connection_ != 0)
        probe_.close_connection(connection_);
    connection_ = 0;
}

uint32_t StlinkProbe::open_connection()
{
    const uint32_t connection = ++last_connection_;
    open_.insert(connection);
    by_connection_.emplace(connection, 0);
    return connection;
}

void StlinkProbe::close_connection(uint32_t connection) { open_.erase(connection); }

uint64_t StlinkProbe::usb_commands(uint32_t connection) const
{
    const auto count = by_connection_.find(connection);
    return count != by_connection_.end() ? count->second : 0;
}

std::string StlinkProbe::usb_commands_by_connection_text() const
{
    std::string text;
    for (const auto& [connection, count] : by_connection_)
        text += (text.empty() ? "connection " : ", connection ") + std::to_string(connection) + ": " +
                std::to_string(count);
    return text;
}

std::string StlinkProbe::kind_of(const uint8_t* command)
{
    static const std::map<uint8_t, const char*> top_level = {
        {get_version, "GET_VERSION"},       {dfu_command, "DFU_COMMAND"},         {get_current_mode, "GET_CURRENT_MODE"},
        {get_target_voltage, "GET_TARGET_VOLTAGE"}, {get_version_ex, "GET_VERSION_EX"}};
    static const std::map<uint8_t, const char*> debug = {
        {readmem_32bit, "READMEM_32BIT"},
        {writemem_32bit, "WRITEMEM_32BIT"},
        {readmem_8bit, "READMEM_8BIT"},
        {writemem_8bit, "WRITEMEM_8BIT"},
        {exit_debug, "EXIT"},
        {enter, "ENTER"},
        {read_idcodes, "READ_IDCODES"},
        {reset_system, "RESETSYS"},
        {read_register, "READREG"},
        {write_register, "WRITEREG"},
        {write_debug_register, "WRITEDEBUGREG"},
        {read_debug_register, "READDEBUGREG"},
        {read_all_registers, "READALLREGS"},
        {last_rw_status, "GETLASTRWSTATUS"},
        {drive_nrst, "DRIVE_NRST"},
        {last_rw_status2, "GETLASTRWSTATUS2"},
        {start_trace_rx, "START_TRACE_RX"},
        {stop_trace_rx, "STOP_TRACE_RX"},
        {get_trace_count, "GET_TRACE_NB"},
        {read_dap_register, "READ_DAP_REG"},
        {write_dap_register, "WRITE_DAP_REG"},
        {readmem_16bit, "READMEM_16BIT"},
        {writemem_16bit, "WRITEMEM_16BIT"},
        {init_ap, "INIT_AP"},
        {close_ap, "CLOSE_AP_DBG"},
        {writemem_32bit_no_increment, "WRITEMEM_32BIT_NO_ADDR_INC"},
        {readmem_32bit_no_increment, "READMEM_32BIT_NO_ADDR_INC"},
        {set_com_frequency, "SET_COM_FREQ"},
        {get_com_frequency, "GET_COM_FREQ"}};
    // The Cortex-M debug registers whose accesses tell OpenOCD's code paths apart: DHCSR is
    // its poll, DCRSR/DCRDR its core register transfers, DWT_PCSR a PC sample.
    static const std::map<uint32_t, const char*> registers = {
        {cortex_m::dhcsr, "DHCSR"}, {cortex_m::dcrsr, "DCRSR"},       {cortex_m::dcrdr, "DCRDR"},
        {cortex_m::demcr, "DEMCR"}, {cortex_m::dwt_pcsr, "DWT_PCSR"}, {cortex_m::aircr, "AIRCR"}};
    if (command[0] != debug_command) {
        const auto name = top_level.find(command[0]);
        return name != top_level.end() ? name->second : "unknown";
    }
    const auto name = debug.find(command[1]);
    if (name == debug.end())
        return "DEBUG unknown";
    std::string kind = name->second;
    switch (command[1]) {
    case read_dap_register:
    case write_dap_register: {
        char where[24];
        const uint32_t port = le16(command + 2);
        std::snprintf(where, sizeof where, port == debug_port ? " DP 0x%X" : " AP 0x%X", unsigned(le16(command + 4)));
        return kind + where;
    }
    case readmem_8bit: case readmem_16bit: case readmem_32bit: case readmem_32bit_no_increment:
    case writemem_8bit: case writemem_16bit: case writemem_32bit: case writemem_32bit_no_increment:
    case read_debug_register: case write_debug_register: {
        const auto reg = registers.find(le32(command + 2));
        return kind + " " + (reg != registers.end() ? reg->second : "memory");
    }
    default:
        return kind;
    }
}

std::string StlinkProbe::usb_command_kinds_text() const
{
    std::vector<std::pair<std::string, uint64_t>> kinds(usb_command_kinds_.begin(), usb_command_kinds_.end());
    std::stable_sort(kinds.begin(), kinds.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string text;
    for (const auto& [kind, count] : kinds)
        text += (text.empty() ? "" : ", ") + kind + " " + std::to_string(count);
    return text;
}

void StlinkProbe::usb_command(uint32_t connection, const uint8_t* command, std::string_view data_out,
                              std::string& reply)
{
    ++usb_commands_;
    ++by_connection_[connection];
    ++usb_command_kinds_[kind_of(command)];
    switch (command[0]) {
    case get_version:
        // Version word (big-endian): V3 with J and S 0, which tells the host to ask
        // GET_VERSION_EX; then VID and PID.
        reply.push_back(char(0x30));
        reply.push_back(char(0x00));
        put16(reply, 2, vid);
        put16(reply, 4, pid_v3e);
        return;
    case get_version_ex:
        // V3, SWIM 1, JTAG/SWD firmware 7, mass storage 3, bridge 5; VID and PID at 8.
        reply = std::string("\x03\x01\x07\x03\x05", 5);
        reply[2] = char(firmware_jtag_version);
        put16(reply, 8, vid);
        put16(reply, 10, pid_v3e);
        return;
    case get_current_mode:
        reply.push_back(char(debug_mode_ ? mode_debug : mode_mass));
        return;
    case get_target_voltage:
        // Two ADC readings: the 1.2 V reference and half the target voltage (OpenOCD:
        // 2 * b * 1.2 / a): 3.3 V.
        put32(reply, 0, 1200);
        put32(reply, 4, 1650);
        return;
    case dfu_command:
        return;   // leaving DFU mode: no answer
    case debug_command:
        perform_debug_command(command, data_out, reply);
        return;
    default:
        reply.push_back(char(fault));
        return;
    }
}

// Each JTAG/SWD command (0xF2 xx) of the debug API v2, as OpenOCD's stlink_usb.c sends it: the
// status byte (reply[0], OK unless the handler says otherwise), then what the command answers.
void StlinkProbe::perform_debug_command(const uint8_t* command, std::string_view data_out, std::string& reply)
{
    reply.push_back(char(ok));
    switch (command[1]) {
    case enter:
        enter_debug(command, reply);
        return;
    case exit_debug:
        debug_mode_ = false;
        reply.clear();
        return;
    case read_idcodes:
        put32(reply, 4, probe_.dp().swd_read_dp(jtag_dp::dp_dpidr_abort));
        return;
    case reset_system:
        // What the firmware does for a system reset: AIRCR.SYSRESETREQ (ARMv7-M, B3.2.6).
        if (!write_word(cortex_m::aircr, cortex_m::vectkey | cortex_m::sysresetreq))
            reply[0] = char(fault);
        return;
    case read_register:
    case write_register:
        core_register_command(command, reply);
        return;
    case read_all_registers:
        read_all_core_registers(reply);
        return;
    case write_debug_register:
    case read_debug_register:
        debug_register_command(command, reply);
        return;
    case last_rw_status:
    case last_rw_status2:
        reply[0] = char(last_rw_status_);
        put32(reply, 4, last_rw_fault_address_);
        put32(reply, 8, 0);
        return;
    case drive_nrst:
        drive_reset_line(command[2]);
        return;
    case start_trace_rx:
    case stop_trace_rx:
        return;   // no SWO leaves the virtual probe
    case get_trace_count:
        reply = std::string(2, '\0');
        return;
    case read_dap_register:
    case write_dap_register:
        dap_register_command(command, reply);
        return;
    case init_ap:
    case close_ap:
        return;
    case set_com_frequency:
    case get_com_frequency:
        com_frequency_command(command, reply);
        return;
    default:
        if (!memory_command(command, data_out, reply))
            reply[0] = char(fault);
        return;
    }
}

void StlinkProbe::enter_debug(const uint8_t* command, std::string& reply)
{
    // SWD only: an STLINK-V3 on JTAG would need a JTAG-DP's scans, not served here. The
    // firmware connects as an SWD host does: it reads DPIDR and powers up the debug and
    // system domains (CTRL/STAT CDBGPWRUPREQ, CSYSPWRUPREQ), which hla_swd never asks for.
    JtagDp& dp = probe_.dp();
    debug_mode_ = command[2] == enter_swd_no_reset;
    reply[0] = char(debug_mode_ ? ok : jtag_idcode_error);
    if (debug_mode_) {
        (void)dp.swd_read_dp(jtag_dp::dp_dpidr_abort);
        dp.swd_write_dp(jtag_dp::dp_ctrl_stat, jtag_dp::cdbgpwrupreq | jtag_dp::csyspwrupreq);
    }
}

void StlinkProbe::core_register_command(const uint8_t* command, std::string& reply)
{
    if (command[1] == read_register) {
        // API v2: the status word, then the value (OpenOCD reads 8 bytes, the value at 4).
        uint32_t value = 0;
        reply[0] = char(read_core_register(command[2], value) ? ok : fault);
        put32(reply, 4, value);
        return;
    }
    uint32_t dhcsr = 0;
    const bool done = write_word(cortex_m::dcrdr, le32(command + 3)) &&
                      write_word(cortex_m::dcrsr,
                                 cortex_m::dcrsr_regwnr | (command[2] & cortex_m::dcrsr_regsel_mask)) &&
                      read_word(cortex_m::dhcsr, dhcsr) && (dhcsr & cortex_m::s_regrdy);
    reply[0] = char(done ? ok : fault);
}

void StlinkProbe::debug_register_command(const uint8_t* command, std::string& reply)
{
    const uint32_t address = le32(command + 2);
    if (command[1] == write_debug_register) {
        reply[0] = char(write_word(address, le32(command + 6)) ? ok : swd_ap_fault);
        return;
    }
    uint32_t value = 0;
    reply[0] = char(read_word(address, value) ? ok : swd_ap_fault);
    put32(reply, 4, value);
}

void StlinkProbe::drive_reset_line(uint8_t level)
{
    // 0: low (asserted), 1: high, 2: a pulse. The system resets as the line goes low.
    if (level == 0 || level == 2)
        probe_.reset(false, true);
    if (level == 1 || level == 2)
        probe_.reset(false, false);
}

void StlinkProbe::dap_register_command(const uint8_t* command, std::string& reply)
{
    JtagDp& dp = probe_.dp();
    const uint32_t port = le16(command + 2);
    const uint8_t reg = uint8_t(le16(command + 4));
    const bool read = command[1] == read_dap_register;
    uint32_t value = read ? 0 : le32(command + 6);
    if (port == debug_port) {
        // Banked DP registers (DPBANKSEL, DPv1) other than bank 0 read 0.
        if (read)
            value = (reg & 0xF0) ? 0 : dp.swd_read_dp(reg & 0x0C);
        else if (!(reg & 0xF0))
            dp.swd_write_dp(reg & 0x0C, value);
    } else if (port > 0xFF) {
        reply[0] = char(bad_ap);
    } else if (!(read ? ap_read(uint8_t(port), reg, value) : ap_write(uint8_t(port), reg, value))) {
        reply[0] = char(swd_ap_fault);
    }
    if (read)
        put32(reply, 4, value);
}

void StlinkProbe::com_frequency_command(const uint8_t* command, std::string& reply)
{
    if (command[1] == set_com_frequency) {
        com_frequency_khz_ = le32(command + 4);
        put32(reply, 4, com_frequency_khz_);
        return;
    }
    reply.resize(12, '\0');
    reply[8] = char(swd_frequencies_khz.size());
    for (const uint32_t khz : swd_frequencies_khz)
        append32(reply, khz);
}

bool StlinkProbe::memory_command(const uint8_t* command, std::string_view data_out, std::string& reply)
{
    const uint32_t address = le32(command + 2);
    const uint32_t length = le16(command + 6);
    const uint8_t apsel = command[8];
    const uint32_t csw_high = le24(command + 9);
    switch (command[1]) {
    case readmem_8bit:
    case readmem_16bit:
    case readmem_32bit:
    case readmem_32bit_no_increment: {
        const unsigned size = command[1] == readmem_8bit ? 1 : command[1] == readmem_16bit ? 2 : 4;
        reply.clear();
        read_memory(apsel, csw_high, address, size, length, command[1] != readmem_32bit_no_increment, reply);
        return true;
    }
    case writemem_8bit:
    case writemem_16bit:
    case writemem_32bit:
    case writemem_32bit_no_increment: {
        const unsigned size = command[1] == writemem_8bit ? 1 : command[1] == writemem_16bit ? 2 : 4;
        reply.clear();
        write_memory(apsel, csw_high, address, size, data_out.substr(0, std::min<size_t>(length, data_out.size())),
                     command[1] != writemem_32bit_no_increment);
        return true;
    }
    default:
        return false;   // not a memory command
    }
}

bool StlinkProbe::ap_read(uint8_t apsel, uint8_t address, uint32_t& value)
{
    JtagDp& dp = probe_.dp();
    dp.swd_write_dp(jtag_dp::dp_select, uint32_t(apsel) << 24 | (address & 0xF0));
    return dp.swd_access_ap(true, address & 0x0C, value);
}

bool StlinkProbe::ap_write(uint8_t apsel, uint8_t address, uint32_t value)
{
    JtagDp& dp = probe_.dp();
    dp.swd_write_dp(jtag_dp::dp_select, uint32_t(apsel) << 24 | (address & 0xF0));
    return dp.swd_access_ap(false, address & 0x0C, value);
}

bool StlinkProbe::start_transfer(uint8_t apsel, uint32_t csw_high, uint32_t address, unsigned size,
                                          bool increment)
{
    const uint32_t size_field = size == 1 ? 0 : size == 2 ? 1 : 2;
    const uint32_t csw = ((csw_high ? csw_high : default_csw_high >> 8) << 8) | size_field |
                         (increment ? mem_ap::csw_addrinc_single : 0);
    return ap_write(apsel, mem_ap::csw_register, csw) && ap_write(apsel, mem_ap::tar_register, address);
}

void StlinkProbe::transfer_failed(uint32_t address)
{
    // The firmware reports the fault through the last R/W status and clears the DP's sticky
    // error itself (SW-DP ABORT.STKERRCLR), so the next command starts clean.
    last_rw_status_ = swd_ap_fault;
    last_rw_fault_address_ = address;
    probe_.dp().swd_write_dp(jtag_dp::dp_dpidr_abort, jtag_dp::stkerrclr | jtag_dp::stkcmpclr |
                                                          jtag_dp::orunerrclr | jtag_dp::wderrclr);
}

void StlinkProbe::read_memory(uint8_t apsel, uint32_t csw_high, uint32_t address, unsigned size,
                                       uint32_t length, bool increment, std::string& data)
{
    last_rw_status_ = ok;
    const uint32_t count = length / size;
    if (!start_transfer(apsel, csw_high, address, size, increment)) {
        transfer_failed(address);
        return;
    }
    for (uint32_t i = 0; i < count; ++i) {
        const uint32_t at = increment ? address + i * size : address;
        // ADIv5 guarantees TAR increments inside 1 KiB blocks only: rewrite it at each.
        uint32_t value = 0;
        if ((i > 0 && increment && (at & 0x3FF) == 0 && !ap_write(apsel, mem_ap::tar_register, at)) ||
            !ap_read(apsel, mem_ap::drw_register, value)) {
            transfer_failed(at);
            return;
        }
        value >>= 8 * (at & 3);   // the item is on the byte lanes of its address
        for (unsigned b = 0; b < size; ++b)
            data.push_back(char((value >> (8 * b)) & 0xFF));
    }
}

void StlinkProbe::write_memory(uint8_t apsel, uint32_t csw_high, uint32_t address, unsigned size,
                                        std::string_view data, bool increment)
{
    last_rw_status_ = ok;
    const uint32_t count = uint32_t(data.size() / size);
    if (!start_transfer(apsel, csw_high, address, size, increment)) {
        transfer_failed(address);
        return;
    }
    const uint8_t* p = bytes(data);
    for (uint32_t i = 0; i < count; ++i) {
        const uint32_t at = increment ? address + i * size : address;
        uint32_t value = 0;
        for (unsigned b = 0; b < size; ++b)
            value |= uint32_t(p[i * size + b]) << (8 * b);
        if ((i > 0 && increment && (at & 0x3FF) == 0 && !ap_write(apsel, mem_ap::tar_register, at)) ||
            !ap_write(apsel, mem_ap::drw_register, value << (8 * (at & 3)))) {
            transfer_failed(at);
            return;
        }
    }
}

bool StlinkProbe::read_word(uint32_t address, uint32_t& value)
{
    std::string data;
    read_memory(0, 0, address, 4, 4, false, data);
    if (last_rw_status_ != ok)
        return false;
    value = le32(bytes(data));
    return true;
}

void StlinkProbe::read_all_core_registers(std::string& reply)
{
    // One USB command, but the firmware still reads the core one register at a time
    // (stlink::all_registers_count DCRSR transfers); it stops at the first that fails.
    reply.resize(all_registers_reply_length, '\0');
    for (unsigned regsel = 0; regsel < all_registers_count; ++regsel) {
        uint32_t value = 0;
        if (!read_core_register(uint8_t(regsel), value)) {
            reply[0] = char(fault);
            return;
        }
        put32(reply, 4 + 4 * regsel, value);
    }
}

bool StlinkProbe::read_core_register(uint8_t regsel, uint32_t& value)
{
    uint32_t dhcsr = 0;
    return write_word(cortex_m::dcrsr, regsel & cortex_m::dcrsr_regsel_mask) && read_word(cortex_m::dhcsr, dhcsr) &&
           (dhcsr & cortex_m::s_regrdy) && read_word(cortex_m::dcrdr, value);
}

bool StlinkProbe::write_word(uint32_t address, uint32_t value)
{
    std::string data;
    append32(data, value);
    write_memory(0, 0, address, 4, data, false);
    return last_rw_status_ == ok;
}

} // namespace mcuprof::vprobe
