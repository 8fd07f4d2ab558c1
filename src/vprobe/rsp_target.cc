#include "mcuprof/vprobe/rsp_target.h"

#include <cstdio>

#include "mcuprof/link/error.h"
#include "mcuprof/vprobe/error.h"
#include "mcuprof/link/rsp_packet.h"

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

// Another core of the machine: its DebugTarget operations are the machine's, for its index.
class RspTarget::OtherCore : public DebugTarget {
public:
    OtherCore(RspTarget& machine, unsigned index) : m_(machine), c_(index) {}
    bool poll_halted() override { return m_.poll_halted(c_); }
    void halt() override { m_.halt(c_); }
    void resume() override { m_.resume(c_); }
    void step() override { m_.step(c_); }
    void reset(bool halt_after) override { m_.reset(c_, halt_after); }
    bool read_memory(uint32_t a, unsigned size, uint32_t& v) override { return m_.read_memory(c_, a, size, v); }
    bool write_memory(uint32_t a, unsigned size, uint32_t v) override { return m_.write_memory(c_, a, size, v); }
    bool has_register(const std::string& name) const override { return m_.has_register(c_, name); }
    std::optional<uint64_t> read_register(const std::string& name) override { return m_.read_register(c_, name); }
    bool write_register(const std::string& name, uint64_t v) override { return m_.write_register(c_, name, v); }
    std::optional<uint32_t> read_special_register(const std::string& name) override
    {
        return m_.read_special_register(c_, name);
    }
    bool write_special_register(const std::string& name, uint32_t v) override
    {
        return m_.write_special_register(c_, name, v);
    }
    std::optional<bool> read_security_state() override { return m_.read_security_state(c_); }
    std::optional<uint32_t> sample_pc() override { return m_.sample_pc(c_); }
    void let_run() override { m_.idle(); }
    void set_breakpoints(const std::set<uint32_t>& addresses) override { m_.set_breakpoints(c_, addresses); }

private:
    RspTarget& m_;
    unsigned c_;
};

RspTarget::RspTarget(transport::RspClient& rsp, bool halted)
    : rsp_(rsp), machine_(halted ? Machine::stopped : Machine::running), cores_(1)
{
    cores_[0].halted = halted;
}

unsigned RspTarget::attach_cores(bool halted)
{
    const std::vector<std::string> threads = rsp_.attach_every_process();
    if (threads.size() < 2)
        return 1;
    cores_.assign(threads.size(), Core{});
    others_.clear();
    for (unsigned i = 0; i < threads.size(); ++i) {
        cores_[i].thread = threads[i];
        cores_[i].halted = halted;
        rsp_.select_thread(threads[i]);
        cores_[i].description = rsp_.read_target_description();
        if (i > 0)
            others_.push_back(std::make_unique<OtherCore>(*this, i));
    }
    selected_ = threads.back();
    described_ = unsigned(threads.size());   // none yet: the first select() gives the client its core's
    // A core's step must not let the others run (QEMU's 's' resumes the whole machine with
    // one core single-stepping): the stub's steps too.
    rsp_.step_selected_thread_alone = true;
    return unsigned(threads.size());
}

DebugTarget& RspTarget::core(unsigned i)
{
    if (i == 0)
        return *this;
    return *others_.at(i - 1);
}

RspTarget::~RspTarget() = default;

bool RspTarget::any_halted() const
{
    for (const Core& core : cores_)
        if (core.halted)
            return true;
    return false;
}

void RspTarget::select(unsigned c)
{
    const std::string& thread = cores_[c].thread;
    if (thread.empty())
        return;
    if (thread != selected_) {
        rsp_.select_thread(thread);
        selected_ = thread;
    }
    if (described_ != c) {
        rsp_.use_target_description(cores_[c].description);
        described_ = c;
    }
}

const transport::TargetDescription& RspTarget::description(unsigned c) const
{
    return cores_[c].thread.empty() ? rsp_.target() : cores_[c].description;
}

bool RspTarget::has_register(unsigned c, const std::string& name) const
{
    return description(c).find(name) != nullptr;
}

namespace {

// The thread a stop reply names ("T05thread:p02.02;..."), empty where it names none.
std::string stop_thread(const std::string& raw)
{
    const size_t at = raw.find("thread:");
    if (at == std::string::npos)
        return {};
    const size_t from = at + 7;
    return raw.substr(from, raw.find(';', from) - from);
}

} // namespace

