#include "mcuprof/vprobe/rsp_target.h"

#include <cstdio>

#include "mcuprof/transport/error.h"
#include "mcuprof/vprobe/error.h"
#include "mcuprof/transport/rsp_packet.h"

namespace mcuprof::vprobe {

using transport::StopReply;

namespace {

constexpr int sigtrap = 5;   // GDB's signal for a breakpoint or a finished step; QEMU's interrupt stop is 2

std::string little_endian(uint64_t value, size_t bytes)
{
    std::string out;
    for (size_t i = 0; i < bytes; ++i)
        out.push_back(char((value >> (8 * i)) & 0xFF));
    return out;
}

uint64_t from_little_endian(std::string_view bytes)
{
    uint64_t value = 0;
    for (size_t i = bytes.size(); i-- > 0;)
        value = (value << 8) | uint8_t(bytes[i]);
    return value;
}

// ARMv7-M's default memory map (DDI 0403, B3.1): the Code (0x00000000) and SRAM
// (0x20000000) regions are Normal memory, where a read has no side effect, so reading a
// whole line ahead is harmless. Peripherals and the PPB from 0x40000000 up are not.
bool cacheable(uint32_t address)
{
    return address < 0x40000000u;
}

} // namespace

RspTarget::RspTarget(transport::RspClient& rsp, bool halted)
    : rsp_(rsp), core_(halted ? Core::halted : Core::running)
{
}

void RspTarget::stopped(const StopReply& stop)
{
    if (stop.kind == StopReply::Kind::exited)
        lose("the target exited with code " + std::to_string(stop.value));
    if (stop.kind == StopReply::Kind::terminated)
        lose("the target was terminated by signal " + std::to_string(stop.value));
}

void RspTarget::lose(const std::string& reason)
{
    if (core_ == Core::gone)
        throw Gone{};
    core_ = Core::gone;
    gone_reason_ = reason;
    invalidate();
    breakpoints_.clear();
    if (on_gone)
        on_gone(reason);
    throw Gone{};
}

// Runs a public operation; once the target is gone (it exited, its connection closed) the
// operation answers `if_gone` without a word to the server.
template <class Result, class Body> Result RspTarget::unless_gone(Result if_gone, Body body)
{
    if (core_ == Core::gone)
        return if_gone;
    try {
        return body();
    } catch (const Gone&) {
        return if_gone;
    } catch (const transport::Error& e) {
        if (e.kind() != transport::Error::Kind::closed)
            throw;
        try {
            lose(std::string("the connection to the target was lost: ") + e.what());
        } catch (const Gone&) {
        }
        return if_gone;
    }
}

void RspTarget::invalidate()
{
    registers_.clear();
    special_.clear();
    lines_.clear();
}

void RspTarget::release_hold()
{
    if (core_ != Core::held)
        return;
    invalidate();
    rsp_.resume();
    core_ = Core::running;
}

template <class Access> auto RspTarget::while_stopped(Access access)
{
    if (core_ == Core::running) {
        const StopReply stop = rsp_.interrupt();
        stopped(stop);
        ++stats_.access_halts;
        // A breakpoint that stopped the core before the interrupt arrived (QEMU ignores an
        // interrupt byte while stopped) leaves it halted, for the debugger to see.
        core_ = stop.value == sigtrap ? Core::halted : Core::held;
    }
    return access();
}

bool RspTarget::poll_halted()
{
    return unless_gone(false, [&]() -> bool {
        if (core_ != Core::running)
            return core_ == Core::halted;
        // A byte sent now would stop the guest: only look at what it has sent.
        if (auto stop = rsp_.poll_stop(transport::Duration::zero())) {
            stopped(*stop);
            core_ = Core::halted;
        }
        return core_ == Core::halted;
    });
}

void RspTarget::halt()
{
    unless_gone(false, [&] {
        if (core_ == Core::running)
            stopped(rsp_.interrupt());
        core_ = Core::halted;   // a held core is halted already: it just stays
        return true;
    });
}

void RspTarget::resume()
{
    unless_gone(false, [&] {
        if (core_ != Core::halted)
            return true;
        invalidate();
        rsp_.resume();
        core_ = Core::running;
        return true;
    });
}

void RspTarget::idle()
{
    unless_gone(false, [&] {
        release_hold();
        return true;
    });
}

void RspTarget::step()
{
    unless_gone(false, [&] {
        if (core_ != Core::halted)
            return true;
        invalidate();
        stopped(rsp_.step());
        return true;
    });
}

void RspTarget::reset(bool halt_after)
{
    unless_gone(false, [&] {
        halt();
        if (core_ == Core::gone)
            return true;
        // QEMU's monitor resets the machine; a stopped guest stays stopped, at the reset
        // vector's first instruction.
        rsp_.monitor("system_reset");
        invalidate();
        if (!halt_after)
            resume();
        return true;
    });
}

const std::string* RspTarget::cached_line(uint32_t line_address)
{
    auto found = lines_.find(line_address);
    if (found == lines_.end()) {
        ++stats_.memory_requests;
        const std::string reply = rsp_.request("m" + transport::rsp::number_to_hex(line_address) + "," + transport::rsp::number_to_hex(cache_line));
        std::string bytes;
        if (reply.empty() || reply[0] == 'E' || !transport::rsp::from_hex(reply, bytes) || bytes.size() != cache_line)
            bytes.clear();   // part of the line is not mapped: read what is asked, alone
        found = lines_.emplace(line_address, std::move(bytes)).first;
    } else {
        ++stats_.cache_hits;
    }
    return found->second.empty() ? nullptr : &found->second;
}

bool RspTarget::read_memory(uint32_t address, unsigned size, uint32_t& value)
{
    return unless_gone(false, [&]() -> bool {
        if (core_ != Core::running && cacheable(address)) {
            if (const std::string* line = cached_line(address & ~(cache_line - 1))) {
                value = uint32_t(from_little_endian(std::string_view(*line).substr(address & (cache_line - 1), size)));
                return true;
            }
        }
        return while_stopped([&] {
            ++stats_.memory_requests;
            const std::string reply = rsp_.request("m" + transport::rsp::number_to_hex(address) + "," + transport::rsp::number_to_hex(size));
            std::string bytes;
            if (reply.empty() || reply[0] == 'E' || !transport::rsp::from_hex(reply, bytes) || bytes.size() != size)
                return false;
            value = uint32_t(from_little_endian(bytes));
            return true;
        });
    });
}

bool RspTarget::write_memory(uint32_t address, unsigned size, uint32_t value)
{
    return unless_gone(false, [&]() -> bool {
        return while_stopped([&] {
            lines_.clear();
            ++stats_.memory_requests;
            const std::string reply = rsp_.request("M" + transport::rsp::number_to_hex(address) + "," + transport::rsp::number_to_hex(size) + ":" +
                                                   transport::rsp::to_hex(little_endian(value, size)));
            return reply == "OK";
        });
    });
}

bool RspTarget::has_register(const std::string& name) const
{
    return rsp_.target().find(name) != nullptr;
}

bool RspTarget::load_registers()
{
    if (!registers_.empty())
        return true;
    std::vector<std::string> names;
    for (const transport::RegisterInfo& r : rsp_.target().registers())
        if (r.bits == 32 || r.bits == 64)
            names.push_back(r.name);
    const std::vector<std::string> values = rsp_.read_register_bytes(names);
    for (size_t i = 0; i < names.size(); ++i)
        registers_[names[i]] = values[i];
    ++stats_.register_loads;
    return true;
}

std::optional<uint64_t> RspTarget::read_register(const std::string& name)
{
    return unless_gone(std::optional<uint64_t>(), [&]() -> std::optional<uint64_t> {
        if (core_ != Core::halted || !has_register(name))
            return std::nullopt;
        load_registers();
        const transport::RegisterInfo* info = rsp_.target().find(name);
        auto found = registers_.find(info->name);
        if (found == registers_.end())
            return std::nullopt;
        return from_little_endian(found->second);
    });
}

bool RspTarget::write_register(const std::string& name, uint64_t value)
{
    return unless_gone(false, [&]() -> bool {
        const transport::RegisterInfo* info = rsp_.target().find(name);
        if (core_ != Core::halted || info == nullptr || (info->bits != 32 && info->bits != 64))
            return false;
        const std::string bytes = little_endian(value, info->bits / 8);
        try {
            rsp_.write_register(info->name, bytes);
        } catch (const transport::Error& e) {
            if (e.kind() != transport::Error::Kind::protocol)
                throw;
            return false;   // refused: the debugger reads the old value back
        }
        if (!registers_.empty())
            registers_[info->name] = bytes;
        special_.clear();   // SP written: MSP or PSP with it
        return true;
    });
}

namespace {

// The special registers the stub reads and writes, with their SYSm numbers, read in groups of
// one run each (six MRS at most): what OpenOCD
// reads at every debug entry (REGSEL 17, 18 and 20); ARMv8-M's Non-secure bank, which the
// Secure state reaches (REGSEL 0x18, 0x19, 0x1E, 0x1F, 0x23's CONTROL); its stack limits.
struct StubRegister {
    const char* name;
    transport::SpecialRegister sysm;
    int group;
};
constexpr StubRegister special_registers[] = {
    {"msp", transport::SpecialRegister::msp, 0},
    {"psp", transport::SpecialRegister::psp, 0},
    {"primask", transport::SpecialRegister::primask, 0},
    {"basepri", transport::SpecialRegister::basepri, 0},
    {"faultmask", transport::SpecialRegister::faultmask, 0},
    {"control", transport::SpecialRegister::control, 0},
    {"msp_ns", transport::SpecialRegister::msp_ns, 1},
    {"psp_ns", transport::SpecialRegister::psp_ns, 1},
    {"msplim_ns", transport::SpecialRegister::msplim_ns, 1},
    {"psplim_ns", transport::SpecialRegister::psplim_ns, 1},
    {"control_ns", transport::SpecialRegister::control_ns, 1},
    {"msplim", transport::SpecialRegister::msplim, 2},
    {"psplim", transport::SpecialRegister::psplim, 2},
};

const StubRegister* special_register(const std::string& name)
{
    for (const StubRegister& known : special_registers)
        if (name == known.name)
            return &known;
    return nullptr;
}

// The registers the stub places itself by and puts back (six MRS write r0-r5).
bool stub_can_run(const transport::TargetDescription& target)
{
    for (const char* name : {"r0", "r1", "r2", "r3", "r4", "r5", "sp", "pc", "xpsr"})
        if (target.find(name) == nullptr)
            return false;
    return true;
}

} // namespace

// The registers of this halt, from the set read once per halt: the stub reads none of them
// again. The set is the core's as it is now: it is dropped when the core runs, steps or
// resets, or when a stub run writes MSP, PSP or CONTROL, and a register write updates it.
transport::HaltedCore RspTarget::halted_core()
{
    load_registers();
    auto value = [&](const std::string& name) -> std::optional<uint32_t> {
        const transport::RegisterInfo* info = rsp_.target().find(name);
        if (info == nullptr)
            return std::nullopt;
        auto found = registers_.find(info->name);
        if (found == registers_.end())
            return std::nullopt;
        return uint32_t(from_little_endian(found->second));
    };
    // SP, PC and xPSR are in the description (stub_can_run), so in the set.
    transport::HaltedCore core{value("sp").value(), value("pc").value(), value("xpsr").value()};
    for (unsigned i = 0; i < core.r.size(); ++i)
        core.r[i] = value("r" + std::to_string(i));
    return core;
}

std::optional<uint32_t> RspTarget::read_special_register(const std::string& name)
{
    return unless_gone(std::optional<uint32_t>(), [&]() -> std::optional<uint32_t> {
        const StubRegister* asked = special_register(name);
        if (core_ != Core::halted || has_register(name) || !asked || !stub_can_run(rsp_.target()))
            return std::nullopt;
        if (special_.count(name) == 0) {
            // The register's whole group in one run, kept until the core runs or a register
            // is written.
            std::vector<const StubRegister*> group;
            std::vector<transport::SpecialRegister> sysm;
            for (const StubRegister& known : special_registers)
                if (known.group == asked->group) {
                    group.push_back(&known);
                    sysm.push_back(known.sysm);
                }
            const transport::StubReads read = transport::read_special_registers(rsp_, halted_core(), sysm);
            ++stats_.stub_runs;
            stats_.stub_steps += read.steps;
            for (size_t i = 0; i < group.size(); ++i)
                special_[group[i]->name] = read.values[i];
        }
        return special_.at(name);
    });
}

bool RspTarget::write_special_register(const std::string& name, uint32_t value)
{
    return unless_gone(false, [&]() -> bool {
        const StubRegister* known = special_register(name);
        if (core_ != Core::halted || has_register(name) || !known || !stub_can_run(rsp_.target()))
            return false;
        unsigned steps = 0;
        const bool written = transport::write_special_register(rsp_, halted_core(), known->sysm, value, steps);
        ++stats_.stub_runs;
        stats_.stub_steps += steps;
        // Writing MSP or PSP may move SP, CONTROL may switch it: everything is read again.
        registers_.clear();
        special_.clear();
        return written;
    });
}

std::optional<bool> RspTarget::read_security_state()
{
    return unless_gone(std::optional<bool>(), [&]() -> std::optional<bool> {
        if (core_ != Core::halted || !stub_can_run(rsp_.target()))
            return std::nullopt;
        unsigned steps = 0;
        const std::optional<bool> secure = transport::read_security_state(rsp_, halted_core(), steps);
        ++stats_.stub_runs;
        stats_.stub_steps += steps;
        return secure;
    });
}

std::optional<uint32_t> RspTarget::sample_pc()
{
    return unless_gone(std::optional<uint32_t>(), [&]() -> std::optional<uint32_t> {
        if (core_ == Core::halted)
            return std::nullopt;
        release_hold();
        const StopReply stop = rsp_.interrupt();
        stopped(stop);
        if (stop.value == sigtrap) {
            core_ = Core::halted;   // a breakpoint halted it: it stays halted
            return std::nullopt;
        }
        const uint32_t pc = rsp_.read_registers({"pc"})[0];
        rsp_.resume();
        ++stats_.pc_samples;
        return pc;
    });
}

void RspTarget::set_breakpoints(const std::set<uint32_t>& addresses)
{
    unless_gone(false, [&] {
        while_stopped([&] {
            for (auto it = breakpoints_.begin(); it != breakpoints_.end();) {
                if (addresses.count(*it) == 0) {
                    rsp_.remove_breakpoint(*it);
                    it = breakpoints_.erase(it);
                } else {
                    ++it;
                }
            }
            for (uint32_t address : addresses)
                if (breakpoints_.count(address) == 0) {
                    rsp_.insert_breakpoint(address);
                    breakpoints_.insert(address);
                }
            return true;
        });
        return true;
    });
}

void RspTarget::detach()
{
    if (core_ == Core::gone)
        return;   // nothing to detach from
    halt();
    for (uint32_t address : breakpoints_)
        rsp_.remove_breakpoint(address);
    breakpoints_.clear();
    rsp_.detach();
}

} // namespace mcuprof::vprobe
