#include "mcuprof/image/unwind/call_frames.h"

#include <optional>

#include <llvm/BinaryFormat/Dwarf.h>
#include <llvm/DebugInfo/DWARF/DWARFContext.h>
#include <llvm/DebugInfo/DWARF/DWARFDebugFrame.h>
#include <llvm/Support/Error.h>

#include "firmware_object.h"
#include "mcuprof/image/error.h"
#include "mcuprof/image/firmware.h"
#include "mcuprof/cortex_m.h"

namespace mcuprof::core {
namespace {

// The state the CFI instructions change: the CFA rule and one rule per register.
struct FrameState {
    bool cfa_known = false;
    uint32_t cfa_register = cortex_m::core_reg::sp;
    int32_t cfa_offset = 0;
    std::array<RegisterRule, frame_registers> rules{};
};

struct BadInstructions {};   // this FDE's instructions cannot be evaluated

// Runs one instruction list (DWARF 5, 6.4.2), appending a row at every advance of the
// location. `initial` is the state after the CIE's initial instructions (what
// DW_CFA_restore goes back to); null while running those.
class Evaluator {
public:
    Evaluator(uint64_t code_align, int64_t data_align, uint32_t location)
        : code_align_(code_align), data_align_(data_align), location_(location) {}

    FrameState state;
    std::vector<FrameRow> rows;

    void run(const llvm::dwarf::CFIProgram& program, const FrameState* initial)
    {
        for (const llvm::dwarf::CFIProgram::Instruction& instruction : program)
            step(instruction, initial);
    }

    // The row in force from the current location to `end`.
    void finish(uint32_t end)
    {
        emit();
        for (size_t i = 0; i + 1 < rows.size(); ++i)
            rows[i].end = rows[i + 1].start;
        if (!rows.empty())
            rows.back().end = end;
    }

private:
    uint64_t code_align_;
    int64_t data_align_;
    uint32_t location_;
    std::vector<FrameState> remembered_;

    void emit()
    {
        FrameRow row;
        row.start = location_;
        row.cfa_known = state.cfa_known;
        row.cfa_register = state.cfa_register;
        row.cfa_offset = state.cfa_offset;
        row.rules = state.rules;
        if (!rows.empty() && rows.back().start == location_)
            rows.back() = row;   // two advances to one address: the later rules hold
        else
            rows.push_back(row);
    }

    void advance_to(uint64_t location)
    {
        emit();
        location_ = uint32_t(location);
    }

    static uint64_t op(const llvm::dwarf::CFIProgram::Instruction& instruction, size_t i)
    {
        if (i >= instruction.Ops.size())
            throw BadInstructions{};
        return instruction.Ops[i];
    }
    // LLVM keeps SLEB128 operands as their two's complement in a uint64_t.
    static int64_t signed_op(const llvm::dwarf::CFIProgram::Instruction& instruction, size_t i)
    {
        return int64_t(op(instruction, i));
    }

    RegisterRule* rule(uint64_t reg)
    {
        // Registers beyond r15 (the VFP registers, 256 and up) play no part in finding the
        // caller's PC and SP; their rules are read and dropped.
        return reg < frame_registers ? &state.rules[reg] : nullptr;
    }
    void set(uint64_t reg, RegisterRule value)
    {
        if (RegisterRule* r = rule(reg))
            *r = value;
    }
    void saved_at(uint64_t reg, int64_t offset, RegisterRule::Kind kind = RegisterRule::Kind::at_cfa)
    {
        set(reg, {kind, int32_t(offset), 0});
    }

