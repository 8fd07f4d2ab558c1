#include "mcuprof/image/unwind/unwinder.h"

#include "mcuprof/image/unwind/call_frames.h"
#include "mcuprof/image/unwind/exidx.h"
#include "mcuprof/image/unwind/prologue.h"
#include "mcuprof/image/unwind/thumb_code.h"

#include <algorithm>
#include <utility>
#include <variant>
#include <vector>

#include "mcuprof/image/error.h"
#include "mcuprof/image/firmware.h"
#include "mcuprof/image/symbols.h"

namespace mcuprof::core {
namespace {

constexpr uint32_t sp = 13, lr = 14, pc = 15;

// One row of the call-frame table with what the unwinder needs besides: whether the
// function has put its return address anywhere by then.
struct UnwindRow : FrameRow {
    bool lr_saved = false;
};

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

// EPSR's IT and ICI bits (xPSR bits 26:25 and 15:10; ARMv7-M ARM B1.4.2): not zero inside an
// IT block or in an interrupted LDM/STM/POP, where the code from PC on is not simply run.
bool in_it_block_or_ldm(uint32_t xpsr)
{
    return (xpsr & 0x0600FC00u) != 0;
}

// What the unwinder knows of the image: call-frame rows, the vector table, the code.
struct UnwindTables {
    // One image's exception table, with the code it covers: an entry extends to the next, so
    // the last entry of one image's table would take in the code of an image above it.
    struct ImageExidx {
        std::vector<std::pair<uint32_t, uint64_t>> code;   // [start, end) of its executable sections
        ExidxTable table;
    };

    std::vector<UnwindRow> rows;   // by start address
    std::optional<uint32_t> initial_sp;
    // Each image's vector table (B1.5.3), the image given first first: the one VTOR points at is
    // the one the handlers came from, whichever it is (a bootloader moves VTOR to its application's).
    std::vector<std::vector<uint32_t>> vector_tables;
    SymbolTable code;                                   // the functions and executable sections
    std::vector<uint32_t> function_starts;              // of every FDE and exception-table entry, sorted
    std::vector<uint32_t> branch_targets;               // of every direct call and branch, sorted
    std::vector<ImageExidx> exidx;                      // for code without .debug_frame
    std::vector<uint32_t> entries;                      // each image's ELF entry point

    // The exception-table entry of code no DWARF row covers, when it can be unwound.
    const ExidxEntry* exidx_entry(uint32_t address) const
    {
        for (const ImageExidx& image : exidx)
            for (const auto& [start, end] : image.code)
                if (address >= start && address < end) {
                    const ExidxEntry* entry = image.table.find(address);
                    return entry != nullptr && !entry->cannot_unwind ? entry : nullptr;
                }
        return nullptr;
    }

    // Whether `address` lies in the handler of exception `number`: from its vector to the
    // next function's start. Exception 1 is Reset.
    bool in_handler_function(uint32_t number, uint32_t address) const
    {
        for (const std::vector<uint32_t>& vectors : vector_tables)
            if (number != 0 && number < vectors.size() && (vectors[number] & 1u) != 0 &&   // a Thumb address
                in_function_at(vectors[number] & ~1u, address))
                return true;
        return false;
    }

    // Whether `address` lies in the function that starts at `start`: to its end by the symbol
    // table when a symbol starts there (an assembly handler without call-frame information
    // has one), else to the next function the call-frame tables know.
    bool in_function_at(uint32_t start, uint32_t address) const
    {
        if (address < start || !in_code(address))
            return false;
        if (const Function* function = code.find(start); function != nullptr && function->start == start)
            return address - start < function->size;
        auto next = std::upper_bound(function_starts.begin(), function_starts.end(), start);
        return next == function_starts.end() || address < *next;
    }

    // The reset handler (the vector table's Reset entry, B1.5.3) or the function at the ELF's
    // entry point: where every thread-mode chain of a bare-metal image begins. Reached, the
    // chain is whole, with or without call-frame information there (a vendor's assembly
    // startup has none).
    bool in_reset_function(uint32_t address) const
    {
        return in_handler_function(1, address) ||
               std::any_of(entries.begin(), entries.end(), [&](uint32_t entry) { return in_function_at(entry, address); });
    }

