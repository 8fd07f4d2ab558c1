#pragma once
// A halted Cortex-M as the stack readers see it: its registers, and its memory a word at a
// time. The unwinder (unwinder.h) and the exception-table interpreter (exidx.h) read it.
#include <array>
#include <cstdint>
#include <optional>

namespace mcuprof::core {

// The registers of one security state's stacks (ARMv8-M ARM, B3.2 "Registers": each state
// has its own MSP, PSP, MSPLIM, PSPLIM and CONTROL when the Security Extension is there).
struct StackRegisters {
    std::optional<uint32_t> msp;
    std::optional<uint32_t> psp;
    std::optional<uint32_t> msplim;          // ARMv8-M: the lowest address the stack may reach
    std::optional<uint32_t> psplim;
    std::optional<uint32_t> control;         // CONTROL: bit 1, SPSEL, says which stack Thread mode uses
};

struct CoreRegisters {
    std::array<uint32_t, 16> r{};            // r0-r12, sp (r13), lr (r14), pc (r15)
    uint32_t xpsr = 0;
    std::optional<uint32_t> msp;             // the banked stack pointers, when the link gives them
    std::optional<uint32_t> psp;
    std::optional<uint32_t> msplim;          // ARMv8-M's stack limits, when the link gives them:
    std::optional<uint32_t> psplim;          // a frame below its stack's limit is implausible
    // ARMv8-M with the Security Extension: the registers of the other security state (MSP_S,
    // PSP_S, CONTROL_S seen from Non-secure code, the _NS ones from Secure code), where the
    // link describes them. QEMU 10's m-security target description does; on QEMU 7.2 the
    // special-register stub reaches only the state the core is in, so they stay unknown and
    // a chain into the other state ends at its boundary (unwinder.cc, FNC_RETURN).
    StackRegisters other_security_state;
};

// Target memory as the unwinder sees it: a word, or nothing when it cannot be read.
class StackMemory {
public:
    virtual ~StackMemory() = default;
    virtual std::optional<uint32_t> read_word(uint32_t address) = 0;
};

} // namespace mcuprof::core
