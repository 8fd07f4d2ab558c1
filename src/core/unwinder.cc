#include "mcuprof/core/unwinder.h"

#include "mcuprof/core/call_frames.h"
#include "mcuprof/core/exidx.h"

#include <algorithm>
#include <vector>

#include "mcuprof/core/error.h"
#include "mcuprof/core/firmware.h"

namespace mcuprof::core {
namespace {

constexpr uint32_t sp = 13, lr = 14, pc = 15;

// One row of the call-frame table with what the unwinder needs besides: whether the
// function has put its return address anywhere by then.
struct UnwindRow : FrameRow {
    bool lr_saved = false;
};

// The EXC_RETURN values of ARMv7-M with the FP extension (ARMv7-M ARM, B1.5.8): handler
// or thread, MSP or PSP, basic or extended frame. 0xFFFFFFFF, the value QEMU and many
// cores leave in LR at reset, is not one of them.
bool is_exc_return(uint32_t value)
{
    switch (value) {
    case 0xFFFFFFE1u: case 0xFFFFFFE9u: case 0xFFFFFFEDu:
    case 0xFFFFFFF1u: case 0xFFFFFFF9u: case 0xFFFFFFFDu:
        return true;
    default:
        return false;
    }
}

// A context switch that saves a task's registers on the task's own stack the way FreeRTOS's
// Cortex-M4F port does (stmdb r0!, {r4-r11, lr}, with vstmdb r0!, {s16-s31} before it when
// the task had an FP context) leaves r0 = `saved_top`, 9 words below the hardware frame at
// PSP, or 9 + 16 words with the FP registers: the EXC_RETURN it saved, when `saved_top` is
// such a save area for this PSP; the area's EXC_RETURN must return to Thread mode on PSP
// (B1.5.8) with bit 4 matching the area's size.
std::optional<uint32_t> save_area_exc_return(uint32_t saved_top, uint32_t psp, StackMemory& memory)
{
    constexpr uint32_t core_words = 9 * 4, fp_words = 16 * 4;
    if (saved_top % 4 != 0 || saved_top >= psp)
        return std::nullopt;
    const uint32_t gap = psp - saved_top;
    if (gap != core_words && gap != core_words + fp_words)
        return std::nullopt;
    const std::optional<uint32_t> exc_return = memory.read_word(saved_top + 8 * 4);
    if (!exc_return || !is_exc_return(*exc_return) || (*exc_return & 0xCu) != 0xCu)   // Thread mode, PSP
        return std::nullopt;
    const bool extended = (*exc_return & 0x10u) == 0;
    return extended == (gap == core_words + fp_words) ? exc_return : std::nullopt;
}

} // namespace

std::string_view describe(UnwindStop stop)
{
    switch (stop) {
    case UnwindStop::root: return "reached the outermost frame";
    case UnwindStop::depth: return "depth limit";
    case UnwindStop::unreadable: return "stack memory could not be read";
    case UnwindStop::no_frame_info: return "a function without call-frame information";
    case UnwindStop::bad_frame: return "an implausible frame (corrupted stack?)";
    case UnwindStop::psp_unknown: return "the thread stack pointer (PSP) is unknown";
    case UnwindStop::handler_only: return "an exception handler's chain that never reached the exception return";
    case UnwindStop::not_recorded: return "reason not recorded";
    }
    return "?";
}

struct Unwinder::Impl {
    std::vector<UnwindRow> rows;   // by start address
    std::optional<uint32_t> initial_sp;
    std::vector<uint32_t> vectors;                      // the vector table's words (B1.5.3)
    std::vector<std::pair<uint32_t, uint32_t>> code;   // executable sections [start, end)
    std::vector<uint32_t> function_starts;              // of every FDE and exception-table entry, sorted
    ExidxTable exidx;                                   // for code without .debug_frame

    // The exception-table entry of code no DWARF row covers, when it can be unwound.
    const ExidxEntry* exidx_entry(uint32_t address) const
    {
        const ExidxEntry* entry = exidx.find(address);
        return entry != nullptr && !entry->cannot_unwind && in_code(address) ? entry : nullptr;
    }

