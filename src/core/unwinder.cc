#include "mcuprof/core/unwinder.h"

#include "mcuprof/core/call_frames.h"
#include "mcuprof/core/exidx.h"

#include <algorithm>
#include <vector>

#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/Error.h>

#include "mcuprof/core/error.h"

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
    std::vector<std::pair<uint32_t, uint32_t>> code;   // executable sections [start, end)
    std::vector<uint32_t> function_starts;              // of every FDE and exception-table entry, sorted
    ExidxTable exidx;                                   // for code without .debug_frame

    // The exception-table entry of code no DWARF row covers, when it can be unwound.
    const ExidxEntry* exidx_entry(uint32_t address) const
    {
        const ExidxEntry* entry = exidx.find(address);
        return entry != nullptr && !entry->cannot_unwind && in_code(address) ? entry : nullptr;
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

Unwinder::Unwinder(const std::string& elf_path) : impl_(std::make_unique<Impl>())
{
    auto fail = [&](llvm::Error e) {
        throw Error(elf_path, "", "cannot read the call-frame information: " + llvm::toString(std::move(e)));
    };
    auto binary = llvm::object::ObjectFile::createObjectFile(elf_path);
    if (!binary)
        fail(binary.takeError());
    const llvm::object::ObjectFile& object = *binary->getBinary();
    std::optional<uint64_t> lowest;
    for (const llvm::object::SectionRef& section : object.sections()) {
        const uint64_t flags = llvm::isa<llvm::object::ELFObjectFileBase>(object)
                                   ? llvm::object::ELFSectionRef(section).getFlags()
                                   : uint64_t(llvm::ELF::SHF_ALLOC);
        if ((flags & llvm::ELF::SHF_EXECINSTR) != 0 && section.getSize() > 0)
            impl_->code.emplace_back(uint32_t(section.getAddress()), uint32_t(section.getAddress() + section.getSize()));
        if (section.getSize() < 4 || section.isBSS() || (flags & llvm::ELF::SHF_ALLOC) == 0)
            continue;
        if (lowest && section.getAddress() >= *lowest)
            continue;
        auto contents = section.getContents();
        if (!contents) {
            llvm::consumeError(contents.takeError());
            continue;
        }
        lowest = section.getAddress();
        const auto* p = reinterpret_cast<const uint8_t*>(contents->data());
        impl_->initial_sp = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
    }
    for (const FrameFunction& function : read_call_frames(object, elf_path)) {
        impl_->function_starts.push_back(function.start & ~1u);
        bool lr_saved = false;
        for (const FrameRow& row : function.rows) {
            const RegisterRule::Kind lr_kind = row.rules[lr].kind;
            lr_saved = lr_saved || (lr_kind != RegisterRule::Kind::unspecified && lr_kind != RegisterRule::Kind::same_value);
            impl_->rows.push_back({row, lr_saved});
        }
    }
    impl_->exidx = ExidxTable::read(object, elf_path);
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
    // Handler mode (IPSR, xPSR bits 8:0, not 0; ARMv7-M ARM B1.4.2): the chain is complete
    // only once it has crossed the exception return into the interrupted code. A handler's
    // frame that looks like a root (LR "still" holding a return address that is not an
    // EXC_RETURN, a frame without LR saved) is a chain that went wrong, not an end.
    bool in_handler = (registers.xpsr & 0x1FFu) != 0;
    auto stop = [&](UnwindStop why) {
        if (why == UnwindStop::root && in_handler)
            why = UnwindStop::handler_only;
        result.stop = why;
        result.stack.truncated = why != UnwindStop::root;
        result.stack.stop = why;
        return result;
    };

    std::array<uint32_t, 16> r = registers.r;
    r[pc] &= ~1u;
    // In Handler mode (IPSR != 0) the core runs on MSP; in Thread mode on either.
    bool on_psp = (registers.xpsr & 0x1FFu) == 0 && registers.psp && registers.psp == r[sp];
    std::optional<uint32_t> msp = registers.msp, psp = registers.psp;
    bool leaf = true;   // LR still holds this frame's return address when it saved nothing

    while (callers.size() < max_depth) {
        uint32_t return_address = 0;
        if (const UnwindRow* row = impl_->find(leaf ? r[pc] : r[pc] - 2)) {
            // CFA: the caller's SP, from the rule of this row (DW_CFA_def_cfa*).
            if (!row->cfa_known)
                return stop(UnwindStop::no_frame_info);
            // The caller's SP lies above this frame's (the stack grows down), strictly so for
            // a frame that made a call: it pushed its return address at least.
            const uint32_t cfa = r[row->cfa_register] + uint32_t(row->cfa_offset);
            if (cfa < r[sp] || (!leaf && cfa == r[sp]) || cfa - r[sp] > 0x10000u)
                return stop(UnwindStop::bad_frame);
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
                        return stop(UnwindStop::unreadable);
                    caller[reg] = *value;
                    break;
                }
                case RegisterRule::Kind::is_cfa:
                    caller[reg] = cfa + uint32_t(rule.offset);
                    break;
                case RegisterRule::Kind::in_register:
                    if (rule.register_ >= 16)
                        return stop(UnwindStop::no_frame_info);
                    caller[reg] = r[rule.register_];
                    break;
                case RegisterRule::Kind::expression:
                    return stop(UnwindStop::no_frame_info);
                }
            }
            // A function that has not saved LR yet returns through LR itself; one that
            // never saves it and is not the leaf cannot return at all: it is the root
            // (a reset handler, a task entry, a noreturn main).
            if (row->rules[lr].kind == RegisterRule::Kind::undefined || (!row->lr_saved && !leaf))
                return stop(UnwindStop::root);
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
            case ExidxResult::unreadable: return stop(UnwindStop::unreadable);
            case ExidxResult::refused:
            case ExidxResult::malformed: return stop(UnwindStop::no_frame_info);
            }
            const uint32_t cfa = caller[sp];
            if (cfa < r[sp] || cfa - r[sp] > 0x10000u || (!leaf && restored_return && cfa == r[sp]))
                return stop(UnwindStop::bad_frame);
            // As with DWARF: a caller that never saved its return address is the root.
            if (!leaf && !restored_return)
                return stop(UnwindStop::root);
            return_address = caller[pc];
            r = caller;
        } else if (leaf) {
            // No call-frame information (assembly, a library without -g): while this is the
            // innermost frame and it has called nothing, LR is its return address.
            return_address = r[lr];
        } else {
            return stop(UnwindStop::no_frame_info);
        }

        if (is_exc_return(return_address)) {
            // The frame below is the one the exception interrupted: the hardware stacked
            // r0-r3, r12, lr, pc, xPSR (and s0-s15, FPSCR when EXC_RETURN bit 4 is 0) on the
            // stack EXC_RETURN bit 2 names (B1.5.6, B1.5.7).
            const bool to_psp = (return_address & 0x4u) != 0;
            if (!on_psp)
                msp = r[sp];
            else
                psp = r[sp];
            std::optional<uint32_t> frame = to_psp ? psp : msp;
            if (!frame)
                return stop(UnwindStop::psp_unknown);
            uint32_t stacked[8];
            for (uint32_t i = 0; i < 8; ++i) {
                auto value = memory.read_word(*frame + 4 * i);
                if (!value)
                    return stop(UnwindStop::unreadable);
                stacked[i] = *value;
            }
            uint32_t size = (return_address & 0x10u) ? 0x20u : 0x68u;
            if (stacked[7] & (1u << 9))   // xPSR bit 9: the stack was realigned by 4 bytes
                size += 4;
            r[0] = stacked[0];
            r[1] = stacked[1];
            r[2] = stacked[2];
            r[3] = stacked[3];
            r[12] = stacked[4];
            r[lr] = stacked[5];
            r[pc] = stacked[6] & ~1u;
            r[sp] = *frame + size;
            if (!impl_->in_code(r[pc]))
                return stop(UnwindStop::bad_frame);
            on_psp = to_psp;
            in_handler = (return_address & 0x8u) == 0;   // EXC_RETURN bit 3 clear: back to Handler mode
            leaf = true;   // the interrupted code may not have saved LR yet
            callers.push_back(r[pc]);   // the interrupted instruction itself, not a call site
            continue;
        }
        if (return_address == 0 || return_address == 0xFFFFFFFFu)   // reset value of LR
            return stop(UnwindStop::root);
        // No call returns to the first instruction of a function: that return address was
        // planted in a thread's first frame (an RTOS's task-exit hook) and the thread's
        // entry function is the root.
        if (impl_->is_function_start(return_address & ~1u))
            return stop(UnwindStop::root);
        // A return into ARM state (bit 0 clear) cannot happen on M-profile; a return
        // outside the code is a corrupted frame.
        if ((return_address & 1u) == 0 || !impl_->in_code(return_address & ~1u))
            return stop(UnwindStop::bad_frame);
        r[pc] = return_address & ~1u;
        leaf = false;
        callers.push_back(r[pc] - 2);   // inside the call instruction, for line lookup
    }
    return stop(UnwindStop::depth);
}

} // namespace mcuprof::core
