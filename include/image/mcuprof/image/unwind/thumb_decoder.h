#pragma once
// One Thumb instruction decoded, for the unwinder's scanners (prologue, epilogue, branch
// targets, wait instructions): the few encodings they act on, each named by its section of the
// ARMv7-M Architecture Reference Manual (DDI 0403E, A5 "The Thumb Instruction Set Encoding",
// A7.7); ARMv6-M's and ARMv8-M's are the same encodings. Anything else is `other`, with its
// length.
#include <cstdint>
#include <optional>

#include "mcuprof/cortex_m.h"

namespace mcuprof::core {

class SymbolTable;

namespace reg = cortex_m::core_reg;

// Whether a halfword begins a 32-bit Thumb instruction: bits 15:11 are 0b11101, 0b11110 or
// 0b11111 (A5.1).
constexpr bool starts_32_bit(uint16_t first_halfword)
{
    return (first_halfword >> 11) >= 0x1Du;
}

enum class ThumbKind {
    other,
    push,             // PUSH T1 (r0-r7, LR), T2 (STMDB SP!), T3 (STR Rt, [SP, #-4]!): A7.7.99
    pop,              // POP T1 (r0-r7, PC), T2 (LDMIA SP!), T3 (LDR Rt, [SP], #4): A7.7.98
    mov_register,     // MOV (register) T1, Rd = D:Rd, Rm: A7.7.77
    add_register,     // ADD (register) T2, Rdn = DN:Rdn, Rm: A7.7.4
    add_sp_immediate, // ADD (SP plus immediate) T1 (Rd, SP, #imm8:'00'), T2 (SP, SP, #imm7:'00'): A7.7.5
    sub_sp_immediate, // SUB (SP minus immediate) T1, T2 (ThumbExpandImm), T3 (SUBW): A7.7.174
    vpush,            // VPUSH T1, T2 (imm8 words): A7.7.249
    vpop,             // VPOP T1, T2 (imm8 words): A7.7.248
    bx,               // BX Rm: A7.7.20
    blx_register,     // BLX Rm: A7.7.19
    bl,               // BL T1: A7.7.18
    blx_immediate,    // BLX (immediate) T2, 10x1 bit 12 zero: ARMv7-M has none; it writes LR all the same
    branch,           // B T1 (cond), T2, T3 (cond), T4: A7.7.12
    load_word,        // a 32-bit LDR with Rt in bits 15:12 (first halfword 0xF85x, 0xF8Dx): A7.7.42-A7.7.44
    wfi,              // WFI T1, T2: A7.7.261
    wfe,              // WFE T1, T2: A7.7.260
};

struct ThumbInstruction {
    ThumbKind kind = ThumbKind::other;
    uint32_t length = 2;         // bytes: 2 or 4
    uint32_t d = 0;              // Rd, Rdn or Rt (load_word; add_sp_immediate's Rd)
    uint32_t m = 0;              // Rm
    uint32_t registers = 0;      // push, pop: bit n is register n
    uint32_t imm = 0;            // add/sub SP, vpush, vpop: bytes
    int32_t offset = 0;          // branch, bl: the target less the PC the instruction reads (its address + 4)
    uint32_t encoding = 0;       // the encoding's number, n of Tn

    bool is_wait() const { return kind == ThumbKind::wfi || kind == ThumbKind::wfe; }
};

// Decodes the instruction whose first halfword is `first`; `second` is read for a 32-bit one.
// Nothing when it is 32 bits long and `second` is missing.
std::optional<ThumbInstruction> decode_thumb(uint16_t first, std::optional<uint16_t> second);

// Decodes the instruction at `address` of the image's code; nothing when it cannot be read.
std::optional<ThumbInstruction> decode_thumb(const SymbolTable& code, uint32_t address);

} // namespace mcuprof::core