    bool is_function_start(uint32_t address) const
    {
        return std::binary_search(function_starts.begin(), function_starts.end(), address);
    }

    bool in_code(uint32_t address) const
    {
        return code.code_sections().empty() || code.in_code(address);   // nothing known: take any address
    }

    // Whether the function holding `address` (by the symbol table, else by the call-frame
    // tables) is entered only through its address (a thread's entry, started by its RTOS): no
    // BL or branch in the image goes to its start. False when no function is known to hold it.
    bool entered_only_by_address(uint32_t address) const
    {
        uint32_t start;
        if (const Function* function = code.find(address)) {
            start = function->start;
        } else {
            auto next = std::upper_bound(function_starts.begin(), function_starts.end(), address);
            if (next == function_starts.begin())
                return false;
            start = *std::prev(next);
        }
        return !std::binary_search(branch_targets.begin(), branch_targets.end(), start);
    }

    const UnwindRow* find(uint32_t address) const
    {
        auto it = std::upper_bound(rows.begin(), rows.end(), address,
                                   [](uint32_t a, const UnwindRow& r) { return a < r.start; });
        if (it == rows.begin())
            return nullptr;
        --it;
        return address < it->end ? &*it : nullptr;
    }
};

// One unwind: the registers of the frame being undone, the stack pointers as far as they
// are known, and the callers found so far.
class ChainWalk {
public:
    ChainWalk(const UnwindTables& tables, const CoreRegisters& registers, StackMemory& memory, size_t max_depth);
    UnwindResult run() &&;

private:
    // The innermost frame of the running handler's own function (from its vector): where its
    // EXC_RETURN is looked for when its frames cannot be undone (search_handler_frame).
    struct HandlerFrame {
        uint32_t sp;
        size_t callers;
    };
    using Undone = std::variant<uint32_t, UnwindStop>;   // a frame's return address, or why not

    UnwindStop walk();
    Undone undo_frame();
    Undone undo_with_rows(const UnwindRow& row);
    Undone undo_with_exidx(const ExidxEntry& entry);
    Undone undo_with_prologue(const PrologueFrame& prologue);
    std::optional<UnwindStop> return_to(uint32_t return_address, uint32_t frame_address);
    std::optional<uint32_t>& stack_of(bool process) { return process ? stacks_.psp : stacks_.msp; }
    const std::optional<uint32_t>* frame_stack(ExcReturn exc);
    std::optional<UnwindStop> cross(ExcReturn exc, uint32_t frame, bool strict);
    std::optional<UnwindStop> enter_secure_caller();
    std::optional<UnwindStop> enter_nonsecure_caller(uint32_t return_address);
    std::optional<UnwindStop> search_handler_frame(UnwindStop stopped);
    bool cross_saved(const HandlerFrame& at, ExcReturn exc, uint32_t frame);

