#include "mcuprof/image/unwind/unwinder.h"

#include <algorithm>
#include <array>
#include <utility>
#include <variant>
#include <vector>

#include "mcuprof/image/error.h"
#include "mcuprof/image/firmware.h"
#include "mcuprof/image/image_set.h"
#include "mcuprof/image/symbols.h"
#include "mcuprof/image/unwind/thumb_code.h"
#include "unwind/frame_recovery.h"

namespace mcuprof::core {
namespace {

using reg::sp, reg::lr, reg::pc;

// Thread mode's outermost function, whatever it saved: a reset handler never returns. Asked
// before the prologue and LR, which would take its stale LR for a caller.
std::optional<Undone> stop_at_reset_function(const UnwindTables& tables, const WalkState& frame, StackMemory&)
{
    if (frame.exception == 0 && tables.in_reset_function(frame.frame_address()))
        return UnwindStop::root;
    return std::nullopt;
}

// The ways to undo a frame, in the order they are asked; the first that answers decides.
// The epilogue comes first: halted in one, the code says what the frame holds where the
// tables may not. The tables come next, DWARF before the exception table, then the code's own
// prologue; LR last, which always answers.
constexpr std::array<Recoverer, 6> recoverers{
    recover_by_epilogue, recover_by_call_frames, recover_by_exidx,
    stop_at_reset_function, recover_by_prologue, recover_from_lr,
};

// One unwind: the frames undone one after another by the recoverers, and the return
// addresses crossed, from the halted registers to the chain's end.
class ChainWalk {
public:
    ChainWalk(const UnwindTables& tables, const CoreRegisters& registers, StackMemory& memory, size_t max_depth);
    UnwindResult run() &&;

private:
    UnwindStop walk();
    Undone undo_frame();
    std::optional<UnwindStop> return_to(uint32_t return_address, uint32_t frame_address);

