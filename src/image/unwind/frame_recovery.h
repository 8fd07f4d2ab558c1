#pragma once
// The frame recoverers: each undoes the frame of the function the walk stands in one way, as
// GDB's frame unwinders do, and all give one form, the caller's registers (CallerFrame). The
// walk (unwinder.cc) asks them in order; the first that answers decides. Besides them, the
// crossing of an exception return or a Secure/Non-secure call boundary (exception_frames.cc)
// takes the walk from the frame's return address into the interrupted or calling code.
// Private to src/image/unwind.
#include <array>
#include <cstdint>
#include <optional>
#include <variant>

#include "mcuprof/cortex_m.h"
#include "mcuprof/image/unwind/unwinder.h"
#include "unwind/unwind_tables.h"

namespace mcuprof::core {

namespace reg = cortex_m::core_reg;

// The innermost frame of the running handler's own function (from its vector): where its
// EXC_RETURN is looked for when its frames cannot be undone (search_handler_frame).
struct HandlerFrame {
    uint32_t sp;
    size_t callers;
};

// One unwind under way: the registers of the frame being undone, the stack pointers as far as
// they are known, and the callers found so far.
struct WalkState {
    UnwindResult result;
    std::array<uint32_t, 16> r{};
    // Handler mode (IPSR, xPSR bits 8:0, not 0; ARMv7-M ARM B1.4.2): the chain is complete
    // only once it has crossed the exception return into the interrupted code. A handler's
    // frame that looks like a root (LR "still" holding a return address that is not an
    // EXC_RETURN, a frame without LR saved) is a chain that went wrong, not an end.
    uint32_t exception = 0;   // the exception being handled, 0 in Thread mode
    bool on_psp = false;      // in Handler mode the core runs on MSP; in Thread mode on either
    uint32_t xpsr = 0;        // of the innermost frame: the halt's, or the one an exception frame stacked
    StackRegisters stacks;    // of the security state the frame being undone runs in
    StackRegisters other;     // of the other state (ARMv8-M Security Extension), rarely known
    bool leaf = true;         // LR still holds this frame's return address when it saved nothing
    std::optional<HandlerFrame> handler_frame;
    bool searched_handler_frame = false;
    // The first caller taken from LR in a function without call-frame information: a guess
    // that only a chain which goes on to its end confirms.
    std::optional<size_t> guessed_from;

    std::vector<uint32_t>& callers() { return result.stack.callers; }
    std::optional<uint32_t>& stack_of(bool process) { return process ? stacks.psp : stacks.msp; }
    // Where the frame being undone stands: its call site once it has called.
    uint32_t frame_address() const { return leaf ? r[reg::pc] : r[reg::pc] - 2; }
};

// A frame undone: the caller's registers (PC as the frame left it) and the address the frame
// returns to. `guessed`: the return address is LR's, which the frame may have overwritten
// since; only a chain that goes on to its end confirms it.
struct CallerFrame {
    std::array<uint32_t, 16> r;
    uint32_t return_address;
    bool guessed = false;
};
using Undone = std::variant<CallerFrame, UnwindStop>;   // the caller, or why the chain ends here

// A way to undo a frame: the caller, a stop, or nothing when it does not apply (the next is asked).
using Recoverer = std::optional<Undone> (*)(const UnwindTables&, const WalkState&, StackMemory&);

// Halted in an epilogue, the code itself says what the frame holds (recover_epilogue.cc).
std::optional<Undone> recover_by_epilogue(const UnwindTables& tables, const WalkState& frame, StackMemory& memory);
// The DWARF call-frame rows of the function (recover_call_frames.cc).
std::optional<Undone> recover_by_call_frames(const UnwindTables& tables, const WalkState& frame, StackMemory& memory);
// The function's .ARM.exidx entry (recover_exidx.cc).
std::optional<Undone> recover_by_exidx(const UnwindTables& tables, const WalkState& frame, StackMemory& memory);
// The function's prologue, read from its first instruction (recover_prologue.cc).
std::optional<Undone> recover_by_prologue(const UnwindTables& tables, const WalkState& frame, StackMemory& memory);
// LR, while the frame is the innermost one (recover_from_lr.cc).
std::optional<Undone> recover_from_lr(const UnwindTables& tables, const WalkState& frame, StackMemory& memory);

// EPSR's IT and ICI bits (xPSR bits 26:25 and 15:10; ARMv7-M ARM B1.4.2): not zero inside an
// IT block or in an interrupted LDM/STM/POP, where the code from PC on is not simply run.
constexpr bool in_it_block_or_ldm(uint32_t xpsr)
{
    return (xpsr & 0x0600FC00u) != 0;
}

// The caller's SP (the CFA) lies above the frame's SP (the stack grows down), and not far:
// 64 KiB bounds any frame the unwinder takes for real.
constexpr bool cfa_plausible(uint32_t cfa, uint32_t sp)
{
    return cfa >= sp && cfa - sp <= 0x10000u;
}

// exception_frames.cc. When `return_address` is an EXC_RETURN or FNC_RETURN value: the walk
// crossed into the code it returns to (an empty answer), or the stop it met; nothing for any
// other return address.
std::optional<std::optional<UnwindStop>> cross_special_return(const UnwindTables& tables, WalkState& walk,
                                                               StackMemory& memory, uint32_t return_address);
// A return with bit 0 clear: BXNS into the Non-secure caller of a Secure entry function.
std::optional<UnwindStop> enter_nonsecure_caller(WalkState& walk, uint32_t return_address);
// The handler's saved EXC_RETURN, searched for on the main stack when its frames cannot be undone.
std::optional<UnwindStop> search_handler_frame(const UnwindTables& tables, WalkState& walk, StackMemory& memory,
                                               UnwindStop stopped);

} // namespace mcuprof::core