    const UnwindTables& tables_;
    StackMemory& memory_;
    const size_t max_depth_;
    UnwindResult result_;
    std::vector<uint32_t>& callers_ = result_.stack.callers;
    std::array<uint32_t, 16> r_;
    // Handler mode (IPSR, xPSR bits 8:0, not 0; ARMv7-M ARM B1.4.2): the chain is complete
    // only once it has crossed the exception return into the interrupted code. A handler's
    // frame that looks like a root (LR "still" holding a return address that is not an
    // EXC_RETURN, a frame without LR saved) is a chain that went wrong, not an end.
    uint32_t exception_;   // the exception being handled, 0 in Thread mode
    bool on_psp_;          // in Handler mode the core runs on MSP; in Thread mode on either
    uint32_t xpsr_;        // of the innermost frame: the halt's, or the one an exception frame stacked
    StackRegisters stacks_;   // of the security state the frame being undone runs in
    StackRegisters other_;    // of the other state (ARMv8-M Security Extension), rarely known
    bool leaf_ = true;        // LR still holds this frame's return address when it saved nothing
    std::optional<HandlerFrame> handler_frame_;
    bool searched_handler_frame_ = false;
    // The first caller taken from LR in a function without call-frame information: a guess
    // that only a chain which goes on to its end confirms.
    std::optional<size_t> guessed_from_;
};

ChainWalk::ChainWalk(const UnwindTables& tables, const CoreRegisters& registers, StackMemory& memory,
                     size_t max_depth)
    : tables_(tables), memory_(memory), max_depth_(max_depth), r_(registers.r),
      exception_(registers.xpsr & 0x1FFu),
      on_psp_(exception_ == 0 && registers.psp && registers.psp == registers.r[sp]), xpsr_(registers.xpsr),
      stacks_{registers.msp, registers.psp, registers.msplim, registers.psplim, std::nullopt},
      other_(registers.other_security_state)
{
    r_[pc] &= ~1u;
}

UnwindResult ChainWalk::run() &&
{
    // Code no image given describes (a bootloader's, a ROM's): nothing here can say what it
    // saved, nor name its callers.
    if (!tables_.in_code(r_[pc])) {
        result_.stop = result_.stack.stop = UnwindStop::outside_image;
        result_.stack.truncated = true;
        return std::move(result_);
    }
    UnwindStop why = walk();
    while (exception_ != 0 && why != UnwindStop::depth && why != UnwindStop::psp_unknown &&
           why != UnwindStop::secure_caller && why != UnwindStop::nonsecure_unknown && handler_frame_ &&
           !searched_handler_frame_) {
        if (const std::optional<UnwindStop> searched = search_handler_frame(why)) {
            why = *searched;
            break;
        }
        why = walk();
    }
    if (why == UnwindStop::root && exception_ != 0)
        why = UnwindStop::handler_only;
    // A chain that went wrong keeps only the frames found on the stack: from a guessed caller
    // on, every frame may be another function's.
    if (!is_complete(why) && why != UnwindStop::depth && guessed_from_)
        callers_.resize(*guessed_from_);
    result_.stop = why;
    result_.stack.truncated = !is_complete(why);
    result_.stack.stop = why;
    return std::move(result_);
}

// One chain from the current registers; how it ended.
UnwindStop ChainWalk::walk()
{
    while (callers_.size() < max_depth_) {
        if (exception_ != 0 && !handler_frame_ && tables_.in_handler_function(exception_, r_[pc]))
            handler_frame_ = HandlerFrame{r_[sp], callers_.size()};
        // Where the frame being undone stands (its call site once it has called): undoing it by
        // the exception tables may already have moved PC.
        const uint32_t frame_address = leaf_ ? r_[pc] : r_[pc] - 2;
        const Undone undone = undo_frame();
        if (const UnwindStop* stop = std::get_if<UnwindStop>(&undone))
            return *stop;
        if (const std::optional<UnwindStop> stop = return_to(std::get<uint32_t>(undone), frame_address))
            return *stop;
    }
    return UnwindStop::depth;
}

// Undoes the frame of the function at r_[pc]: r_ becomes its caller's registers but PC.
ChainWalk::Undone ChainWalk::undo_frame()
{
    const uint32_t address = leaf_ ? r_[pc] : r_[pc] - 2;
    // Halted in an epilogue, the code itself says what the frame holds: call-frame information
    // may stop describing the frame there (libgcc's ARMv6-M __aeabi_fmul after its first pop).
    if (leaf_ && !in_it_block_or_ldm(xpsr_)) {
        switch (run_epilogue(tables_.code, r_, memory_)) {
        case EpilogueResult::returned: return r_[pc];
        case EpilogueResult::unreadable: return UnwindStop::unreadable;
        case EpilogueResult::not_epilogue: break;
        }
    }
    if (const UnwindRow* row = tables_.find(address))
        return undo_with_rows(*row);
    // No DWARF row, but an exception-table entry (an image or a library built without -g): its
    // instructions undo the frame as the body of the function holds it. (At the first
    // instruction nothing is saved yet: the leaf case below.)
    const ExidxEntry* entry = tables_.exidx_entry(address);
    if (entry != nullptr && !(leaf_ && r_[pc] == entry->start))
        return undo_with_exidx(*entry);
    // Thread mode's outermost function, whatever it saved: a reset handler never returns.
    if (exception_ == 0 && tables_.in_reset_function(address))
        return UnwindStop::root;
    // Neither table describes the function (a vendor's assembly, a library built without
    // unwind tables): its prologue, read from its first instruction, says what it saved.
    if (entry == nullptr)
        if (const Function* function = tables_.code.find(address))
            if (const std::optional<PrologueFrame> prologue = read_prologue(tables_.code, function->start, function->start + function->size, r_[pc]))
                return undo_with_prologue(*prologue);
    if (!leaf_)
        return UnwindStop::no_frame_info;
    // No call-frame information and no function known to hold the PC: while this is the
    // innermost frame and it has called nothing, LR is its return address. If it has, LR is stale.
    if (entry == nullptr && !guessed_from_)
        guessed_from_ = callers_.size();
    return r_[lr];
}

ChainWalk::Undone ChainWalk::undo_with_prologue(const PrologueFrame& prologue)
{
    const uint32_t cfa = prologue.cfa_above_r7 ? r_[7] + *prologue.cfa_above_r7 : r_[sp] + prologue.size;
    if (cfa < r_[sp] || cfa - r_[sp] > 0x10000u)
        return UnwindStop::bad_frame;
    std::array<uint32_t, 16> caller = r_;
    for (uint32_t reg = 0; reg < 16; ++reg) {
        if (!prologue.saved_below_cfa[reg])
            continue;
        const std::optional<uint32_t> value = memory_.read_word(cfa - *prologue.saved_below_cfa[reg]);
        if (!value)
            return UnwindStop::unreadable;
        caller[reg] = *value;
    }
    // A function that called something holds its return address where its prologue put it:
    // on the stack, or in a callee-saved register the calls leave alone. In LR only, it is
    // the leaf's.
    if (!prologue.return_saved() && prologue.return_register == lr) {
        if (!leaf_)
            return UnwindStop::no_frame_info;
        // The halted frame saved nothing, but may have called since: LR is a guess that only a
        // chain which goes on to its end confirms.
        if (prologue.lr_written && !guessed_from_)
            guessed_from_ = callers_.size();
    }
    const uint32_t return_address = prologue.return_saved() ? caller[lr] : r_[prologue.return_register];
    caller[sp] = cfa;
    caller[lr] = return_address;
    r_ = caller;
    return return_address;
}

ChainWalk::Undone ChainWalk::undo_with_rows(const UnwindRow& row)
{
    // CFA: the caller's SP, from the rule of this row (DW_CFA_def_cfa*).
    if (!row.cfa_known)
        return UnwindStop::no_frame_info;
    // The caller's SP lies above this frame's (the stack grows down), strictly so for a frame
    // that made a call: it pushed its return address at least.
    const uint32_t cfa = r_[row.cfa_register] + uint32_t(row.cfa_offset);
    if (cfa < r_[sp] || (!leaf_ && cfa == r_[sp]) || cfa - r_[sp] > 0x10000u)
        return UnwindStop::bad_frame;
    std::array<uint32_t, 16> caller = r_;
    for (uint32_t reg = 0; reg < 16; ++reg) {
        const RegisterRule& rule = row.rules[reg];
        switch (rule.kind) {
        case RegisterRule::Kind::unspecified:
        case RegisterRule::Kind::same_value:
        case RegisterRule::Kind::undefined:
            break;
        case RegisterRule::Kind::at_cfa: {
            auto value = memory_.read_word(cfa + uint32_t(rule.offset));
            if (!value)
                return UnwindStop::unreadable;
            caller[reg] = *value;
            break;
        }
        case RegisterRule::Kind::is_cfa:
            caller[reg] = cfa + uint32_t(rule.offset);
            break;
        case RegisterRule::Kind::in_register:
            if (rule.register_ >= 16)
                return UnwindStop::no_frame_info;
            caller[reg] = r_[rule.register_];
            break;
        case RegisterRule::Kind::expression:
            return UnwindStop::no_frame_info;
        }
    }
    // A function that has not saved LR yet returns through LR itself; one that never saves
    // it and is not the leaf cannot return at all: it is the root (a reset handler, a task
    // entry, a noreturn main).
    if (row.rules[lr].kind == RegisterRule::Kind::undefined || (!row.lr_saved && !leaf_))
        return UnwindStop::root;
    caller[sp] = cfa;
    r_ = caller;
    return caller[lr];
}

ChainWalk::Undone ChainWalk::undo_with_exidx(const ExidxEntry& entry)
{
    std::array<uint32_t, 16> caller = r_;
    bool restored_return = false;
    switch (run_exidx(entry, caller, memory_, restored_return)) {
    case ExidxResult::unwound: break;
    case ExidxResult::unreadable: return UnwindStop::unreadable;
    case ExidxResult::refused:
    case ExidxResult::malformed: return UnwindStop::no_frame_info;
    }
    const uint32_t cfa = caller[sp];
    if (cfa < r_[sp] || cfa - r_[sp] > 0x10000u || (!leaf_ && restored_return && cfa == r_[sp]))
        return UnwindStop::bad_frame;
    // As with DWARF: a caller that never saved its return address is the root.
    if (!leaf_ && !restored_return)
        return UnwindStop::root;
    r_ = caller;
    return caller[pc];
}

// Goes on into the code a frame returns to; nothing, or how the chain ends there.
std::optional<UnwindStop> ChainWalk::return_to(uint32_t return_address, uint32_t frame_address)
{
    if (const std::optional<ExcReturn> exc = exc_return(return_address)) {
        // The frame below is the one the exception interrupted, on the stack EXC_RETURN names.
        stack_of(on_psp_) = r_[sp];
        const std::optional<uint32_t>* frame = frame_stack(*exc);
        if (*frame)
            return cross(*exc, **frame, false);
        // A Non-secure handler that interrupted Secure code, whose stack Non-secure code
        // cannot know: seen from the Non-secure state, the chain is whole.
        if (exc->crosses_security_state() && exc->secure_stack())
            return UnwindStop::secure_caller;
        return UnwindStop::psp_unknown;
    }
    if (is_fnc_return(return_address))
        return enter_secure_caller();
    // The reset value of LR ends the chain of the reset handler, and 0 or 0xFFFFFFFF the
    // first frame of a thread, which its RTOS built with such an LR (Zephyr's z_thread_entry):
    // Thread mode, in a function no instruction calls or branches to, entered by its address
    // only. That needs no stack pointer, which QEMU 7.2's gdbstub does not give in Thread mode.
    // Anywhere else a saved 0 or 0xFFFFFFFF is another frame's stale word, read where the
    // call-frame information stopped describing the frame: the chain is cut there, and says so.
    if (return_address == 0 || return_address == 0xFFFFFFFFu) {
        if (tables_.in_handler_function(1, frame_address))
            return UnwindStop::root;
        const bool thread_entry = exception_ == 0 && tables_.entered_only_by_address(frame_address);
        return thread_entry ? UnwindStop::root : UnwindStop::null_return;
    }
    // No call returns to the first instruction of a function: that return address was
    // planted in a thread's first frame (an RTOS's task-exit hook) and the thread's entry
    // function is the root.
    if (tables_.is_function_start(return_address & ~1u))
        return UnwindStop::root;
    // A return outside the code is a corrupted frame. Bit 0 clear, which would be a return into
    // ARM state, cannot happen on M-profile but for ARMv8-M's return to the Non-secure state.
    if (!tables_.in_code(return_address & ~1u))
        return UnwindStop::bad_frame;
    if ((return_address & 1u) == 0)
        return enter_nonsecure_caller(return_address);
    r_[pc] = return_address & ~1u;
    leaf_ = false;
    callers_.push_back(r_[pc] - 2);   // inside the call instruction, for line lookup
    return std::nullopt;
}

// The stack pointer of the stack EXC_RETURN's frame is on: SPSEL names the stack; S the
// security state, the handler's own (ES) or the other one's.
const std::optional<uint32_t>* ChainWalk::frame_stack(ExcReturn exc)
{
    StackRegisters& stacks = exc.crosses_security_state() ? other_ : stacks_;
    return exc.on_psp() ? &stacks.psp : &stacks.msp;
}

// The frame below an exception return: the hardware stacked r0-r3, r12, lr, pc, xPSR (and
// s0-s15, FPSCR when EXC_RETURN.FType is 0) at `frame` (B1.5.6, B1.5.7), above the additional
// state context when EXC_RETURN.DCRS is 0. `strict`: the frame was found by searching, so it
// must look like one: Thumb state, an IPSR that matches the mode EXC_RETURN returns to (0 for
// Thread mode), a PC in the code. Below the stack's limit (MSPLIM, PSPLIM) no frame is.
std::optional<UnwindStop> ChainWalk::cross(ExcReturn exc, uint32_t frame, bool strict)
{
    const StackRegisters& stacks = exc.crosses_security_state() ? other_ : stacks_;
    if (const std::optional<uint32_t>& limit = exc.on_psp() ? stacks.psplim : stacks.msplim; limit && frame < *limit)
        return UnwindStop::bad_frame;
    uint32_t callee_saved[additional_state_words]{};
    if (!exc.default_stacking()) {
        for (uint32_t i = 0; i < additional_state_words; ++i) {
            auto value = memory_.read_word(frame + 4 * i);
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
        auto value = memory_.read_word(frame + 4 * i);
        if (!value)
            return UnwindStop::unreadable;
        stacked[i] = *value;
    }
    const uint32_t interrupted_exception = stacked[7] & 0x1FFu;
    if (!tables_.in_code(stacked[6] & ~1u) ||
        (strict && ((stacked[7] & (1u << 24)) == 0 || (interrupted_exception == 0) != exc.to_thread())))
        return UnwindStop::bad_frame;
    // The FP context: s0-s15, FPSCR and a reserved word. (A Secure frame with FPCCR.TS set
    // holds s16-s31 too; the unwinder cannot see FPCCR_S and takes TS's reset value, 0.)
    uint32_t size = exc.basic_frame() ? 0x20u : 0x68u;
    if (stacked[7] & (1u << 9))   // xPSR bit 9: the stack was realigned by 4 bytes
        size += 4;
    if (!exc.default_stacking())
        std::copy(callee_saved + 2, callee_saved + additional_state_words, r_.begin() + 4);
    r_[0] = stacked[0];
    r_[1] = stacked[1];
    r_[2] = stacked[2];
    r_[3] = stacked[3];
    r_[12] = stacked[4];
    r_[lr] = stacked[5];
    r_[pc] = stacked[6] & ~1u;
    r_[sp] = frame + size;
    xpsr_ = stacked[7];
    if (exc.crosses_security_state())
        std::swap(stacks_, other_);
    on_psp_ = exc.on_psp();
    exception_ = exc.to_thread() ? 0 : interrupted_exception;
    handler_frame_.reset();
    searched_handler_frame_ = false;
    guessed_from_.reset();   // the frames so far led to an exception return: none was a guess
    leaf_ = true;            // the interrupted code may not have saved LR yet
    callers_.push_back(r_[pc]);   // the interrupted instruction itself, not a call site
    return std::nullopt;
}

// The Non-secure callee of a BLXNS returns to FNC_RETURN: the Secure caller's return address
// and partial xPSR are the two words at the Secure stack pointer of its mode (Handler mode:
// MSP_S; Thread mode: the one CONTROL_S.SPSEL names). Where that is known and readable the
// chain goes on in the Secure caller; otherwise it ends here, whole as seen from the
// Non-secure state, and marked as entered from the Secure state.
std::optional<UnwindStop> ChainWalk::enter_secure_caller()
{
    if (exception_ == 0 && !other_.control)
        return UnwindStop::secure_caller;
    const bool process = exception_ == 0 && (*other_.control & 0x2u) != 0;
    const std::optional<uint32_t> secure_sp = process ? other_.psp : other_.msp;
    if (!secure_sp)
        return UnwindStop::secure_caller;
    const std::optional<uint32_t> return_address = memory_.read_word(*secure_sp);
    if (!return_address || !memory_.read_word(*secure_sp + 4))
        return UnwindStop::secure_caller;
    if (!tables_.in_code(*return_address & ~1u))
        return UnwindStop::bad_frame;
    stack_of(on_psp_) = r_[sp];
    std::swap(stacks_, other_);
    stack_of(process) = *secure_sp + 8;
    on_psp_ = process;
    r_[sp] = *secure_sp + 8;
    r_[pc] = *return_address & ~1u;
    leaf_ = false;
    guessed_from_.reset();   // FNC_RETURN is no stale LR: no call leaves it there
    callers_.push_back(r_[pc] - 2);   // inside the BLXNS
    return std::nullopt;
}

// A Secure function entered from the Non-secure state through an SG, which cleared bit 0 of
// LR (ARMv8-M ARM, "SG"): it returns by BXNS to that address, the Non-secure caller, whose
// frames are on the Non-secure stack of its mode (Handler mode: MSP_NS; Thread mode: the one
// CONTROL_NS.SPSEL names). Unknown (the link reads them then), the chain stops, marked.
std::optional<UnwindStop> ChainWalk::enter_nonsecure_caller(uint32_t return_address)
{
    const bool process = exception_ == 0 && other_.control && (*other_.control & 0x2u) != 0;
    const std::optional<uint32_t> nonsecure_sp = process ? other_.psp : other_.msp;
    if (!nonsecure_sp || (exception_ == 0 && !other_.control))
        return UnwindStop::nonsecure_unknown;
    stack_of(on_psp_) = r_[sp];
    std::swap(stacks_, other_);
    on_psp_ = process;
    r_[sp] = *nonsecure_sp;
    r_[pc] = return_address;
    leaf_ = false;
    guessed_from_.reset();   // no stale LR has bit 0 clear: only the SG leaves it so
    callers_.push_back(r_[pc] - 2);   // inside the call of the entry
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
std::optional<UnwindStop> ChainWalk::search_handler_frame(UnwindStop stopped)
{
    searched_handler_frame_ = true;
    const HandlerFrame at = *handler_frame_;
    const std::optional<uint32_t> psp = stacks_.psp;
    for (uint32_t offset = 0; offset < 4 * 64; offset += 4) {
        const uint32_t address = at.sp + offset;
        if (tables_.initial_sp && address + 4 > *tables_.initial_sp)
            break;
        const std::optional<uint32_t> word = memory_.read_word(address);
        if (!word)
            break;
        if (const std::optional<ExcReturn> exc = exc_return(*word); exc && !exc->crosses_security_state()) {
            if (exc->on_psp() && !psp)
                return UnwindStop::psp_unknown;
            if (cross_saved(at, *exc, exc->on_psp() ? *psp : address + 4))
                return std::nullopt;
        } else if (psp) {
            if (const std::optional<ExcReturn> saved = save_area_exc_return(*word, *psp, memory_))
                if (cross_saved(at, *saved, *psp))
                    return std::nullopt;
        }
    }
    if (!psp)
        return UnwindStop::psp_unknown;
    return stopped;
}

// Crosses with a saved EXC_RETURN at `frame`, keeping the callers up to the handler's.
bool ChainWalk::cross_saved(const HandlerFrame& at, ExcReturn exc, uint32_t frame)
{
    const std::vector<uint32_t> before = callers_;
    callers_.resize(at.callers);
    if (!cross(exc, frame, true))
        return true;
    callers_ = before;   // (cross() changes nothing else when the frame does not check out)
    return false;
}

} // namespace

std::string_view describe(UnwindStop stop)
{
    switch (stop) {
    case UnwindStop::root: return "reached the outermost frame";
    case UnwindStop::depth: return "depth limit";
    case UnwindStop::unreadable: return "stack memory could not be read";
    case UnwindStop::no_frame_info: return "a function without call-frame information whose prologue does not show where it saved its return address";
    case UnwindStop::bad_frame: return "an implausible frame (corrupted stack?)";
    case UnwindStop::psp_unknown: return "the thread stack pointer (PSP) is unknown";
    case UnwindStop::handler_only: return "an exception handler's chain that never reached the exception return";
    case UnwindStop::not_recorded: return "reason not recorded";
    case UnwindStop::null_return: return "a saved return address of 0 or 0xFFFFFFFF outside the reset handler (call-frame information cut short?)";
    case UnwindStop::secure_caller: return "entered from the Secure state";
    case UnwindStop::nonsecure_unknown: return "a return to the Non-secure state, whose stack pointers are unknown";
    case UnwindStop::outside_image: return "a PC outside the ELF's code (another image's: give its ELF too)";
    }
    return "?";
}

struct Unwinder::Impl : UnwindTables {};

Unwinder::Unwinder(const Firmware& firmware) : impl_(std::make_unique<Impl>())
{
    impl_->code = firmware.symbols();   // a copy (the image may go away), of every image
    impl_->branch_targets = direct_branch_targets(impl_->code);
    std::vector<const Firmware*> images{&firmware};
    for (const Firmware& image : firmware.more_images())
        images.push_back(&image);
    for (const Firmware* image : images) {
        impl_->vector_tables.push_back(image->vector_table());
        if (const std::optional<uint32_t> entry = image->entry_point())
            impl_->entries.push_back(*entry);
        for (const FrameFunction& function : read_call_frames(*image)) {
            impl_->function_starts.push_back(function.start & ~1u);
            bool lr_saved = false;
            for (const FrameRow& row : function.rows) {
                const RegisterRule::Kind lr_kind = row.rules[lr].kind;
                lr_saved = lr_saved || (lr_kind != RegisterRule::Kind::unspecified && lr_kind != RegisterRule::Kind::same_value);
                impl_->rows.push_back({row, lr_saved});
                // An FDE may give its range with the Thumb bit set (libgcc's ARMv6-M division does):
                // instructions start at even addresses.
                impl_->rows.back().start &= ~1u;
                impl_->rows.back().end &= ~1u;
            }
        }
        UnwindTables::ImageExidx exidx{{}, ExidxTable::read(*image)};
        if (exidx.table.empty())
            continue;
        for (const Section& section : image->sections())   // its own (symbols() has every image's)
            if (section.runs_code())
                exidx.code.emplace_back(section.address, section.end());
        if (exidx.code.empty())   // nothing known of its code: the table answers for any address
            exidx.code.emplace_back(0, uint64_t(1) << 32);
        for (const ExidxEntry& entry : exidx.table.entries())
            impl_->function_starts.push_back(entry.start);
        impl_->exidx.push_back(std::move(exidx));
    }
    // The stack's top: the first image's initial MSP (word 0 of its table).
    if (!impl_->vector_tables.front().empty())
        impl_->initial_sp = impl_->vector_tables.front()[0];
    std::sort(impl_->rows.begin(), impl_->rows.end(),
              [](const UnwindRow& a, const UnwindRow& b) { return a.start < b.start; });
    std::sort(impl_->function_starts.begin(), impl_->function_starts.end());
    impl_->function_starts.erase(std::unique(impl_->function_starts.begin(), impl_->function_starts.end()),
                                 impl_->function_starts.end());
}

Unwinder::~Unwinder() = default;

std::optional<uint32_t> Unwinder::initial_stack_pointer() const
{
    return impl_->initial_sp;
}

bool Unwinder::has_frame_info() const
{
    return !impl_->rows.empty() || !impl_->exidx.empty();   // only non-empty tables are kept
}

UnwindResult Unwinder::unwind(const CoreRegisters& registers, StackMemory& memory, size_t max_depth) const
{
    return ChainWalk(*impl_, registers, memory, max_depth).run();
}

} // namespace mcuprof::core
