// Crossing the special return addresses: an exception return (EXC_RETURN: ARMv7-M ARM
// B1.5.6-B1.5.8; ARMv8-M ARM, DDI 0553, "EXC_RETURN", "Stack frames") into the code the
// exception interrupted, and the boundaries of the ARMv8-M Security Extension (FNC_RETURN,
// the SG's LR with bit 0 clear) into the other security state's caller. Each moves the walk
// onto the frame below, with the stack pointers of its stack and security state.
#include "unwind/frame_recovery.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace mcuprof::core {
namespace {

using reg::sp, reg::lr, reg::pc;

// An EXC_RETURN value (ARMv8-M ARM, DDI 0553, "EXC_RETURN"; ARMv7-M ARM B1.5.8): 0xFF in
// bits 31:24, ones in bits 23:7, bit 1 zero; the other bits say how the exception was taken.
// ARMv7-M's six values are those with S, DCRS and ES set. 0xFFFFFFFF, the value QEMU and many
// cores leave in LR at reset, is none.
struct ExcReturn {
    uint32_t value;
    bool secure_stack() const { return (value & 0x40u) != 0; }        // S: the frame is on a Secure stack
    bool default_stacking() const { return (value & 0x20u) != 0; }    // DCRS: 0 when the additional
                                                                      // state context lies below the frame
    bool basic_frame() const { return (value & 0x10u) != 0; }         // FType: 0 with s0-s15, FPSCR
    bool to_thread() const { return (value & 0x08u) != 0; }           // Mode
    bool on_psp() const { return (value & 0x04u) != 0; }              // SPSEL
    bool secure_exception() const { return (value & 0x01u) != 0; }    // ES: the handler's security state
    // Whether the interrupted code ran in the other security state than the handler.
    bool crosses_security_state() const { return secure_stack() != secure_exception(); }
};

std::optional<ExcReturn> exc_return(uint32_t value)
{
    if ((value & 0xFFFFFF82u) != 0xFFFFFF80u)
        return std::nullopt;
    if ((value & 0x0Cu) == 0x04u)   // Handler mode runs on MSP only: a return to it on PSP is reserved
        return std::nullopt;
    return ExcReturn{value};
}

// FNC_RETURN (ARMv8-M ARM, "FNC_RETURN"): the LR a Non-secure function called by the Secure
// state's BLXNS holds; returning to it pops the Secure caller's return address from the
// Secure stack. Bit 0 is the SFTC bit of the Floating-point Extension.
bool is_fnc_return(uint32_t value)
{
    return (value & ~1u) == 0xFEFFFFFEu;
}

// The additional state context (ARMv8-M ARM, "Stack frames"), below the state context when
// EXC_RETURN.DCRS is 0: the integrity signature, a reserved word, r4-r11. The signature is
// 0xFEFA125B, its bit 0 cleared when the frame holds the FP context (FType 0).
constexpr uint32_t additional_state_words = 10;
constexpr uint32_t integrity_signature = 0xFEFA125Au;

// A context switch that saves a task's registers on the task's own stack the way FreeRTOS's
// Cortex-M4F port does (stmdb r0!, {r4-r11, lr}, with vstmdb r0!, {s16-s31} before it when
// the task had an FP context) leaves r0 = `saved_top`, 9 words below the hardware frame at
// PSP, or 9 + 16 words with the FP registers: the EXC_RETURN it saved, when `saved_top` is
// such a save area for this PSP; the area's EXC_RETURN must return to Thread mode on PSP
// (B1.5.8) with bit 4 matching the area's size.
std::optional<ExcReturn> save_area_exc_return(uint32_t saved_top, uint32_t psp, StackMemory& memory)
{
    constexpr uint32_t core_words = 9 * 4, fp_words = 16 * 4;
    if (saved_top % 4 != 0 || saved_top >= psp)
        return std::nullopt;
    const uint32_t gap = psp - saved_top;
    if (gap != core_words && gap != core_words + fp_words)
        return std::nullopt;
    const std::optional<uint32_t> word = memory.read_word(saved_top + 8 * 4);
    const std::optional<ExcReturn> saved = word ? exc_return(*word) : std::nullopt;
    if (!saved || !saved->to_thread() || !saved->on_psp() || saved->crosses_security_state())
        return std::nullopt;
    return saved->basic_frame() == (gap == core_words) ? saved : std::nullopt;
}

// The stack pointer of the stack EXC_RETURN's frame is on: SPSEL names the stack; S the
// security state, the handler's own (ES) or the other one's.
const std::optional<uint32_t>* frame_stack(WalkState& w, ExcReturn exc)
{
    StackRegisters& stacks = exc.crosses_security_state() ? w.other : w.stacks;
    return exc.on_psp() ? &stacks.psp : &stacks.msp;
}

// The frame below an exception return: the hardware stacked r0-r3, r12, lr, pc, xPSR (and
// s0-s15, FPSCR when EXC_RETURN.FType is 0) at `frame` (B1.5.6, B1.5.7), above the additional
// state context when EXC_RETURN.DCRS is 0. `strict`: the frame was found by searching, so it
// must look like one: Thumb state, an IPSR that matches the mode EXC_RETURN returns to (0 for
// Thread mode), a PC in the code. Below the stack's limit (MSPLIM, PSPLIM) no frame is.
std::optional<UnwindStop> cross(const UnwindTables& tables, WalkState& w, StackMemory& memory, ExcReturn exc,
                                uint32_t frame, bool strict)
{
    const StackRegisters& stacks = exc.crosses_security_state() ? w.other : w.stacks;
    if (const std::optional<uint32_t>& limit = exc.on_psp() ? stacks.psplim : stacks.msplim; limit && frame < *limit)
        return UnwindStop::bad_frame;
    uint32_t callee_saved[additional_state_words]{};
    if (!exc.default_stacking()) {
        for (uint32_t i = 0; i < additional_state_words; ++i) {
            auto value = memory.read_word(frame + 4 * i);
            if (!value)
                return UnwindStop::unreadable;
            callee_saved[i] = *value;
        }
        if (callee_saved[0] != (integrity_signature | (exc.basic_frame() ? 1u : 0u)))
            return UnwindStop::bad_frame;
        frame += 4 * additional_state_words;
    }
    uint32_t stacked[8];
    for (uint32_t i = 0; i < 8; ++i) {
        auto value = memory.read_word(frame + 4 * i);
        if (!value)
            return UnwindStop::unreadable;
        stacked[i] = *value;
    }
    const uint32_t interrupted_exception = stacked[7] & 0x1FFu;
    if (!tables.in_code(stacked[6] & ~1u) ||
        (strict && ((stacked[7] & (1u << 24)) == 0 || (interrupted_exception == 0) != exc.to_thread())))
        return UnwindStop::bad_frame;
    // The FP context: s0-s15, FPSCR and a reserved word. (A Secure frame with FPCCR.TS set
    // holds s16-s31 too; the unwinder cannot see FPCCR_S and takes TS's reset value, 0.)
    uint32_t size = exc.basic_frame() ? 0x20u : 0x68u;
    if (stacked[7] & (1u << 9))   // xPSR bit 9: the stack was realigned by 4 bytes
        size += 4;
    if (!exc.default_stacking())
        std::copy(callee_saved + 2, callee_saved + additional_state_words, w.r.begin() + 4);
    w.r[0] = stacked[0];
    w.r[1] = stacked[1];
    w.r[2] = stacked[2];
    w.r[3] = stacked[3];
    w.r[12] = stacked[4];
    w.r[lr] = stacked[5];
    w.r[pc] = stacked[6] & ~1u;
    w.r[sp] = frame + size;
    w.xpsr = stacked[7];
    if (exc.crosses_security_state())
        std::swap(w.stacks, w.other);
    w.on_psp = exc.on_psp();
    w.exception = exc.to_thread() ? 0 : interrupted_exception;
    w.handler_frame.reset();
    w.searched_handler_frame = false;
    w.guessed_from.reset();   // the frames so far led to an exception return: none was a guess
    w.leaf = true;            // the interrupted code may not have saved LR yet
    w.callers().push_back(w.r[pc]);   // the interrupted instruction itself, not a call site
    return std::nullopt;
}

// The Non-secure callee of a BLXNS returns to FNC_RETURN: the Secure caller's return address
// and partial xPSR are the two words at the Secure stack pointer of its mode (Handler mode:
// MSP_S; Thread mode: the one CONTROL_S.SPSEL names). Where that is known and readable the
// chain goes on in the Secure caller; otherwise it ends here, whole as seen from the
// Non-secure state, and marked as entered from the Secure state.
std::optional<UnwindStop> enter_secure_caller(const UnwindTables& tables, WalkState& w, StackMemory& memory)
{
    if (w.exception == 0 && !w.other.control)
        return UnwindStop::secure_caller;
    const bool process = w.exception == 0 && (*w.other.control & 0x2u) != 0;
    const std::optional<uint32_t> secure_sp = process ? w.other.psp : w.other.msp;
    if (!secure_sp)
        return UnwindStop::secure_caller;
    const std::optional<uint32_t> return_address = memory.read_word(*secure_sp);
    if (!return_address || !memory.read_word(*secure_sp + 4))
        return UnwindStop::secure_caller;
    if (!tables.in_code(*return_address & ~1u))
        return UnwindStop::bad_frame;
    w.stack_of(w.on_psp) = w.r[sp];
    std::swap(w.stacks, w.other);
    w.stack_of(process) = *secure_sp + 8;
    w.on_psp = process;
    w.r[sp] = *secure_sp + 8;
    w.r[pc] = *return_address & ~1u;
    w.leaf = false;
    w.guessed_from.reset();   // FNC_RETURN is no stale LR: no call leaves it there
    w.callers().push_back(w.r[pc] - 2);   // inside the BLXNS
    return std::nullopt;
}

// Crosses with a saved EXC_RETURN at `frame`, keeping the callers up to the handler's.
bool cross_saved(const UnwindTables& tables, WalkState& w, StackMemory& memory, const HandlerFrame& at,
                 ExcReturn exc, uint32_t frame)
{
    const std::vector<uint32_t> before = w.callers();
    w.callers().resize(at.callers);
    if (!cross(tables, w, memory, exc, frame, true))
        return true;
    w.callers() = before;   // (cross() changes nothing else when the frame does not check out)
    return false;
}

} // namespace

