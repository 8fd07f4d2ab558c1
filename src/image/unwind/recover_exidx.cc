// The exception-table recoverer: no DWARF row, but an .ARM.exidx entry (ARM IHI 0038; an
// image or a library built without -g): its instructions undo the frame as the body of the
// function holds it. At the function's first instruction nothing is saved yet: the entry is
// left to the recoverers after it (the leaf's LR).
#include "unwind/frame_recovery.h"

namespace mcuprof::core {

std::optional<Undone> recover_by_exidx(const UnwindTables& tables, const WalkState& frame, StackMemory& memory)
{
    const ExidxEntry* entry = tables.exidx_entry(frame.frame_address());
    if (entry == nullptr || (frame.leaf && frame.r[reg::pc] == entry->start))
        return std::nullopt;
    std::array<uint32_t, 16> caller = frame.r;
    bool restored_return = false;
    switch (run_exidx(*entry, caller, memory, restored_return)) {
    case ExidxResult::unwound: break;
    case ExidxResult::unreadable: return UnwindStop::unreadable;
    case ExidxResult::refused:
    case ExidxResult::malformed: return UnwindStop::no_frame_info;
    }
    const uint32_t cfa = caller[reg::sp], sp = frame.r[reg::sp];
    if (!cfa_plausible(cfa, sp) || (!frame.leaf && restored_return && cfa == sp))
        return UnwindStop::bad_frame;
    // As with DWARF: a caller that never saved its return address is the root.
    if (!frame.leaf && !restored_return)
        return UnwindStop::root;
    return CallerFrame{caller, caller[reg::pc]};
}

} // namespace mcuprof::core