    // Whether `address` lies in the handler of exception `number`: from its vector to the
    // next function's start.
    bool in_handler_function(uint32_t number, uint32_t address) const
    {
        if (number == 0 || number >= vectors.size() || (vectors[number] & 1u) == 0)   // a Thumb address
            return false;
        const uint32_t start = vectors[number] & ~1u;
        auto next = std::upper_bound(function_starts.begin(), function_starts.end(), start);
        return address >= start && (next == function_starts.end() || address < *next) && in_code(address);
    }

    bool is_function_start(uint32_t address) const
    {
        return std::binary_search(function_starts.begin(), function_starts.end(), address);
    }

    bool in_code(uint32_t address) const
    {
        for (const auto& [start, end] : code)
            if (address >= start && address < end)
                return true;
        return code.empty();   // nothing known: take any address
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

Unwinder::Unwinder(const Firmware& firmware) : impl_(std::make_unique<Impl>())
{
    for (const Section& section : firmware.sections())
        if (section.executable() && section.size > 0)
            impl_->code.emplace_back(section.address, uint32_t(section.address + section.size));
    impl_->vectors = firmware.vector_table();
    if (!impl_->vectors.empty())
        impl_->initial_sp = impl_->vectors[0];
    for (const FrameFunction& function : read_call_frames(firmware)) {
        impl_->function_starts.push_back(function.start & ~1u);
        bool lr_saved = false;
        for (const FrameRow& row : function.rows) {
            const RegisterRule::Kind lr_kind = row.rules[lr].kind;
            lr_saved = lr_saved || (lr_kind != RegisterRule::Kind::unspecified && lr_kind != RegisterRule::Kind::same_value);
            impl_->rows.push_back({row, lr_saved});
        }
    }
    impl_->exidx = ExidxTable::read(firmware);
    for (const ExidxEntry& entry : impl_->exidx.entries())
        impl_->function_starts.push_back(entry.start);
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
    return !impl_->rows.empty() || !impl_->exidx.empty();
}

UnwindResult Unwinder::unwind(const CoreRegisters& registers, StackMemory& memory, size_t max_depth) const
{
    UnwindResult result;
    std::vector<uint32_t>& callers = result.stack.callers;

    std::array<uint32_t, 16> r = registers.r;
    r[pc] &= ~1u;
    // Handler mode (IPSR, xPSR bits 8:0, not 0; ARMv7-M ARM B1.4.2): the chain is complete
    // only once it has crossed the exception return into the interrupted code. A handler's
    // frame that looks like a root (LR "still" holding a return address that is not an
    // EXC_RETURN, a frame without LR saved) is a chain that went wrong, not an end.
    uint32_t exception = registers.xpsr & 0x1FFu;   // the exception being handled, 0 in Thread mode
    // In Handler mode the core runs on MSP; in Thread mode on either.
    bool on_psp = exception == 0 && registers.psp && registers.psp == r[sp];
    std::optional<uint32_t> msp = registers.msp, psp = registers.psp;
    bool leaf = true;   // LR still holds this frame's return address when it saved nothing

    // The innermost frame of the running handler's own function (from its vector): where its
    // EXC_RETURN is looked for when its frames cannot be undone (below).
    struct HandlerFrame {
        uint32_t sp;
        size_t callers;
    };
    std::optional<HandlerFrame> handler_frame;
    bool searched_handler_frame = false;

    // The frame below an exception return: the hardware stacked r0-r3, r12, lr, pc, xPSR (and
    // s0-s15, FPSCR when EXC_RETURN bit 4 is 0) at `frame` (B1.5.6, B1.5.7). `strict`: the
    // frame was found by searching, so it must look like one: Thumb state, an IPSR that
    // matches the mode EXC_RETURN returns to (0 for Thread mode), a PC in the code.
    auto cross = [&](uint32_t exc_return, uint32_t frame, bool strict) -> std::optional<UnwindStop> {
        uint32_t stacked[8];
        for (uint32_t i = 0; i < 8; ++i) {
            auto value = memory.read_word(frame + 4 * i);
            if (!value)
                return UnwindStop::unreadable;
            stacked[i] = *value;
        }
        const bool to_thread = (exc_return & 0x8u) != 0;
        const uint32_t interrupted_exception = stacked[7] & 0x1FFu;
        if (!impl_->in_code(stacked[6] & ~1u) ||
            (strict && ((stacked[7] & (1u << 24)) == 0 || (interrupted_exception == 0) != to_thread)))
            return UnwindStop::bad_frame;
        uint32_t size = (exc_return & 0x10u) ? 0x20u : 0x68u;
        if (stacked[7] & (1u << 9))   // xPSR bit 9: the stack was realigned by 4 bytes
            size += 4;
        r[0] = stacked[0];
        r[1] = stacked[1];
        r[2] = stacked[2];
        r[3] = stacked[3];
        r[12] = stacked[4];
        r[lr] = stacked[5];
        r[pc] = stacked[6] & ~1u;
        r[sp] = frame + size;
        on_psp = (exc_return & 0x4u) != 0;
        exception = to_thread ? 0 : interrupted_exception;
        handler_frame.reset();
        searched_handler_frame = false;
        leaf = true;   // the interrupted code may not have saved LR yet
        callers.push_back(r[pc]);   // the interrupted instruction itself, not a call site
        return std::nullopt;
    };

    // One chain from the current registers; how it ended.
    auto walk = [&]() -> UnwindStop {
        while (callers.size() < max_depth) {
            if (exception != 0 && !handler_frame && impl_->in_handler_function(exception, r[pc]))
                handler_frame = HandlerFrame{r[sp], callers.size()};
            uint32_t return_address = 0;
            if (const UnwindRow* row = impl_->find(leaf ? r[pc] : r[pc] - 2)) {
                // CFA: the caller's SP, from the rule of this row (DW_CFA_def_cfa*).
                if (!row->cfa_known)
                    return UnwindStop::no_frame_info;
                // The caller's SP lies above this frame's (the stack grows down), strictly so for
                // a frame that made a call: it pushed its return address at least.
                const uint32_t cfa = r[row->cfa_register] + uint32_t(row->cfa_offset);
                if (cfa < r[sp] || (!leaf && cfa == r[sp]) || cfa - r[sp] > 0x10000u)
                    return UnwindStop::bad_frame;
                std::array<uint32_t, 16> caller = r;
                for (uint32_t reg = 0; reg < 16; ++reg) {
                    const RegisterRule& rule = row->rules[reg];
                    switch (rule.kind) {
                    case RegisterRule::Kind::unspecified:
                    case RegisterRule::Kind::same_value:
                    case RegisterRule::Kind::undefined:
                        break;
                    case RegisterRule::Kind::at_cfa: {
                        auto value = memory.read_word(cfa + uint32_t(rule.offset));
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
                        caller[reg] = r[rule.register_];
                        break;
                    case RegisterRule::Kind::expression:
                        return UnwindStop::no_frame_info;
                    }
                }
                // A function that has not saved LR yet returns through LR itself; one that
                // never saves it and is not the leaf cannot return at all: it is the root
                // (a reset handler, a task entry, a noreturn main).
                if (row->rules[lr].kind == RegisterRule::Kind::undefined || (!row->lr_saved && !leaf))
                    return UnwindStop::root;
                return_address = caller[lr];
                caller[sp] = cfa;
                r = caller;
            } else if (const ExidxEntry* entry = impl_->exidx_entry(leaf ? r[pc] : r[pc] - 2);
                       entry != nullptr && !(leaf && r[pc] == entry->start)) {
                // No DWARF row, but an exception-table entry (an image or a library built without
                // -g): its instructions undo the frame as the body of the function holds it. (At
                // the first instruction nothing is saved yet: the leaf case below.)
                std::array<uint32_t, 16> caller = r;
                bool restored_return = false;
                switch (run_exidx(*entry, caller, memory, restored_return)) {
                case ExidxResult::unwound: break;
                case ExidxResult::unreadable: return UnwindStop::unreadable;
                case ExidxResult::refused:
                case ExidxResult::malformed: return UnwindStop::no_frame_info;
                }
                const uint32_t cfa = caller[sp];
                if (cfa < r[sp] || cfa - r[sp] > 0x10000u || (!leaf && restored_return && cfa == r[sp]))
                    return UnwindStop::bad_frame;
                // As with DWARF: a caller that never saved its return address is the root.
                if (!leaf && !restored_return)
                    return UnwindStop::root;
                return_address = caller[pc];
                r = caller;
            } else if (leaf) {
                // No call-frame information (assembly, a library without -g): while this is the
                // innermost frame and it has called nothing, LR is its return address.
                return_address = r[lr];
            } else {
                return UnwindStop::no_frame_info;
            }

            if (is_exc_return(return_address)) {
                // The frame below is the one the exception interrupted, on the stack EXC_RETURN
                // bit 2 names.
                if (!on_psp)
                    msp = r[sp];
                else
                    psp = r[sp];
                const std::optional<uint32_t> frame = (return_address & 0x4u) ? psp : msp;
                if (!frame)
                    return UnwindStop::psp_unknown;
                if (auto stop = cross(return_address, *frame, false))
                    return *stop;
                continue;
            }
            if (return_address == 0 || return_address == 0xFFFFFFFFu)   // reset value of LR
                return UnwindStop::root;
            // No call returns to the first instruction of a function: that return address was
            // planted in a thread's first frame (an RTOS's task-exit hook) and the thread's
            // entry function is the root.
            if (impl_->is_function_start(return_address & ~1u))
                return UnwindStop::root;
            // A return into ARM state (bit 0 clear) cannot happen on M-profile; a return
            // outside the code is a corrupted frame.
            if ((return_address & 1u) == 0 || !impl_->in_code(return_address & ~1u))
                return UnwindStop::bad_frame;
            r[pc] = return_address & ~1u;
            leaf = false;
            callers.push_back(r[pc] - 2);   // inside the call instruction, for line lookup
        }
        return UnwindStop::depth;
    };

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
    // The frame named must check out too (cross(), strict). The frames found inside the
    // handler's function before the chain went wrong are dropped: they came from LR values
    // that were no return addresses.
    // Returns nothing once crossed; psp_unknown when a frame on the thread stack is in
    // question (or nothing was found at all: the task's save area is found from PSP) and PSP
    // is not known; otherwise the reason the chain had stopped for.
    auto search_handler_frame = [&](UnwindStop stopped) -> std::optional<UnwindStop> {
        searched_handler_frame = true;
        const HandlerFrame at = *handler_frame;
        // Cross with the saved EXC_RETURN at `frame`, keeping the callers up to the handler's.
        auto cross_saved = [&](uint32_t exc_return, uint32_t frame) {
            const std::vector<uint32_t> before = callers;
            callers.resize(at.callers);
            if (!cross(exc_return, frame, true))
                return true;
            callers = before;   // (cross() changes nothing else when the frame does not check out)
            return false;
        };
        for (uint32_t offset = 0; offset < 4 * 64; offset += 4) {
            const uint32_t address = at.sp + offset;
            if (impl_->initial_sp && address + 4 > *impl_->initial_sp)
                break;
            const std::optional<uint32_t> word = memory.read_word(address);
            if (!word)
                break;
            if (is_exc_return(*word)) {
                if ((*word & 0x4u) != 0 && !psp)
                    return UnwindStop::psp_unknown;
                if (cross_saved(*word, (*word & 0x4u) ? *psp : address + 4))
                    return std::nullopt;
            } else if (psp) {
                if (const std::optional<uint32_t> exc_return = save_area_exc_return(*word, *psp, memory))
                    if (cross_saved(*exc_return, *psp))
                        return std::nullopt;
            }
        }
        if (!psp)
            return UnwindStop::psp_unknown;
        return stopped;
    };

    UnwindStop why = walk();
    while (exception != 0 && why != UnwindStop::depth && why != UnwindStop::psp_unknown && handler_frame &&
           !searched_handler_frame) {
        const std::optional<UnwindStop> searched = search_handler_frame(why);
        if (searched) {
            why = *searched;
            break;
        }
        why = walk();
    }
    if (why == UnwindStop::root && exception != 0)
        why = UnwindStop::handler_only;
    result.stop = why;
    result.stack.truncated = why != UnwindStop::root;
    result.stack.stop = why;
    return result;
}

} // namespace mcuprof::core