std::optional<std::optional<UnwindStop>> cross_special_return(const UnwindTables& tables, WalkState& w,
                                                               StackMemory& memory, uint32_t return_address)
{
    if (const std::optional<ExcReturn> exc = exc_return(return_address)) {
        // The frame below is the one the exception interrupted, on the stack EXC_RETURN names.
        w.stack_of(w.on_psp) = w.r[sp];
        const std::optional<uint32_t>* frame = frame_stack(w, *exc);
        if (*frame)
            return std::make_optional<std::optional<UnwindStop>>(cross(tables, w, memory, *exc, **frame, false));
        // A Non-secure handler that interrupted Secure code, whose stack Non-secure code
        // cannot know: seen from the Non-secure state, the chain is whole.
        if (exc->crosses_security_state() && exc->secure_stack())
            return UnwindStop::secure_caller;
        return UnwindStop::psp_unknown;
    }
    if (is_fnc_return(return_address))
        return std::make_optional<std::optional<UnwindStop>>(enter_secure_caller(tables, w, memory));
    return std::nullopt;
}

// A Secure function entered from the Non-secure state through an SG, which cleared bit 0 of
// LR (ARMv8-M ARM, "SG"): it returns by BXNS to that address, the Non-secure caller, whose
// frames are on the Non-secure stack of its mode (Handler mode: MSP_NS; Thread mode: the one
// CONTROL_NS.SPSEL names). Unknown (the link reads them then), the chain stops, marked.
std::optional<UnwindStop> enter_nonsecure_caller(WalkState& w, uint32_t return_address)
{
    const bool process = w.exception == 0 && w.other.control && (*w.other.control & 0x2u) != 0;
    const std::optional<uint32_t> nonsecure_sp = process ? w.other.psp : w.other.msp;
    if (!nonsecure_sp || (w.exception == 0 && !w.other.control))
        return UnwindStop::nonsecure_unknown;
    w.stack_of(w.on_psp) = w.r[sp];
    std::swap(w.stacks, w.other);
    w.on_psp = process;
    w.r[sp] = *nonsecure_sp;
    w.r[pc] = return_address;
    w.leaf = false;
    w.guessed_from.reset();   // no stale LR has bit 0 clear: only the SG leaves it so
    w.callers().push_back(w.r[pc] - 2);   // inside the call of the entry
    return std::nullopt;
}