    void step(const llvm::dwarf::CFIProgram::Instruction& instruction, const FrameState* initial)
    {
        namespace dw = llvm::dwarf;
        const int64_t data = data_align_;
        switch (instruction.Opcode) {
        case dw::DW_CFA_nop:
        case dw::DW_CFA_GNU_args_size:
            return;
        case dw::DW_CFA_advance_loc:
        case dw::DW_CFA_advance_loc1:
        case dw::DW_CFA_advance_loc2:
        case dw::DW_CFA_advance_loc4:
            return advance_to(location_ + op(instruction, 0) * code_align_);
        case dw::DW_CFA_set_loc:
            return advance_to(op(instruction, 0));
        case dw::DW_CFA_def_cfa:
            state.cfa_register = uint32_t(op(instruction, 0));
            state.cfa_offset = int32_t(op(instruction, 1));
            state.cfa_known = true;
            break;
        case dw::DW_CFA_def_cfa_sf:
            state.cfa_register = uint32_t(op(instruction, 0));
            state.cfa_offset = int32_t(signed_op(instruction, 1) * data);
            state.cfa_known = true;
            break;
        case dw::DW_CFA_def_cfa_register:
            state.cfa_register = uint32_t(op(instruction, 0));
            break;
        case dw::DW_CFA_def_cfa_offset:
            state.cfa_offset = int32_t(op(instruction, 0));
            break;
        case dw::DW_CFA_def_cfa_offset_sf:
            state.cfa_offset = int32_t(signed_op(instruction, 0) * data);
            break;
        case dw::DW_CFA_def_cfa_expression:
            state.cfa_known = false;
            return;
        case dw::DW_CFA_offset:
        case dw::DW_CFA_offset_extended:
            return saved_at(op(instruction, 0), int64_t(op(instruction, 1)) * data);
        case dw::DW_CFA_offset_extended_sf:
            return saved_at(op(instruction, 0), signed_op(instruction, 1) * data);
        case dw::DW_CFA_val_offset:
            return saved_at(op(instruction, 0), int64_t(op(instruction, 1)) * data, RegisterRule::Kind::is_cfa);
        case dw::DW_CFA_val_offset_sf:
            return saved_at(op(instruction, 0), signed_op(instruction, 1) * data, RegisterRule::Kind::is_cfa);
        case dw::DW_CFA_register:
            return set(op(instruction, 0), {RegisterRule::Kind::in_register, 0, uint32_t(op(instruction, 1))});
        case dw::DW_CFA_undefined:
            return set(op(instruction, 0), {RegisterRule::Kind::undefined});
        case dw::DW_CFA_same_value:
            return set(op(instruction, 0), {RegisterRule::Kind::same_value});
        case dw::DW_CFA_expression:
        case dw::DW_CFA_val_expression:
            return set(op(instruction, 0), {RegisterRule::Kind::expression});
        case dw::DW_CFA_restore:
        case dw::DW_CFA_restore_extended:
            if (initial == nullptr)
                throw BadInstructions{};   // no initial rules to go back to inside the CIE
            if (RegisterRule* r = rule(op(instruction, 0)))
                *r = initial->rules[op(instruction, 0)];
            return;
        case dw::DW_CFA_remember_state:
            // The whole state, CFA rule included: GCC pairs remember/restore around an early
            // exit whose epilogue changes the CFA, and the rows after it need the CFA back.
            remembered_.push_back(state);
            return;
        case dw::DW_CFA_restore_state:
            if (remembered_.empty())
                throw BadInstructions{};
            state = remembered_.back();
            remembered_.pop_back();
            return;
        default:
            throw BadInstructions{};
        }
        if (state.cfa_register >= frame_registers)
            throw BadInstructions{};
    }
};

std::optional<FrameFunction> evaluate(const llvm::dwarf::FDE& fde)
{
    const llvm::dwarf::CIE* cie = fde.getLinkedCIE();
    if (cie == nullptr)
        return std::nullopt;
    const uint32_t start = uint32_t(fde.getInitialLocation());
    try {
        Evaluator evaluator(cie->getCodeAlignmentFactor(), cie->getDataAlignmentFactor(), start);
        evaluator.run(cie->cfis(), nullptr);
        evaluator.rows.clear();   // the CIE's own instructions set the state, not rows
        const FrameState initial = evaluator.state;
        evaluator.run(fde.cfis(), &initial);
        FrameFunction function;
        function.start = start;
        function.end = uint32_t(start + fde.getAddressRange());
        evaluator.finish(function.end);
        function.rows = std::move(evaluator.rows);
        return function;
    } catch (const BadInstructions&) {
        return std::nullopt;
    }
}

} // namespace

std::vector<FrameFunction> read_call_frames(const Image& image)
{
    // .debug_frame only: LLVM reads it by itself, not through the debugging entries, so the
    // DWARF check (of .debug_info) is not needed for it.
    auto frames = dwarf_of(image).getDebugFrame();
    if (!frames)
        throw Error(image.path(), ".debug_frame",
                    "cannot read the call-frame information: " + llvm::toString(frames.takeError()));
    std::vector<FrameFunction> functions;
    for (const llvm::dwarf::FrameEntry& entry : (*frames)->entries())
        if (const auto* fde = llvm::dyn_cast<llvm::dwarf::FDE>(&entry))
            if (auto function = evaluate(*fde))
                functions.push_back(std::move(*function));
    return functions;
}

} // namespace mcuprof::core