    const UnwindTables& tables_;
    StackMemory& memory_;
    const size_t max_depth_;
    WalkState w_;
};

ChainWalk::ChainWalk(const UnwindTables& tables, const CoreRegisters& registers, StackMemory& memory,
                     size_t max_depth)
    : tables_(tables), memory_(memory), max_depth_(max_depth)
{
    w_.r = registers.r;
    w_.exception = registers.xpsr & 0x1FFu;   // IPSR
    w_.on_psp = w_.exception == 0 && registers.psp && registers.psp == registers.r[sp];
    w_.xpsr = registers.xpsr;
    w_.stacks = {registers.msp, registers.psp, registers.msplim, registers.psplim, std::nullopt};
    w_.other = registers.other_security_state;
    w_.r[pc] &= ~1u;
}

UnwindResult ChainWalk::run() &&
{
    UnwindResult& result = w_.result;
    // Code no image given describes (a bootloader's, a ROM's): nothing here can say what it
    // saved, nor name its callers.
    if (!tables_.in_code(w_.r[pc])) {
        result.stop = result.stack.stop = UnwindStop::outside_image;
        result.stack.truncated = true;
        return std::move(result);
    }
    UnwindStop why = walk();
    while (w_.exception != 0 && why != UnwindStop::depth && why != UnwindStop::psp_unknown &&
           why != UnwindStop::secure_caller && why != UnwindStop::nonsecure_unknown && w_.handler_frame &&
           !w_.searched_handler_frame) {
        if (const std::optional<UnwindStop> searched = search_handler_frame(tables_, w_, memory_, why)) {
            why = *searched;
            break;
        }
        why = walk();
    }
    if (why == UnwindStop::root && w_.exception != 0)
        why = UnwindStop::handler_only;
    // A chain that went wrong keeps only the frames found on the stack: from a guessed caller
    // on, every frame may be another function's.
    if (!is_complete(why) && why != UnwindStop::depth && w_.guessed_from)
        w_.callers().resize(*w_.guessed_from);
    result.stop = why;
    result.stack.truncated = !is_complete(why);
    result.stack.stop = why;
    return std::move(result);
}

// One chain from the current registers; how it ended.
UnwindStop ChainWalk::walk()
{
    while (w_.callers().size() < max_depth_) {
        if (w_.exception != 0 && !w_.handler_frame && tables_.in_handler_function(w_.exception, w_.r[pc]))
            w_.handler_frame = HandlerFrame{w_.r[sp], w_.callers().size()};
        // Where the frame being undone stands (its call site once it has called): undoing it by
        // the exception tables may already have moved PC.
        const uint32_t frame_address = w_.frame_address();
        const Undone undone = undo_frame();
        if (const UnwindStop* stop = std::get_if<UnwindStop>(&undone))
            return *stop;
        const CallerFrame& caller = std::get<CallerFrame>(undone);
        if (caller.guessed && !w_.guessed_from)
            w_.guessed_from = w_.callers().size();
        w_.r = caller.r;
        if (const std::optional<UnwindStop> stop = return_to(caller.return_address, frame_address))
            return *stop;
    }
    return UnwindStop::depth;
}

// Undoes the frame of the function at PC: its caller's registers, or why not.
Undone ChainWalk::undo_frame()
{
    for (const Recoverer recover : recoverers)
        if (std::optional<Undone> undone = recover(tables_, w_, memory_))
            return *std::move(undone);
    return UnwindStop::no_frame_info;   // not reached: recover_from_lr always answers
}

// Goes on into the code a frame returns to; nothing, or how the chain ends there.
std::optional<UnwindStop> ChainWalk::return_to(uint32_t return_address, uint32_t frame_address)
{
    if (const std::optional<std::optional<UnwindStop>> crossed = cross_special_return(tables_, w_, memory_, return_address))
        return *crossed;
    // The reset value of LR ends the chain of the reset handler, and 0 or 0xFFFFFFFF the
    // first frame of a thread, which its RTOS built with such an LR (Zephyr's z_thread_entry):
    // Thread mode, in a function no instruction calls or branches to, entered by its address
    // only. That needs no stack pointer, which QEMU 7.2's gdbstub does not give in Thread mode.
    // Anywhere else a saved 0 or 0xFFFFFFFF is another frame's stale word, read where the
    // call-frame information stopped describing the frame: the chain is cut there, and says so.
    if (return_address == 0 || return_address == 0xFFFFFFFFu) {
        if (tables_.in_handler_function(1, frame_address))
            return UnwindStop::root;
        const bool thread_entry = w_.exception == 0 && tables_.entered_only_by_address(frame_address);
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
        return enter_nonsecure_caller(w_, return_address);
    w_.r[pc] = return_address & ~1u;
    w_.leaf = false;
    w_.callers().push_back(w_.r[pc] - 2);   // inside the call instruction, for line lookup
    return std::nullopt;
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

Unwinder::Unwinder(const ImageSet& images) : impl_(std::make_unique<Impl>())
{
    impl_->code = images.symbols();   // a copy (the images may go away), of every image
    impl_->branch_targets = direct_branch_targets(impl_->code);
    for (const Image& image : images.images()) {
        impl_->vector_tables.push_back(image.vector_table());
        if (const std::optional<uint32_t> entry = image.entry_point())
            impl_->entries.push_back(*entry);
        for (const FrameFunction& function : read_call_frames(image)) {
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
        UnwindTables::ImageExidx exidx{{}, ExidxTable::read(image)};
        if (exidx.table.empty())
            continue;
        for (const Section& section : image.sections())   // its own (the set's symbols have every image's)
            if (section.runs_code())
                exidx.code.emplace_back(section.address, section.end());
        if (exidx.code.empty())   // nothing known of its code: the table answers for any address
            exidx.code.emplace_back(0, uint64_t(1) << 32);
        for (const ExidxEntry& entry : exidx.table.entries())
            impl_->function_starts.push_back(entry.start);
        impl_->exidx.push_back(std::move(exidx));
    }
    // The stack's top: the main image's initial MSP (word 0 of its table).
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
