#pragma once
// The core being debugged, as the simulated Cortex-M debug logic needs it: run control,
// memory, registers by name, breakpoints, reset and a PC sample. RspTarget provides it
// over GDB's remote protocol (QEMU's gdbstub); tests provide fakes.
#include <cstdint>
#include <optional>
#include <set>
#include <string>

namespace mcuprof::vprobe {

class DebugTarget {
public:
    virtual ~DebugTarget() = default;

    // True when halted. Looks for a stop the target made by itself (a breakpoint) and
    // never blocks for long.
    virtual bool poll_halted() = 0;
    virtual void halt() = 0;
    virtual void resume() = 0;
    // Halted: one instruction, then halted again.
    virtual void step() = 0;
    // A system reset (SYSRESETREQ): the core restarts from the vector table; it stays
    // halted at the first instruction when `halt_after` (vector catch), else it runs.
    virtual void reset(bool halt_after) = 0;

    // One bus transfer of 1, 2 or 4 bytes (aligned); value right-aligned. A running target
    // is accessed too (QEMU: halted for the access and resumed). false: a bus error.
    virtual bool read_memory(uint32_t address, unsigned size, uint32_t& value) = 0;
    virtual bool write_memory(uint32_t address, unsigned size, uint32_t value) = 0;

    // Registers by their GDB names ("r0".."r12", "sp", "lr", "pc", "xpsr", "d0".."d15",
    // "fpscr", and where the target has them "msp", "psp", "primask", "basepri",
    // "faultmask", "control"). Only while halted; values of up to 64 bits.
    virtual bool has_register(const std::string& name) const = 0;
    virtual std::optional<uint64_t> read_register(const std::string& name) = 0;
    virtual bool write_register(const std::string& name, uint64_t value) = 0;

    // The special-purpose registers ("msp", "psp", "primask", "basepri", "faultmask",
    // "control") of a target that has them but does not give them as registers (QEMU 7.2):
    // read and written by other means, while halted. nullopt / false where it cannot.
    virtual std::optional<uint32_t> read_special_register(const std::string& /*name*/) { return std::nullopt; }
    virtual bool write_special_register(const std::string& /*name*/, uint32_t /*value*/) { return false; }

    // An ARMv8-M core with the Security Extension, halted: true in the Secure state, false in
    // the Non-secure, by other means than registers (QEMU 7.2: a TT instruction run by the
    // stub). nullopt where it cannot tell.
    virtual std::optional<bool> read_security_state() { return std::nullopt; }

    // Running: the PC of an instruction the core has just executed (QEMU: a brief halt).
    // nullopt when the core halted meanwhile (a breakpoint).
    virtual std::optional<uint32_t> sample_pc() = 0;

    // A running core that was stopped for memory accesses (still shown running) runs again:
    // a PC read from elsewhere (the truth plugin's PC file) must see it move. No-op where
    // accesses stop nothing.
    virtual void let_run() {}

    // The instruction addresses where the core must halt (FPB comparators), the whole set
    // each time.
    virtual void set_breakpoints(const std::set<uint32_t>& addresses) = 0;
};

} // namespace mcuprof::vprobe
