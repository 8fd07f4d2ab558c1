#include "mcuprof/core/unwinder.h"

#include <algorithm>
#include <vector>

#include <llvm/DebugInfo/DWARF/DWARFContext.h>
#include <llvm/DebugInfo/DWARF/DWARFDebugFrame.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/Error.h>

#include "mcuprof/core/error.h"

namespace mcuprof::core {
namespace {

constexpr uint32_t sp = 13, lr = 14, pc = 15;

// How to recover one register in the caller (DWARF 5, 6.4.1 "register rules").
struct RegisterRule {
    enum class Kind { same, at_cfa, undefined, unsupported } kind = Kind::same;
    int32_t offset = 0;
};

// One row of the call-frame table, in force over [start, end).
struct FrameRow {
    uint32_t start = 0;
    uint32_t end = 0;
    bool cfa_known = false;
    uint32_t cfa_register = sp;
    int32_t cfa_offset = 0;
    std::array<RegisterRule, 16> rules{};
    bool lr_saved = false;       // the function has put its return address somewhere
};

RegisterRule rule_of(const llvm::dwarf::UnwindLocation& location)
{
    using Location = llvm::dwarf::UnwindLocation;
    switch (location.getLocation()) {
    case Location::Unspecified:
    case Location::Same:
        return {RegisterRule::Kind::same, 0};
    case Location::Undefined:
        return {RegisterRule::Kind::undefined, 0};
    case Location::CFAPlusOffset:
        // Only "saved at CFA + offset" (DW_CFA_offset), what GCC and Clang emit for Arm.
        if (location == Location::createAtCFAPlusOffset(location.getOffset()))
            return {RegisterRule::Kind::at_cfa, location.getOffset()};
        return {RegisterRule::Kind::unsupported, 0};
    default:
        return {RegisterRule::Kind::unsupported, 0};
    }
}

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
    }
    return "?";
}

struct Unwinder::Impl {
    std::vector<FrameRow> rows;   // by start address
    std::optional<uint32_t> initial_sp;
    std::vector<std::pair<uint32_t, uint32_t>> code;   // executable sections [start, end)
    std::vector<uint32_t> function_starts;              // of every FDE, sorted

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

    const FrameRow* find(uint32_t address) const
    {
        auto it = std::upper_bound(rows.begin(), rows.end(), address,
                                   [](uint32_t a, const FrameRow& r) { return a < r.start; });
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
    std::unique_ptr<llvm::DWARFContext> dwarf = llvm::DWARFContext::create(object);
    auto frames = dwarf->getDebugFrame();
    if (!frames)
        fail(frames.takeError());
    for (const llvm::dwarf::FrameEntry& entry : (*frames)->entries()) {
        const auto* fde = llvm::dyn_cast<llvm::dwarf::FDE>(&entry);
        if (fde == nullptr)
            continue;
        auto table = llvm::dwarf::UnwindTable::create(fde);
        if (!table) {
            llvm::consumeError(table.takeError());   // one bad entry leaves its function without info
            continue;
        }
        const uint32_t fde_end = uint32_t(fde->getInitialLocation() + fde->getAddressRange());
        impl_->function_starts.push_back(uint32_t(fde->getInitialLocation()) & ~1u);
        bool lr_saved = false;
        std::vector<FrameRow> rows;
        for (const llvm::dwarf::UnwindRow& row : *table) {
            FrameRow r;
            r.start = uint32_t(row.hasAddress() ? row.getAddress() : fde->getInitialLocation());
            r.end = fde_end;
            const auto& cfa = row.getCFAValue();
            if (cfa.getLocation() == llvm::dwarf::UnwindLocation::RegPlusOffset &&
                cfa == llvm::dwarf::UnwindLocation::createIsRegisterPlusOffset(cfa.getRegister(), cfa.getOffset()) &&
                cfa.getRegister() < 16) {
                r.cfa_known = true;
                r.cfa_register = cfa.getRegister();
                r.cfa_offset = cfa.getOffset();
            }
            for (uint32_t reg = 0; reg < 16; ++reg)
                if (auto location = row.getRegisterLocations().getRegisterLocation(reg))
                    r.rules[reg] = rule_of(*location);
            lr_saved = lr_saved || r.rules[lr].kind == RegisterRule::Kind::at_cfa;
            r.lr_saved = lr_saved;
            if (!rows.empty())
                rows.back().end = r.start;
            rows.push_back(r);
        }
        impl_->rows.insert(impl_->rows.end(), rows.begin(), rows.end());
    }
    std::sort(impl_->rows.begin(), impl_->rows.end(),
              [](const FrameRow& a, const FrameRow& b) { return a.start < b.start; });
    std::sort(impl_->function_starts.begin(), impl_->function_starts.end());
}

Unwinder::~Unwinder() = default;

std::optional<uint32_t> Unwinder::initial_stack_pointer() const
{
    return impl_->initial_sp;
}

bool Unwinder::has_frame_info() const
{
    return !impl_->rows.empty();
}

UnwindResult Unwinder::unwind(const CoreRegisters& registers, StackMemory& memory, size_t max_depth) const
{
    UnwindResult result;
    std::vector<uint32_t>& callers = result.stack.callers;
    auto stop = [&](UnwindStop why) {
        result.stop = why;
        result.stack.truncated = why != UnwindStop::root;
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
        if (const FrameRow* row = impl_->find(leaf ? r[pc] : r[pc] - 2)) {
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
                if (rule.kind == RegisterRule::Kind::at_cfa) {
                    auto value = memory.read_word(cfa + uint32_t(rule.offset));
                    if (!value)
                        return stop(UnwindStop::unreadable);
                    caller[reg] = *value;
                } else if (rule.kind == RegisterRule::Kind::unsupported) {
                    return stop(UnwindStop::no_frame_info);
                }
            }
            // A function that has not saved LR yet returns through LR itself; one that
            // never saves it and is not the leaf cannot return at all: it is the root
            // (a reset handler, a task entry, a noreturn main).
            if (row->rules[lr].kind == RegisterRule::Kind::undefined || (!row->lr_saved && !leaf))
                return stop(UnwindStop::root);
            return_address = row->rules[lr].kind == RegisterRule::Kind::at_cfa ? caller[lr] : r[lr];
            caller[sp] = cfa;
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
