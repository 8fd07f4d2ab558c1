// The last recoverer: no call-frame information and no prologue read. While this is the
// innermost frame and it has called nothing, LR is its return address; if it has, LR is
// stale. So LR is taken as a guess, which only a chain that goes on to its end confirms,
// except at the first instruction of a function with an exception-table entry, where nothing
// is saved yet and LR is sure. Past the innermost frame LR says nothing.
#include "unwind/frame_recovery.h"

namespace mcuprof::core {

std::optional<Undone> recover_from_lr(const UnwindTables& tables, const WalkState& frame, StackMemory&)
{
    if (!frame.leaf)
        return UnwindStop::no_frame_info;
    const bool guessed = tables.exidx_entry(frame.frame_address()) == nullptr;
    return CallerFrame{frame.r, frame.r[reg::lr], guessed};
}

} // namespace mcuprof::core
