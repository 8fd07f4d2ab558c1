#include "mcuprof/image/unwind/thumb_decoder.h"

#include "mcuprof/image/symbols.h"

namespace mcuprof::core {
namespace {

int32_t sign_extend(uint32_t value, unsigned bits)
{
    const uint32_t sign = 1u << (bits - 1);
    return int32_t((value ^ sign) - sign);
}

// ThumbExpandImm (A5.3.2) of i:imm3:imm8.
uint32_t thumb_expand_immediate(uint32_t imm12)
{
    const uint32_t imm8 = imm12 & 0xFFu;
    if ((imm12 >> 10) == 0) {
        switch ((imm12 >> 8) & 3u) {
        case 0: return imm8;
        case 1: return imm8 << 16 | imm8;
        case 2: return imm8 << 24 | imm8 << 8;
        default: return imm8 << 24 | imm8 << 16 | imm8 << 8 | imm8;
        }
    }
    const uint32_t unrotated = 0x80u | (imm12 & 0x7Fu), rotation = imm12 >> 7;
    return (unrotated >> rotation) | (unrotated << (32 - rotation));
}

// i:imm3:imm8 of a 32-bit data-processing (modified or plain immediate) instruction (A5.3.1, A5.3.3).
uint32_t imm12_of(uint16_t first, uint16_t second)
{
    return uint32_t(first & 0x0400u) << 1 | uint32_t(second & 0x7000u) >> 4 | uint32_t(second & 0xFFu);
}

ThumbInstruction make(ThumbKind kind, uint32_t length, uint32_t encoding)
{
    ThumbInstruction instruction;
    instruction.kind = kind;
    instruction.length = length;
    instruction.encoding = encoding;
    return instruction;
}

// Special data instructions and branch and exchange (A5.2.3): D:Rd in bits 7 and 2:0, Rm in 6:3.
ThumbInstruction decode_special_data(uint16_t first)
{
    const uint32_t d = (uint32_t(first >> 4) & 8u) | (first & 7u), m = (uint32_t(first) >> 3) & 0xFu;
    ThumbInstruction instruction;
    if ((first & 0xFF00u) == 0x4600u)
        instruction = make(ThumbKind::mov_register, 2, 1);
    else if ((first & 0xFF00u) == 0x4400u)
        instruction = make(ThumbKind::add_register, 2, 2);
    else if ((first & 0xFF87u) == 0x4700u)
        instruction = make(ThumbKind::bx, 2, 1);
    else if ((first & 0xFF80u) == 0x4780u)
        instruction = make(ThumbKind::blx_register, 2, 1);
    else
        return instruction;
    instruction.d = instruction.kind == ThumbKind::bx || instruction.kind == ThumbKind::blx_register ? 0 : d;
    instruction.m = m;
    return instruction;
}

ThumbInstruction decode_16(uint16_t first)
{
    ThumbInstruction instruction;
    if ((first & 0xFC00u) == 0x4400u)
        return decode_special_data(first);
    if ((first & 0xFE00u) == 0xB400u) {                       // PUSH T1: r0-r7, bit 8 LR
        instruction = make(ThumbKind::push, 2, 1);
        instruction.registers = (first & 0xFFu) | (first & 0x100u) << 6;
    } else if ((first & 0xFE00u) == 0xBC00u) {                // POP T1: r0-r7, bit 8 PC
        instruction = make(ThumbKind::pop, 2, 1);
        instruction.registers = (first & 0xFFu) | (first & 0x100u) << 7;
    } else if ((first & 0xFF80u) == 0xB080u) {                // SUB SP, SP, #imm7:'00' (T1)
        instruction = make(ThumbKind::sub_sp_immediate, 2, 1);
        instruction.d = reg::sp;
        instruction.imm = uint32_t(first & 0x7Fu) << 2;
    } else if ((first & 0xFF80u) == 0xB000u) {                // ADD SP, SP, #imm7:'00' (T2)
        instruction = make(ThumbKind::add_sp_immediate, 2, 2);
        instruction.d = reg::sp;
        instruction.imm = uint32_t(first & 0x7Fu) << 2;
    } else if ((first & 0xF800u) == 0xA800u) {                // ADD Rd, SP, #imm8:'00' (T1)
        instruction = make(ThumbKind::add_sp_immediate, 2, 1);
        instruction.d = (uint32_t(first) >> 8) & 7u;
        instruction.imm = uint32_t(first & 0xFFu) << 2;
    } else if ((first & 0xF800u) == 0xE000u) {                // B T2: imm11
        instruction = make(ThumbKind::branch, 2, 2);
        instruction.offset = sign_extend(uint32_t(first & 0x7FFu) << 1, 12);
    } else if ((first & 0xF000u) == 0xD000u && (first & 0x0E00u) != 0x0E00u) {   // B<c> T1 (cond 111x: UDF, SVC)
        instruction = make(ThumbKind::branch, 2, 1);
        instruction.offset = sign_extend(uint32_t(first & 0xFFu) << 1, 9);
    } else if (first == 0xBF30u) {
        instruction = make(ThumbKind::wfi, 2, 1);
    } else if (first == 0xBF20u) {
        instruction = make(ThumbKind::wfe, 2, 1);
    }
    return instruction;
}

// Branches and miscellaneous control (A5.3.4): first halfword 11110, second 1xxx.
ThumbInstruction decode_branch_32(uint16_t first, uint16_t second)
{
    const uint32_t s = (first >> 10) & 1u, j1 = (second >> 13) & 1u, j2 = (second >> 11) & 1u;
    ThumbInstruction instruction = make(ThumbKind::other, 4, 0);
    if ((second & 0xD000u) == 0xD000u || (second & 0xD000u) == 0x9000u) {   // BL T1, B T4
        const uint32_t i1 = ~(j1 ^ s) & 1u, i2 = ~(j2 ^ s) & 1u;
        const uint32_t imm = s << 24 | i1 << 23 | i2 << 22 | uint32_t(first & 0x3FFu) << 12 | uint32_t(second & 0x7FFu) << 1;
        instruction = (second & 0xD000u) == 0xD000u ? make(ThumbKind::bl, 4, 1) : make(ThumbKind::branch, 4, 4);
        instruction.offset = sign_extend(imm, 25);
    } else if ((second & 0xD000u) == 0xC000u) {
        instruction = make(ThumbKind::blx_immediate, 4, 2);
    } else if ((second & 0xD000u) == 0x8000u && (first & 0x0380u) != 0x0380u) {   // B<c> T3 (cond 111x: other instructions)
        const uint32_t imm = s << 20 | j2 << 19 | j1 << 18 | uint32_t(first & 0x3Fu) << 12 | uint32_t(second & 0x7FFu) << 1;
        instruction = make(ThumbKind::branch, 4, 3);
        instruction.offset = sign_extend(imm, 21);
    } else if (first == 0xF3AFu && second == 0x8003u) {   // hint T2 (A5.3.4): WFI.W
        instruction = make(ThumbKind::wfi, 4, 2);
    } else if (first == 0xF3AFu && second == 0x8002u) {   // WFE.W
        instruction = make(ThumbKind::wfe, 4, 2);
    }
    return instruction;
}

// Load word (A5.3.7): LDR immediate T3 (0xF8Dx), T4, LDR register T2, LDRT, LDR literal
// (0xF85x); among them POP T3, LDR Rt, [SP], #4.
ThumbInstruction decode_load_word(uint16_t first, uint16_t second)
{
    const uint32_t t = uint32_t(second) >> 12;
    if (first == 0xF85Du && (second & 0x0FFFu) == 0x0B04u) {
        ThumbInstruction instruction = make(ThumbKind::pop, 4, 3);
        instruction.registers = reg::bit(t);
        return instruction;
    }
    ThumbInstruction instruction = make(ThumbKind::load_word, 4, (first & 0xFFF0u) == 0xF8D0u ? 3 : 4);
    instruction.d = t;
    return instruction;
}

ThumbInstruction decode_32(uint16_t first, uint16_t second)
{
    ThumbInstruction instruction = make(ThumbKind::other, 4, 0);
    if (first == 0xE92Du && (second & 0xA000u) == 0) {                          // PUSH T2 (STMDB SP!)
        instruction = make(ThumbKind::push, 4, 2);
        instruction.registers = second;
    } else if (first == 0xF84Du && (second & 0x0FFFu) == 0x0D04u) {             // PUSH T3: STR Rt, [SP, #-4]!
        instruction = make(ThumbKind::push, 4, 3);
        instruction.registers = reg::bit(uint32_t(second) >> 12);
    } else if (first == 0xE8BDu) {   // POP T2 (LDMIA SP!); bit 13, SP, is (0): UNPREDICTABLE, left to the reader
        instruction = make(ThumbKind::pop, 4, 2);
        instruction.registers = second;
    } else if ((first & 0xFFF0u) == 0xF850u || (first & 0xFFF0u) == 0xF8D0u) {
        instruction = decode_load_word(first, second);
    } else if ((first & 0xFBFFu) == 0xF1ADu && (second & 0x8F00u) == 0x0D00u) {   // SUB.W SP, SP, #const (T2)
        instruction = make(ThumbKind::sub_sp_immediate, 4, 2);
        instruction.d = reg::sp;
        instruction.imm = thumb_expand_immediate(imm12_of(first, second));
    } else if ((first & 0xFBFFu) == 0xF2ADu && (second & 0x8F00u) == 0x0D00u) {   // SUBW SP, SP, #imm12 (T3)
        instruction = make(ThumbKind::sub_sp_immediate, 4, 3);
        instruction.d = reg::sp;
        instruction.imm = imm12_of(first, second);
    } else if (((first & 0xFFBFu) == 0xED2Du || (first & 0xFFBFu) == 0xECBDu) && (second & 0x0E00u) == 0x0A00u) {
        // VPUSH / VPOP: T1 doubles (bits 11:8 0b1011), T2 singles (0b1010); imm8 words either way
        instruction = make((first & 0xFFBFu) == 0xED2Du ? ThumbKind::vpush : ThumbKind::vpop, 4, (second & 0x0100u) != 0 ? 1 : 2);
        instruction.imm = uint32_t(second & 0xFFu) << 2;
    } else if ((first & 0xF800u) == 0xF000u && (second & 0x8000u) != 0) {
        instruction = decode_branch_32(first, second);
    }
    return instruction;
}

} // namespace

std::optional<ThumbInstruction> decode_thumb(uint16_t first, std::optional<uint16_t> second)
{
    if (!starts_32_bit(first))
        return decode_16(first);
    if (!second)
        return std::nullopt;
    return decode_32(first, *second);
}

std::optional<ThumbInstruction> decode_thumb(const SymbolTable& code, uint32_t address)
{
    const std::optional<uint16_t> first = code.halfword(address);
    if (!first)
        return std::nullopt;
    return decode_thumb(*first, starts_32_bit(*first) ? code.halfword(address + 2) : std::nullopt);
}

} // namespace mcuprof::core