// A handler whose own frames cannot be undone (a naked context switch in assembly, whose
// call-frame information says nothing is saved although it saved EXC_RETURN and called
// a function) is crossed through the EXC_RETURN it saved, found from the words at and
// above the handler's frame on the main stack (64 at most), the first that checks out:
// - the word is an EXC_RETURN value (minirtos, FreeRTOS's ports without an FPU push
//   {r3, lr}): a return to the thread stack finds the frame at PSP, a return to the main
//   stack right above the saved word (the handler's first push);
// - the word is the task's saved stack top (FreeRTOS's Cortex-M4F port: stmdb r0!,
//   {r4-r11, lr} on the task's stack, only r0 and r3 pushed on the main stack): PSP, which
//   the handler has not changed yet, lies 36 bytes above it, 100 when the 16 words of
//   s16-s31 sit between (EXC_RETURN bit 4 clear), and the word at +32 is an EXC_RETURN
//   into Thread mode on PSP whose bit 4 says just that (save_area_exc_return).
// Only returns within the handler's security state are looked for. The frame named must
// check out too (cross(), strict). The frames found inside the handler's function before the
// chain went wrong are dropped: they came from LR values that were no return addresses.
// Returns nothing once crossed; psp_unknown when a frame on the thread stack is in question
// (or nothing was found at all: the task's save area is found from PSP) and PSP is not known;
// otherwise the reason the chain had stopped for.
std::optional<UnwindStop> search_handler_frame(const UnwindTables& tables, WalkState& w, StackMemory& memory,
                                               UnwindStop stopped)
{
    w.searched_handler_frame = true;
    const HandlerFrame at = *w.handler_frame;
    const std::optional<uint32_t> psp = w.stacks.psp;
    for (uint32_t offset = 0; offset < 4 * 64; offset += 4) {
        const uint32_t address = at.sp + offset;
        if (tables.initial_sp && address + 4 > *tables.initial_sp)
            break;
        const std::optional<uint32_t> word = memory.read_word(address);
        if (!word)
            break;
        if (const std::optional<ExcReturn> exc = exc_return(*word); exc && !exc->crosses_security_state()) {
            if (exc->on_psp() && !psp)
                return UnwindStop::psp_unknown;
            if (cross_saved(tables, w, memory, at, *exc, exc->on_psp() ? *psp : address + 4))
                return std::nullopt;
        } else if (psp) {
            if (const std::optional<ExcReturn> saved = save_area_exc_return(*word, *psp, memory))
                if (cross_saved(tables, w, memory, at, *saved, *psp))
                    return std::nullopt;
        }
    }
    if (!psp)
        return UnwindStop::psp_unknown;
    return stopped;
}

} // namespace mcuprof::core
