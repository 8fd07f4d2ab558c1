#pragma once
// Test helpers for the virtual probe: a fake DebugTarget with memory, registers and run
// state in plain maps, and a JTAG driver that turns scans into pin writes the way OpenOCD's
// bitbang driver does (TCK low with TMS/TDI set, read TDO, TCK high).
#include <arpa/inet.h>
#include <cstdint>
#include <map>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "mcuprof/vprobe/debug_target.h"
#include "mcuprof/vprobe/remote_bitbang.h"
#include "mcuprof/vprobe/tap_controller.h"

namespace vprobe_test {

// A TCP client connected to a server on loopback; -1 when the connection failed.
inline int connect_loopback(uint16_t port)
{
    const int client = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(port);
    if (::connect(client, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        ::close(client);
        return -1;
    }
    return client;
}

class FakeTarget : public mcuprof::vprobe::DebugTarget {
public:
    bool halted = false;
    bool stops_by_itself = false;   // the next poll finds it halted (a breakpoint)
    std::map<std::string, uint64_t> registers{{"pc", 0x08000100}, {"sp", 0x20001000}, {"xpsr", 0x01000000}};
    std::map<uint32_t, uint8_t> memory;   // unmapped bytes are bus errors
    std::set<uint32_t> breakpoints;
    uint32_t running_pc = 0x08000200;
    int resets = 0;
    std::vector<std::string> log;

    void map(uint32_t address, uint32_t length, uint8_t fill = 0)
    {
        for (uint32_t i = 0; i < length; ++i)
            memory[address + i] = fill;
    }

    bool poll_halted() override
    {
        if (!halted && stops_by_itself) {
            halted = true;
            stops_by_itself = false;
            log.push_back("stopped");
        }
        return halted;
    }
    void halt() override
    {
        halted = true;
        log.push_back("halt");
    }
    void resume() override
    {
        halted = false;
        log.push_back("resume");
    }
    void step() override
    {
        registers["pc"] += 2;
        log.push_back("step");
    }
    void reset(bool halt_after) override
    {
        ++resets;
        halted = halt_after;
        registers["pc"] = 0x08000190;
        log.push_back(halt_after ? "reset halt" : "reset run");
    }
    bool read_memory(uint32_t address, unsigned size, uint32_t& value) override
    {
        value = 0;
        for (unsigned i = 0; i < size; ++i) {
            auto b = memory.find(address + i);
            if (b == memory.end())
                return false;
            value |= uint32_t(b->second) << (8 * i);
        }
        return true;
    }
    bool write_memory(uint32_t address, unsigned size, uint32_t value) override
    {
        for (unsigned i = 0; i < size; ++i)
            if (memory.count(address + i) == 0)
                return false;
        for (unsigned i = 0; i < size; ++i)
            memory[address + i] = uint8_t(value >> (8 * i));
        return true;
    }
    bool has_register(const std::string& name) const override { return registers.count(name) != 0; }
    std::optional<uint64_t> read_register(const std::string& name) override
    {
        auto r = registers.find(name);
        if (!halted || r == registers.end())
            return std::nullopt;
        return r->second;
    }
    bool write_register(const std::string& name, uint64_t value) override
    {
        if (!halted || registers.count(name) == 0)
            return false;
        registers[name] = value;
        return true;
    }
    // Special registers the target has without describing them (QEMU 7.2 through the stub).
    std::map<std::string, uint32_t> special;
    std::optional<uint32_t> read_special_register(const std::string& name) override
    {
        auto r = special.find(name);
        if (!halted || r == special.end())
            return std::nullopt;
        return r->second;
    }
    bool write_special_register(const std::string& name, uint32_t value) override
    {
        if (!halted || special.count(name) == 0)
            return false;
        special[name] = value;
        log.push_back("write " + name);
        return true;
    }
    // The security state by other means (QEMU 7.2: the TT stub); counted.
    std::optional<bool> security;
    int security_reads = 0;
    std::optional<bool> read_security_state() override
    {
        ++security_reads;
        return halted ? security : std::nullopt;
    }
    std::optional<uint32_t> sample_pc() override
    {
        if (halted)
            return std::nullopt;
        ++pc_halts;   // RspTarget stops QEMU for each
        return running_pc;
    }
    void let_run() override { ++let_runs; }
    int pc_halts = 0;
    int let_runs = 0;
    void set_breakpoints(const std::set<uint32_t>& addresses) override { breakpoints = addresses; }
};

// A bare TAP controller's pins.
class TapPins : public mcuprof::vprobe::JtagPins {
public:
    explicit TapPins(mcuprof::vprobe::TapController& tap) : tap_(tap) {}
    void write(bool tck, bool tms, bool tdi) override { tap_.set_pins(tck, tms, tdi); }
    bool tdo() override { return tap_.tdo(); }
    void reset(bool trst, bool) override { tap_.set_trst(trst); }

private:
    mcuprof::vprobe::TapController& tap_;
};

// Scans through JtagPins like OpenOCD's bitbang driver: every bit is "TCK low with TMS and
// TDI", a TDO sample, "TCK high"; the pins end with TCK low.
class JtagDriver {
public:
    explicit JtagDriver(mcuprof::vprobe::JtagPins& pins) : pins_(pins) {}

    bool clock(bool tms, bool tdi = false)
    {
        pins_.write(false, tms, tdi);
        const bool tdo = pins_.tdo();
        pins_.write(true, tms, tdi);
        pins_.write(false, tms, tdi);
        return tdo;
    }
    // Five TMS=1 clocks reach Test-Logic-Reset from anywhere; then to Run-Test/Idle.
    void reset()
    {
        for (int i = 0; i < 5; ++i)
            clock(true);
        clock(false);
    }
    // From Run-Test/Idle through Shift, `bits` bits LSB first, back to Run-Test/Idle.
    uint64_t scan(bool ir, uint64_t value, unsigned bits)
    {
        clock(true);            // Select-DR-Scan
        if (ir)
            clock(true);        // Select-IR-Scan
        clock(false);           // Capture
        clock(false);           // Shift
        uint64_t out = 0;
        for (unsigned i = 0; i < bits; ++i)
            out |= uint64_t(clock(i + 1 == bits, (value >> i) & 1)) << i;   // the last bit leaves to Exit1
        clock(true);            // Update
        clock(false);           // Run-Test/Idle
        return out;
    }
    uint64_t ir(uint64_t value) { return scan(true, value, 4); }
    uint64_t dr(uint64_t value, unsigned bits) { return scan(false, value, bits); }

    // One 35-bit DPACC/APACC scan (the IR must select it): A[3:2], RnW, data; returns
    // what was captured: ACK in bits 2:0, the previous read's result above.
    uint64_t access(uint8_t address, bool read, uint32_t data)
    {
        return dr((uint64_t(data) << 3) | (uint64_t((address >> 2) & 3) << 1) | (read ? 1 : 0), 35);
    }

private:
    mcuprof::vprobe::JtagPins& pins_;
};

} // namespace vprobe_test
