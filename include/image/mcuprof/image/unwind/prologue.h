#pragma once
// A function's frame read from its code, for code that has neither DWARF call-frame information
// nor an exception-table entry (assembly startup files and helpers, libraries built without
// unwind tables): the Thumb prologue from the function's first instruction up to the halted PC,
// the way a debugger's prologue analyser reads it. Encodings: ARMv7-M Architecture Reference
// Manual (DDI 0403), A7.7 (PUSH A7.7.99, STMDB A7.7.160, STR A7.7.161, SUB (SP minus
// immediate) A7.7.174, ADD (SP plus immediate) A7.7.5, MOV (register) A7.7.77, VPUSH
// A7.7.249); ThumbExpandImm A5.3.2. ARMv6-M's are a subset.
#include <array>
#include <cstdint>
#include <optional>

#include "mcuprof/cortex_m.h"

namespace mcuprof::core {

class SymbolTable;

// What the prologue has done by the halted PC: the frame's size, and where each register the
// function saved lies, as a distance below the caller's SP (the CFA).
struct PrologueFrame {
    uint32_t size = 0;                              // bytes below the CFA: CFA = SP + size
    std::optional<uint32_t> cfa_above_r7;           // set up as a frame pointer: CFA = r7 + this
    std::array<std::optional<uint32_t>, 16> saved_below_cfa{};   // register n saved at CFA - this
    // Where the return address is when the prologue has not stored it: LR, or the register a
    // MOV copied it to (ARMv6-M code moves high registers through low ones before pushing).
    uint32_t return_register = cortex_m::core_reg::lr;
    // An instruction of the body may overwrite LR (a call, a load or move into LR; swept to
    // the function's end, since a loop may have run it before the PC): for a halted frame that
    // saved nothing, LR is no sure return address then.
    bool lr_written = false;

    bool return_saved() const { return saved_below_cfa[cortex_m::core_reg::lr].has_value(); }
};

// Runs the prologue of the function [start, end) symbolically up to (not including) `pc`: PUSH, PUSH.W (STMDB SP! and STR Rt, [SP, #-4]!), SUB SP, #imm (16 and 32 bit, SUBW),
// VPUSH, ADD r7, SP, #imm and MOV between registers. The first other instruction ends the
// prologue: from there the body is taken to leave SP where the prologue put it (r7 where the
// prologue made it the frame pointer). Nothing when the code cannot be read, or when an
// instruction of the prologue changes SP or LR otherwise (POP, a move into SP, PC or LR).
std::optional<PrologueFrame> read_prologue(const SymbolTable& code, uint32_t start, uint32_t end, uint32_t pc);

} // namespace mcuprof::core
