// The call-frame recoverer: the DWARF row (.debug_frame, DWARF 5 section 6.4) that covers the
// frame's address gives the caller's SP (the CFA) and where each saved register is.
#include "unwind/frame_recovery.h"

namespace mcuprof::core {
namespace {

Undone undo_with_row(const UnwindRow& row, const WalkState& frame, StackMemory& memory)
{
    const std::array<uint32_t, 16>& r = frame.r;
    // CFA: the caller's SP, from the rule of this row (DW_CFA_def_cfa*).
    if (!row.cfa_known)
        return UnwindStop::no_frame_info;
    // Strictly above for a frame that made a call: it pushed its return address at least.
    const uint32_t cfa = r[row.cfa_register] + uint32_t(row.cfa_offset);
    if (!cfa_plausible(cfa, r[reg::sp]) || (!frame.leaf && cfa == r[reg::sp]))
        return UnwindStop::bad_frame;
    std::array<uint32_t, 16> caller = r;
    for (uint32_t n = 0; n < reg::count; ++n) {
        const RegisterRule& rule = row.rules[n];
        switch (rule.kind) {
        case RegisterRule::Kind::unspecified:
        case RegisterRule::Kind::same_value:
        case RegisterRule::Kind::undefined:
            break;
        case RegisterRule::Kind::at_cfa: {
            auto value = memory.read_word(cfa + uint32_t(rule.offset));
            if (!value)
                return UnwindStop::unreadable;
            caller[n] = *value;
            break;
        }
        case RegisterRule::Kind::is_cfa:
            caller[n] = cfa + uint32_t(rule.offset);
            break;
        case RegisterRule::Kind::in_register:
            if (rule.register_ >= reg::count)
                return UnwindStop::no_frame_info;
            caller[n] = r[rule.register_];
            break;
        case RegisterRule::Kind::expression:
            return UnwindStop::no_frame_info;
        }
    }
    // A function that has not saved LR yet returns through LR itself; one that never saves
    // it and is not the leaf cannot return at all: it is the root (a reset handler, a task
    // entry, a noreturn main).
    if (row.rules[reg::lr].kind == RegisterRule::Kind::undefined || (!row.lr_saved && !frame.leaf))
        return UnwindStop::root;
    caller[reg::sp] = cfa;
    return CallerFrame{caller, caller[reg::lr]};
}

} // namespace

std::optional<Undone> recover_by_call_frames(const UnwindTables& tables, const WalkState& frame, StackMemory& memory)
{
    if (const UnwindRow* row = tables.find(frame.frame_address()))
        return undo_with_row(*row, frame, memory);
    return std::nullopt;
}

} // namespace mcuprof::core
