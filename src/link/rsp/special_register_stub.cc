#include "mcuprof/link/special_register_stub.h"

#include <algorithm>
#include <string>

#include "mcuprof/link/error.h"
#include "mcuprof/link/rsp_client.h"
#include "mcuprof/link/rsp_packet.h"

namespace mcuprof::transport {
namespace {

std::string hex_number(uint32_t value)
{
    static const char digits[] = "0123456789abcdef";
    std::string out;
    do {
        out.insert(out.begin(), digits[value & 0xF]);
        value >>= 4;
    } while (value != 0);
    return out;
}

// A register's value as the target's little-endian bytes, hex-encoded ('P' packets).
std::string register_hex(uint32_t value)
{
    const char bytes[4] = {char(value), char(value >> 8), char(value >> 16), char(value >> 24)};
    return rsp::to_hex(std::string_view(bytes, 4));
}

unsigned register_number(const RspClient& gdb, const std::string& name)
{
    const RegisterInfo* r = gdb.target().find(name);
    if (r == nullptr)
        throw Error(Error::Kind::protocol, gdb.peer(), "target description", "no register '" + name + "'");
    return r->number;
}

std::string write_packet(const RspClient& gdb, const std::string& name, uint32_t value)
{
    return "P" + hex_number(register_number(gdb, name)) + "=" + register_hex(value);
}

std::string read_packet(const RspClient& gdb, const std::string& name)
{
    return "p" + hex_number(register_number(gdb, name));
}

// Thumb-2 encodings (ARMv7-M ARM, DDI 0403), as the two halfwords first << 16 | second.
// MRS Rd, <spec_reg>: A7.7.82, T1: F3EF, 8000 | Rd << 8 | SYSm.
uint32_t mrs(unsigned rd, SpecialRegister from)
{
    return 0xF3EF8000u | rd << 8 | uint32_t(from);
}
// MSR <spec_reg>, Rn: A7.7.83, T1: F380 | Rn, 8800 | SYSm (mask 0b10, the only one for
// registers outside the APSR group).
uint32_t msr(SpecialRegister to, unsigned rn)
{
    return (0xF380u | rn) << 16 | 0x8800u | uint32_t(to);
}

// xPSR's IT bits (EPSR ICI/IT, bits 26:25 and 15:10; B1.4.2): halted inside an IT block, the
// stub's instructions would run conditionally and advance the block. Cleared for the steps,
// restored after.
constexpr uint32_t it_bits = 0x0600FC00u;

struct StubRun {
    bool ran = false;               // every instruction ran: PC stands past the last one
    std::vector<uint32_t> outputs;  // r0, r1, ... after the steps
    unsigned steps = 0;
};

std::string general_register(unsigned i)
{
    return "r" + std::to_string(i);
}

// Where the stub goes and what it is.
struct StubPlace {
    uint32_t address = 0;
    uint32_t size = 0;
    std::string code;   // the instructions' bytes, then the two "B ."
};

StubPlace place_stub(uint32_t address, const std::vector<uint32_t>& instructions)
{
    StubPlace place;
    place.address = address;
    place.size = 4 * uint32_t(instructions.size()) + 4;
    for (uint32_t instruction : instructions)
        for (uint32_t halfword : {instruction >> 16, instruction & 0xFFFF})
            place.code += {char(halfword), char(halfword >> 8)};
    place.code += {char(0xFE), char(0xE7), char(0xFE), char(0xE7)};
    return place;
}

// What the first round trip found and left, for the steps and the last round trip.
struct StubSetup {
    std::vector<std::optional<uint32_t>> original;   // r0 .. r(touched - 1) before the stub
    std::string saved;           // the bytes the stub's took the place of
    bool read_back = false;      // `saved` holds them all
    bool code_written = false;   // the stub's bytes were written (its 'M' answered OK)
    bool ready = false;          // every register known and every write OK: the steps may run
};

// Round trip 1: the registers it will change that the caller does not hold and the bytes
// there (read first, the server answers in order), then the code, the inputs, PC (and xPSR
// without IT state).
StubSetup set_up_stub(RspClient& gdb, const HaltedCore& halted, const StubPlace& place,
                      const std::vector<uint32_t>& inputs, unsigned touched)
{
    const std::string address = hex_number(place.address), length = hex_number(place.size);
    StubSetup setup;
    setup.original.resize(touched);
    std::vector<unsigned> unknown;   // the registers read first, in the order of their replies
    std::vector<std::string> packets;
    for (unsigned i = 0; i < touched; ++i) {
        setup.original[i] = i < halted.r.size() ? halted.r[i] : std::nullopt;
        if (!setup.original[i]) {
            unknown.push_back(i);
            packets.push_back(read_packet(gdb, general_register(i)));
        }
    }
    const size_t bytes_reply = packets.size();
    packets.push_back("m" + address + "," + length);
    packets.push_back("M" + address + "," + length + ":" + rsp::to_hex(place.code));
    for (unsigned i = 0; i < inputs.size(); ++i)
        packets.push_back(write_packet(gdb, general_register(i), inputs[i]));
    packets.push_back(write_packet(gdb, "pc", place.address));
    if ((halted.xpsr & it_bits) != 0)
        packets.push_back(write_packet(gdb, "xpsr", halted.xpsr & ~it_bits));
    const std::vector<std::string> replies = gdb.request_all(packets);
    for (size_t i = 0; i < unknown.size(); ++i)
        setup.original[unknown[i]] = rsp::le32_from_hex(replies[i]);
    const bool have_originals = std::find(setup.original.begin(), setup.original.end(), std::nullopt) ==
                                setup.original.end();
    const std::string& saved_hex = replies[bytes_reply];
    setup.read_back = !saved_hex.empty() && saved_hex[0] != 'E' && rsp::from_hex(saved_hex, setup.saved) &&
                      setup.saved.size() == place.size;
    setup.code_written = replies[bytes_reply + 1] == "OK";
    setup.ready = setup.read_back && have_originals;
    for (size_t i = bytes_reply + 1; i < replies.size(); ++i)
        setup.ready = setup.ready && replies[i] == "OK";
    return setup;
}

// One step per instruction; returns the steps taken. QEMU 7.2 sometimes runs two instructions
// for one step (measured: about 1 step in 1500): the later steps then run a "B .", changing
// nothing.
unsigned step_stub(RspClient& gdb, size_t instructions)
{
    unsigned steps = 0;
    for (size_t i = 0; i < instructions; ++i) {
        ++steps;
        if (gdb.step().kind != StopReply::Kind::signal)
            throw Error(Error::Kind::closed, gdb.peer(), "special register stub", "the target ended during a single step");
    }
    return steps;
}

// Last round trip: the outputs and PC read (when the stub ran: replies 0 .. outputs); the
// bytes, the registers, PC, xPSR put back. Throws if a write back failed.
std::vector<std::string> restore_after_stub(RspClient& gdb, const HaltedCore& halted, const StubPlace& place,
                                            const StubSetup& setup, unsigned outputs)
{
    std::vector<std::string> restore;
    if (setup.ready) {
        for (unsigned i = 0; i < outputs; ++i)
            restore.push_back(read_packet(gdb, general_register(i)));
        restore.push_back(read_packet(gdb, "pc"));
    }
    const size_t first_write = restore.size();
    if (setup.read_back && setup.code_written)
        restore.push_back("M" + hex_number(place.address) + "," + hex_number(place.size) + ":" +
                          rsp::to_hex(setup.saved));
    for (unsigned i = 0; i < setup.original.size(); ++i)
        if (setup.original[i])
            restore.push_back(write_packet(gdb, general_register(i), *setup.original[i]));
    restore.push_back(write_packet(gdb, "pc", halted.pc));
    restore.push_back(write_packet(gdb, "xpsr", halted.xpsr));
    const std::vector<std::string> restored = gdb.request_all(restore);
    for (size_t i = first_write; i < restored.size(); ++i)
        if (restored[i] != "OK")
            throw Error(Error::Kind::protocol, gdb.peer(), "special register stub",
                        "could not restore the target after the stub ('" + restored[i].substr(0, 20) + "')");
    return restored;
}

// The run's outputs from the last round trip's replies, if every instruction ran: PC stands
// past the last (the branches keep it there).
StubRun stub_outputs(const std::vector<std::string>& restored, const StubPlace& place, size_t instructions,
                     unsigned outputs, unsigned steps)
{
    StubRun run;
    run.steps = steps;
    if (rsp::le32_from_hex(restored[outputs]) != place.address + 4 * instructions)
        return run;
    for (unsigned i = 0; i < outputs; ++i) {
        const std::optional<uint32_t> v = rsp::le32_from_hex(restored[i]);
        if (!v)
            return StubRun{false, {}, run.steps};
        run.outputs.push_back(*v);
    }
    run.ran = true;
    return run;
}

// Runs `instructions` (32-bit Thumb, one step each), followed by twice "B ." (A7.7.12, T2:
// E7FE, a branch to itself), in the free stack just below SP, with r0, r1, ... set to
// `inputs` before; reads r0 .. r(outputs - 1) after; puts back the bytes, every register it
// set, PC and xPSR.
StubRun run_stub(RspClient& gdb, const HaltedCore& halted, const std::vector<uint32_t>& instructions,
                 const std::vector<uint32_t>& inputs, unsigned outputs)
{
    // Where: the words just below SP. Nothing lives below the active stack pointer: the
    // AAPCS (IHI 0042, 6.2.1.1) lets a program touch only [SP, stack base), and on Cortex-M
    // an exception pushes its frame there at any moment, so no code may keep data there.
    // The steps run with interrupts masked (QEMU's default single-step flags: no IRQ, no
    // timers), so nothing else writes there meanwhile. The bytes are put back anyway.
    StubRun run;
    const uint32_t size = 4 * uint32_t(instructions.size()) + 4;
    const uint32_t sp = halted.sp & ~3u;
    if (sp < size)
        return run;
    const StubPlace place = place_stub(sp - size, instructions);
    const unsigned touched = unsigned(std::max(inputs.size(), size_t(outputs)));

    const StubSetup setup = set_up_stub(gdb, halted, place, inputs, touched);
    if (setup.ready)
        run.steps = step_stub(gdb, instructions.size());
    const std::vector<std::string> restored = restore_after_stub(gdb, halted, place, setup, outputs);
    // Nothing ran; the bytes, PC and xPSR are back (an input register it could not read first
    // keeps the input).
    const auto missing = std::find(setup.original.begin(), setup.original.end(), std::nullopt);
    if (missing != setup.original.end())
        throw Error(Error::Kind::protocol, gdb.peer(), "special register stub",
                    "could not read " + general_register(unsigned(missing - setup.original.begin())));
    if (!setup.ready)
        return run;
    return stub_outputs(restored, place, instructions.size(), outputs, run.steps);
}

bool is_stack_pointer(SpecialRegister which)
{
    return which == SpecialRegister::msp || which == SpecialRegister::psp || which == SpecialRegister::msp_ns ||
           which == SpecialRegister::psp_ns;
}

// Thread mode (IPSR 0, xPSR bits 8:0; B1.4.2): only there can the core be unprivileged.
bool thread_mode(const HaltedCore& halted)
{
    return (halted.xpsr & 0x1FFu) == 0;
}

} // namespace

StubReads read_special_registers(RspClient& gdb, const HaltedCore& halted, const std::vector<SpecialRegister>& which)
{
    if (which.size() > 6)
        throw Error(Error::Kind::protocol, gdb.peer(), "special register stub", "at most 6 registers at a time");
    // MRS reads MSP and PSP as 0 when unprivileged (DDI 0403, B5.2.2): in Thread mode CONTROL
    // (nPRIV, bit 0) is read first, to know whether the values are real.
    std::vector<SpecialRegister> asked = which;
    const bool check_privilege = thread_mode(halted) && std::any_of(which.begin(), which.end(), is_stack_pointer);
    if (check_privilege && std::find(asked.begin(), asked.end(), SpecialRegister::control) == asked.end())
        asked.push_back(SpecialRegister::control);
    std::vector<uint32_t> code;
    for (unsigned i = 0; i < asked.size(); ++i)
        code.push_back(mrs(i, asked[i]));
    const StubRun run = run_stub(gdb, halted, code, {}, unsigned(asked.size()));

    StubReads out;
    out.steps = run.steps;
    out.values.assign(which.size(), std::nullopt);
    if (!run.ran)
        return out;
    const size_t control = size_t(std::find(asked.begin(), asked.end(), SpecialRegister::control) - asked.begin());
    const bool unprivileged = check_privilege && (run.outputs[control] & 1u) != 0;
    for (size_t i = 0; i < which.size(); ++i)
        if (!(unprivileged && is_stack_pointer(which[i])))
            out.values[i] = run.outputs[i];
    return out;
}

std::optional<bool> read_security_state(RspClient& gdb, const HaltedCore& halted, unsigned& steps)
{
    // TT r0, r1 (T1: E840 | Rn, F000 | Rd << 8), with r1 the halted PC.
    constexpr uint32_t tt_r0_r1 = 0xE841F000u;
    const StubRun run = run_stub(gdb, halted, {tt_r0_r1}, {0, halted.pc}, 1);
    steps += run.steps;
    if (!run.ran)
        return std::nullopt;
    return (run.outputs[0] & (1u << 22)) != 0;
}

bool write_special_register(RspClient& gdb, const HaltedCore& halted, SpecialRegister which, uint32_t value,
                            unsigned& steps)
{
    // Unprivileged, MSR to these registers is ignored (DDI 0403, B5.2.3): in Thread mode CONTROL
    // is read into r1 first, and the write counts only when nPRIV was 0.
    if (!thread_mode(halted)) {
        const StubRun run = run_stub(gdb, halted, {msr(which, 0)}, {value}, 0);
        steps += run.steps;
        return run.ran;
    }
    const StubRun run = run_stub(gdb, halted, {mrs(1, SpecialRegister::control), msr(which, 0)}, {value}, 2);
    steps += run.steps;
    return run.ran && (run.outputs[1] & 1u) == 0;
}

} // namespace mcuprof::transport