void RspTarget::stopped(const StopReply& stop)
{
    if (stop.kind == StopReply::Kind::exited)
        lose("the target exited with code " + std::to_string(stop.value));
    if (stop.kind == StopReply::Kind::terminated)
        lose("the target was terminated by signal " + std::to_string(stop.value));
    machine_ = Machine::stopped;
    // QEMU makes the core that stopped the machine the one Hg and Hc select, and names it.
    const std::string thread = stop_thread(stop.raw);
    selected_ = thread;
    if (stop.value != sigtrap)
        return;
    // A breakpoint (or a finished step) halts its core for the debugger.
    unsigned stopping = 0;
    for (unsigned i = 0; i < cores_.size(); ++i)
        if (!thread.empty() && cores_[i].thread == thread)
            stopping = i;
    cores_[stopping].halted = true;
}

void RspTarget::stop_machine()
{
    stopped(rsp_.interrupt());
}

void RspTarget::resume_machine()
{
    invalidate();
    rsp_.resume();
    machine_ = Machine::running;
}

void RspTarget::lose(const std::string& reason)
{
    if (machine_ == Machine::gone)
        throw Gone{};
    machine_ = Machine::gone;
    gone_reason_ = reason;
    invalidate();
    inserted_.clear();
    for (Core& core : cores_) {
        core.breakpoints.clear();
        core.halted = false;
    }
    if (on_gone)
        on_gone(reason);
    throw Gone{};
}

// Runs a public operation; once the target is gone (it exited, its connection closed) the
// operation answers `if_gone` without a word to the server.
template <class Result, class Body> Result RspTarget::unless_gone(Result if_gone, Body body)
{
    if (machine_ == Machine::gone)
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
    for (Core& core : cores_) {
        core.registers.clear();
        core.special.clear();
    }
    lines_.clear();
}

void RspTarget::release_hold()
{
    if (machine_ == Machine::stopped && !any_halted())
        resume_machine();
}

template <class Access> auto RspTarget::while_stopped(Access access)
{
    if (machine_ == Machine::running) {
        stop_machine();
        ++stats_.access_halts;
        // A breakpoint that stopped a core before the interrupt arrived (QEMU ignores an
        // interrupt byte while stopped) leaves it halted, for the debugger to see.
    }
    return access();
}

bool RspTarget::poll_halted() { return poll_halted(0); }
void RspTarget::halt() { halt(0); }
void RspTarget::resume() { resume(0); }
void RspTarget::step() { step(0); }
void RspTarget::reset(bool halt_after) { reset(0, halt_after); }
bool RspTarget::read_memory(uint32_t address, unsigned size, uint32_t& value) { return read_memory(0, address, size, value); }
bool RspTarget::write_memory(uint32_t address, unsigned size, uint32_t value) { return write_memory(0, address, size, value); }
std::optional<uint64_t> RspTarget::read_register(const std::string& name) { return read_register(0, name); }
bool RspTarget::write_register(const std::string& name, uint64_t value) { return write_register(0, name, value); }
std::optional<uint32_t> RspTarget::read_special_register(const std::string& name) { return read_special_register(0, name); }
bool RspTarget::write_special_register(const std::string& name, uint32_t value) { return write_special_register(0, name, value); }
std::optional<bool> RspTarget::read_security_state() { return read_security_state(0); }
std::optional<uint32_t> RspTarget::sample_pc() { return sample_pc(0); }
void RspTarget::set_breakpoints(const std::set<uint32_t>& addresses) { set_breakpoints(0, addresses); }

bool RspTarget::poll_halted(unsigned c)
{
    return unless_gone(false, [&]() -> bool {
        // A byte sent now would stop the guest: only look at what it has sent.
        if (machine_ == Machine::running)
            if (auto stop = rsp_.poll_stop(transport::Duration::zero())) {
                stopped(*stop);
                if (!any_halted())   // a stop that halts no core (not a breakpoint): the core that stopped
                    cores_[0].halted = true;
            }
        return cores_[c].halted;
    });
}

void RspTarget::halt(unsigned c)
{
    unless_gone(false, [&] {
        if (machine_ == Machine::running) {
            stop_machine();
            first_halt_ = std::chrono::steady_clock::now();
        } else if (!cores_[c].halted && any_halted()) {
            stats_.halt_skews.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - first_halt_).count());
        } else if (!any_halted()) {
            first_halt_ = std::chrono::steady_clock::now();   // held for accesses: this halt is the first
        }
        cores_[c].halted = true;   // a held machine is stopped already: the core just stays
        return true;
    });
}

