#pragma once
// The call-frame table of an ELF (.debug_frame, DWARF 5 section 6.4): for every function,
// the rows that say, from one address on, where the caller's SP (the CFA) and each saved
// register are. LLVM parses the CIE and FDE instructions; the rows are evaluated here,
// because LLVM 14's UnwindTable drops the CFA rule on DW_CFA_restore_state.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "mcuprof/cortex_m.h"

namespace mcuprof::core {

class Image;

// How to recover one register in the caller (DWARF 5, 6.4.1 "register rules").
struct RegisterRule {
    enum class Kind {
        unspecified,   // no rule given: the unwinder takes it as unchanged
        same_value,    // DW_CFA_same_value
        undefined,     // DW_CFA_undefined: not recoverable (on the return address: the outermost frame)
        at_cfa,        // saved at CFA + offset (DW_CFA_offset and relatives)
        is_cfa,        // the value is CFA + offset (DW_CFA_val_offset)
        in_register,   // held in another register (DW_CFA_register)
        expression,    // a DWARF expression (DW_CFA_expression, DW_CFA_val_expression): not evaluated
    } kind = Kind::unspecified;
    int32_t offset = 0;        // at_cfa, is_cfa
    uint32_t register_ = 0;    // in_register

};

constexpr uint32_t frame_registers = 16;   // r0-r12, sp, lr, pc: the DWARF numbers of the core registers

// One row of a function's call-frame table, in force over [start, end).
struct FrameRow {
    uint32_t start = 0;
    uint32_t end = 0;
    bool cfa_known = false;     // false: DW_CFA_def_cfa_expression, not evaluated
    uint32_t cfa_register = cortex_m::core_reg::sp;
    int32_t cfa_offset = 0;
    std::array<RegisterRule, frame_registers> rules{};
};

// One FDE's rows, in address order, covering [start, end).
struct FrameFunction {
    uint32_t start = 0;
    uint32_t end = 0;
    std::vector<FrameRow> rows;
};

// Every FDE of .debug_frame with its rows (none when the section is absent). An FDE whose
// instructions cannot be evaluated (an unknown opcode, restore_state without remember_state,
// a register beyond r15 in a CFA rule) is left out: its function has no frame information.
// Throws core::Error naming the file when the section cannot be read.
std::vector<FrameFunction> read_call_frames(const Image& image);

} // namespace mcuprof::core
