// The epilogue recoverer: halted in an epilogue, the code itself says what the frame holds,
// where call-frame information may stop describing the frame (libgcc's ARMv6-M __aeabi_fmul
// after its first pop). Only for the halted frame itself, outside an IT block or an
// interrupted LDM, where running the code forward from PC is what the core will do.
#include "unwind/frame_recovery.h"

#include "mcuprof/image/unwind/thumb_code.h"

namespace mcuprof::core {

std::optional<Undone> recover_by_epilogue(const UnwindTables& tables, const WalkState& frame, StackMemory& memory)
{
    if (!frame.leaf || in_it_block_or_ldm(frame.xpsr))
        return std::nullopt;
    std::array<uint32_t, 16> caller = frame.r;
    switch (run_epilogue(tables.code, caller, memory)) {
    case EpilogueResult::returned: return CallerFrame{caller, caller[reg::pc]};
    case EpilogueResult::unreadable: return UnwindStop::unreadable;
    case EpilogueResult::not_epilogue: break;
    }
    return std::nullopt;
}

} // namespace mcuprof::core
