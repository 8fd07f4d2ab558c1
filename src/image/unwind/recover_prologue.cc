// The prologue recoverer: neither table describes the function (a vendor's assembly, a library
// built without unwind tables); its prologue, read from its first instruction to the PC
// (prologue.cc), says what it saved.
#include "unwind/frame_recovery.h"

#include "mcuprof/image/unwind/prologue.h"

namespace mcuprof::core {
namespace {

Undone undo_with_prologue(const PrologueFrame& prologue, const WalkState& frame, StackMemory& memory)
{
    const std::array<uint32_t, 16>& r = frame.r;
    const uint32_t cfa = prologue.cfa_above_r7 ? r[reg::r7] + *prologue.cfa_above_r7 : r[reg::sp] + prologue.size;
    if (!cfa_plausible(cfa, r[reg::sp]))
        return UnwindStop::bad_frame;
    std::array<uint32_t, 16> caller = r;
    for (uint32_t n = 0; n < reg::count; ++n) {
        if (!prologue.saved_below_cfa[n])
            continue;
        const std::optional<uint32_t> value = memory.read_word(cfa - *prologue.saved_below_cfa[n]);
        if (!value)
            return UnwindStop::unreadable;
        caller[n] = *value;
    }
    // A function that called something holds its return address where its prologue put it:
    // on the stack, or in a callee-saved register the calls leave alone. In LR only, it is
    // the leaf's.
    bool guessed = false;
    if (!prologue.return_saved() && prologue.return_register == reg::lr) {
        if (!frame.leaf)
            return UnwindStop::no_frame_info;
        // The halted frame saved nothing, but may have called since: LR is a guess.
        guessed = prologue.lr_written;
    }
    const uint32_t return_address = prologue.return_saved() ? caller[reg::lr] : r[prologue.return_register];
    caller[reg::sp] = cfa;
    caller[reg::lr] = return_address;
    return CallerFrame{caller, return_address, guessed};
}

} // namespace

std::optional<Undone> recover_by_prologue(const UnwindTables& tables, const WalkState& frame, StackMemory& memory)
{
    const uint32_t address = frame.frame_address();
    if (tables.exidx_entry(address) != nullptr)
        return std::nullopt;
    const Function* function = tables.code.find(address);
    if (function == nullptr)
        return std::nullopt;
    const std::optional<PrologueFrame> prologue =
        read_prologue(tables.code, function->start, function->start + function->size, frame.r[reg::pc]);
    if (!prologue)
        return std::nullopt;
    return undo_with_prologue(*prologue, frame, memory);
}

} // namespace mcuprof::core
