#include "mcuprof/sources/stack_pointer_stub.h"

#include <string>
#include <vector>

#include "mcuprof/transport/error.h"
#include "mcuprof/transport/rsp_client.h"
#include "mcuprof/transport/rsp_packet.h"

namespace mcuprof::sources {
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
    return transport::rsp::to_hex(std::string_view(bytes, 4));
}

std::string write_register(const transport::RspClient& gdb, const char* name, uint32_t value)
{
    const transport::RegisterInfo* r = gdb.target().find(name);
    if (r == nullptr)
        throw transport::Error(transport::Error::Kind::protocol, gdb.peer(), "target description",
                               std::string("no register '") + name + "'");
    return "P" + hex_number(r->number) + "=" + register_hex(value);
}

// MRS r0, <spec_reg> (ARMv7-M ARM, A7.7.82, encoding T1: 0xF3EF 0x8000 | Rd << 8 | SYSm;
// SYSm 8 is MSP, 9 is PSP, B5.1.1), then twice "B ." (A7.7.12, T2: 0xE7FE, a branch to
// itself), as little-endian halfwords. QEMU 7.2 sometimes runs two instructions for one
// step (measured: about 1 step in 1500, PC 4 or 6 bytes on); after the MRS it then only
// branches to where it is, changing nothing.
constexpr uint32_t stub_size = 8;
std::string stub_code(StackPointer which)
{
    const uint8_t sysm = which == StackPointer::main ? 8 : 9;
    const char bytes[stub_size] = {char(0xEF), char(0xF3), char(sysm), char(0x80),
                                   char(0xFE), char(0xE7), char(0xFE), char(0xE7)};
    return std::string(bytes, stub_size);
}

// xPSR's IT bits (EPSR ICI/IT, bits 26:25 and 15:10; B1.4.2): halted inside an IT block, the
// stub's MRS would run conditionally and advance the block. Cleared for the step, restored after.
constexpr uint32_t it_bits = 0x0600FC00u;

} // namespace

StubRead read_stack_pointer_by_stub(transport::RspClient& gdb, const core::CoreRegisters& halted, StackPointer which)
{
    // Where: the two words just below SP. Nothing lives below the active stack pointer: the
    // AAPCS (IHI 0042, 6.2.1.1) lets a program touch only [SP, stack base), and on Cortex-M
    // an exception pushes its frame there at any moment, so no code may keep data there.
    // The step runs with interrupts masked (QEMU's default single-step flags: no IRQ, no
    // timers), so nothing else writes there meanwhile. The bytes are put back anyway.
    const uint32_t sp = halted.r[13] & ~3u;
    if (sp < stub_size)
        return {};
    const uint32_t stub = sp - stub_size;
    const uint32_t pc = halted.r[15], xpsr = halted.xpsr, r0 = halted.r[0];
    const std::string address = hex_number(stub);

    // Round trip 1: the bytes there, the instruction, PC (and xPSR without IT state).
    const std::string size = hex_number(stub_size);
    std::vector<std::string> setup = {"m" + address + "," + size,
                                      "M" + address + "," + size + ":" + transport::rsp::to_hex(stub_code(which)),
                                      write_register(gdb, "pc", stub)};
    if ((xpsr & it_bits) != 0)
        setup.push_back(write_register(gdb, "xpsr", xpsr & ~it_bits));
    const std::vector<std::string> replies = gdb.request_all(setup);
    std::string saved;
    const bool read_back = !replies[0].empty() && replies[0][0] != 'E' && transport::rsp::from_hex(replies[0], saved) &&
                           saved.size() == stub_size;
    bool ready = read_back;
    for (size_t i = 1; i < replies.size(); ++i)
        ready = ready && replies[i] == "OK";

    // Round trip 2: the step. Round trip 3: r0 and PC read; the bytes, r0, PC, xPSR put back.
    StubRead out;
    if (ready) {
        out.stepped = true;
        const transport::StopReply stop = gdb.step();
        if (stop.kind != transport::StopReply::Kind::signal)
            throw transport::Error(transport::Error::Kind::closed, gdb.peer(), "stack pointer stub",
                                   "the target ended during a single step");
    }
    std::vector<std::string> restore;
    if (ready) {
        restore.push_back("p" + hex_number(gdb.target().find("r0")->number));
        restore.push_back("p" + hex_number(gdb.target().find("pc")->number));
    }
    const size_t first_write = restore.size();
    if (read_back && replies[1] == "OK")
        restore.push_back("M" + address + "," + size + ":" + transport::rsp::to_hex(saved));
    restore.push_back(write_register(gdb, "r0", r0));
    restore.push_back(write_register(gdb, "pc", pc));
    restore.push_back(write_register(gdb, "xpsr", xpsr));
    const std::vector<std::string> restored = gdb.request_all(restore);
    for (size_t i = first_write; i < restored.size(); ++i)
        if (restored[i] != "OK")
            throw transport::Error(transport::Error::Kind::protocol, gdb.peer(), "stack pointer stub",
                                   "could not restore the target after the stub ('" + restored[i].substr(0, 20) + "')");
    if (ready) {
        // The MRS ran when PC moved past it (4 bytes; the branch keeps it there); otherwise r0
        // is not the value.
        const std::optional<uint32_t> stepped_r0 = transport::rsp::le32_from_hex(restored[0]);
        const std::optional<uint32_t> stepped_pc = transport::rsp::le32_from_hex(restored[1]);
        if (stepped_r0 && stepped_pc == stub + 4)
            out.value = stepped_r0;
    }
    return out;
}

} // namespace mcuprof::sources