void RspTarget::resume(unsigned c)
{
    unless_gone(false, [&] {
        if (!cores_[c].halted)
            return true;
        cores_[c].halted = false;
        cores_[c].registers.clear();
        cores_[c].special.clear();
        if (!any_halted())
            resume_machine();
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

void RspTarget::step(unsigned c)
{
    unless_gone(false, [&] {
        if (!cores_[c].halted)
            return true;
        invalidate();
        select(c);
        stopped(rsp_.step());
        return true;
    });
}

void RspTarget::reset(unsigned c, bool halt_after)
{
    unless_gone(false, [&] {
        halt(c);
        if (machine_ == Machine::gone)
            return true;
        // QEMU's monitor resets the machine (every core); a stopped guest stays stopped, at
        // the reset vector's first instruction.
        rsp_.monitor("system_reset");
        invalidate();
        if (!halt_after)
            resume(c);
        return true;
    });
}

const std::string* RspTarget::cached_line(unsigned c, uint32_t line_address)
{
    auto found = lines_.find(line_address);
    if (found == lines_.end()) {
        ++stats_.memory_requests;
        select(c);
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

bool RspTarget::read_memory(unsigned c, uint32_t address, unsigned size, uint32_t& value)
{
    return unless_gone(false, [&]() -> bool {
        if (machine_ != Machine::running && cacheable(address)) {
            if (const std::string* line = cached_line(c, address & ~(cache_line - 1))) {
                value = uint32_t(from_little_endian(std::string_view(*line).substr(address & (cache_line - 1), size)));
                return true;
            }
        }
        return while_stopped([&] {
            ++stats_.memory_requests;
            select(c);   // the PPB (SCS, CPUID) is each core's own
            const std::string reply = rsp_.request("m" + transport::rsp::number_to_hex(address) + "," + transport::rsp::number_to_hex(size));
            std::string bytes;
            if (reply.empty() || reply[0] == 'E' || !transport::rsp::from_hex(reply, bytes) || bytes.size() != size)
                return false;
            value = uint32_t(from_little_endian(bytes));
            return true;
        });
    });
}

bool RspTarget::write_memory(unsigned c, uint32_t address, unsigned size, uint32_t value)
{
    return unless_gone(false, [&]() -> bool {
        return while_stopped([&] {
            lines_.clear();
            ++stats_.memory_requests;
            select(c);
            const std::string reply = rsp_.request("M" + transport::rsp::number_to_hex(address) + "," + transport::rsp::number_to_hex(size) + ":" +
                                                   transport::rsp::to_hex(little_endian(value, size)));
            return reply == "OK";
        });
    });
}

bool RspTarget::has_register(const std::string& name) const
{
    return has_register(0, name);
}

bool RspTarget::load_registers(unsigned c)
{
    std::map<std::string, std::string>& registers = cores_[c].registers;
    if (!registers.empty())
        return true;
    select(c);
    std::vector<std::string> names;
    for (const transport::RegisterInfo& r : description(c).registers())
        if (r.bits == 32 || r.bits == 64)
            names.push_back(r.name);
    const std::vector<std::string> values = rsp_.read_register_bytes(names);
    for (size_t i = 0; i < names.size(); ++i)
        registers[names[i]] = values[i];
    ++stats_.register_loads;
    return true;
}

std::optional<uint64_t> RspTarget::read_register(unsigned c, const std::string& name)
{
    return unless_gone(std::optional<uint64_t>(), [&]() -> std::optional<uint64_t> {
        if (!cores_[c].halted || !has_register(c, name))
            return std::nullopt;
        load_registers(c);
        const transport::RegisterInfo* info = description(c).find(name);
        auto found = cores_[c].registers.find(info->name);
        if (found == cores_[c].registers.end())
            return std::nullopt;
        return from_little_endian(found->second);
    });
}

bool RspTarget::write_register(unsigned c, const std::string& name, uint64_t value)
{
    return unless_gone(false, [&]() -> bool {
        const transport::RegisterInfo* info = description(c).find(name);
        if (!cores_[c].halted || info == nullptr || (info->bits != 32 && info->bits != 64))
            return false;
        const std::string bytes = little_endian(value, info->bits / 8);
        try {
            select(c);
            rsp_.write_register(info->name, bytes);
        } catch (const transport::Error& e) {
            if (e.kind() != transport::Error::Kind::protocol)
                throw;
            return false;   // refused: the debugger reads the old value back
        }
        if (!cores_[c].registers.empty())
            cores_[c].registers[info->name] = bytes;
        cores_[c].special.clear();   // SP written: MSP or PSP with it
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
transport::HaltedCore RspTarget::halted_core(unsigned c)
{
    load_registers(c);
    const std::map<std::string, std::string>& registers = cores_[c].registers;
    auto value = [&](const std::string& name) -> std::optional<uint32_t> {
        const transport::RegisterInfo* info = description(c).find(name);
        if (info == nullptr)
            return std::nullopt;
        auto found = registers.find(info->name);
        if (found == registers.end())
            return std::nullopt;
        return uint32_t(from_little_endian(found->second));
    };
    // SP, PC and xPSR are in the description (stub_can_run), so in the set.
    transport::HaltedCore core{value("sp").value(), value("pc").value(), value("xpsr").value()};
    for (unsigned i = 0; i < core.r.size(); ++i)
        core.r[i] = value("r" + std::to_string(i));
    return core;
}

std::optional<uint32_t> RspTarget::read_special_register(unsigned c, const std::string& name)
{
    return unless_gone(std::optional<uint32_t>(), [&]() -> std::optional<uint32_t> {
        std::map<std::string, std::optional<uint32_t>>& special = cores_[c].special;
        const StubRegister* asked = special_register(name);
        if (!cores_[c].halted || has_register(c, name) || !asked || !stub_can_run(description(c)))
            return std::nullopt;
        if (special.count(name) == 0) {
            // The register's whole group in one run, kept until the core runs or a register
            // is written.
            std::vector<const StubRegister*> group;
            std::vector<transport::SpecialRegister> sysm;
            for (const StubRegister& known : special_registers)
                if (known.group == asked->group) {
                    group.push_back(&known);
                    sysm.push_back(known.sysm);
                }
            const transport::StubReads read = transport::read_special_registers(rsp_, halted_core(c), sysm);
            ++stats_.stub_runs;
            stats_.stub_steps += read.steps;
            for (size_t i = 0; i < group.size(); ++i)
                special[group[i]->name] = read.values[i];
        }
        return special.at(name);
    });
}

bool RspTarget::write_special_register(unsigned c, const std::string& name, uint32_t value)
{
    return unless_gone(false, [&]() -> bool {
        const StubRegister* known = special_register(name);
        if (!cores_[c].halted || has_register(c, name) || !known || !stub_can_run(description(c)))
            return false;
        unsigned steps = 0;
        const bool written = transport::write_special_register(rsp_, halted_core(c), known->sysm, value, steps);
        ++stats_.stub_runs;
        stats_.stub_steps += steps;
        // Writing MSP or PSP may move SP, CONTROL may switch it: everything is read again.
        cores_[c].registers.clear();
        cores_[c].special.clear();
        return written;
    });
}

std::optional<bool> RspTarget::read_security_state(unsigned c)
{
    return unless_gone(std::optional<bool>(), [&]() -> std::optional<bool> {
        if (!cores_[c].halted || !stub_can_run(description(c)))
            return std::nullopt;
        unsigned steps = 0;
        const std::optional<bool> secure = transport::read_security_state(rsp_, halted_core(c), steps);
        ++stats_.stub_runs;
        stats_.stub_steps += steps;
        return secure;
    });
}

std::optional<uint32_t> RspTarget::sample_pc(unsigned c)
{
    return unless_gone(std::optional<uint32_t>(), [&]() -> std::optional<uint32_t> {
        if (cores_[c].halted)
            return std::nullopt;
        release_hold();
        // Another core halted for its debugger keeps the machine stopped: this core is
        // stalled, and its PC is where it stopped (a real core would move on).
        const bool was_running = machine_ == Machine::running;
        if (was_running)
            stop_machine();
        if (cores_[c].halted)
            return std::nullopt;   // a breakpoint halted it: it stays halted
        select(c);
        const uint32_t pc = rsp_.read_registers({"pc"})[0];
        if (was_running && !any_halted())
            resume_machine();
        ++stats_.pc_samples;
        return pc;
    });
}

void RspTarget::set_breakpoints(unsigned c, const std::set<uint32_t>& addresses)
{
    unless_gone(false, [&] {
        cores_[c].breakpoints = addresses;
        // QEMU's Z0 stops every CPU at the address: the server gets the union of the cores' sets.
        std::set<uint32_t> wanted;
        for (const Core& core : cores_)
            wanted.insert(core.breakpoints.begin(), core.breakpoints.end());
        if (wanted == inserted_)
            return true;
        while_stopped([&] {
            for (auto it = inserted_.begin(); it != inserted_.end();) {
                if (wanted.count(*it) == 0) {
                    rsp_.remove_breakpoint(*it);
                    it = inserted_.erase(it);
                } else {
                    ++it;
                }
            }
            for (uint32_t address : wanted)
                if (inserted_.count(address) == 0) {
                    rsp_.insert_breakpoint(address);
                    inserted_.insert(address);
                }
            return true;
        });
        return true;
    });
}

void RspTarget::detach()
{
    if (machine_ == Machine::gone)
        return;   // nothing to detach from
    halt();
    for (uint32_t address : inserted_)
        rsp_.remove_breakpoint(address);
    inserted_.clear();
    rsp_.detach();
}

} // namespace mcuprof::vprobe
