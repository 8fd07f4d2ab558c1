#include "mcuprof/image/unwind/thumb_code.h"

#include <algorithm>

#include "mcuprof/image/unwind/halted_core.h"
#include "mcuprof/image/symbols.h"

namespace mcuprof::core {
namespace {

using thumb_register::sp, thumb_register::pc;

int32_t sign_extend(uint32_t value, unsigned bits)
{
    const uint32_t sign = 1u << (bits - 1);
    return int32_t((value ^ sign) - sign);
}

// Where a branch at `address` goes, for the encodings a call or a tail call takes (A7.7.12 B,
// A7.7.18 BL), or nothing for any other instruction.
std::optional<uint32_t> branch_target(uint32_t address, uint16_t first, std::optional<uint16_t> second)
{
    const uint32_t base = address + 4;   // the PC a Thumb instruction reads
    if ((first & 0xF800u) == 0xE000u)    // B T2: imm11
        return base + uint32_t(sign_extend(uint32_t(first & 0x7FFu) << 1, 12));
    if ((first & 0xF000u) == 0xD000u && (first & 0x0E00u) != 0x0E00u)   // B<c> T1 (cond 111x: UDF, SVC)
        return base + uint32_t(sign_extend(uint32_t(first & 0xFFu) << 1, 9));
    if ((first & 0xF800u) != 0xF000u || !second)
        return std::nullopt;
    const uint32_t s = (first >> 10) & 1u, j1 = (*second >> 13) & 1u, j2 = (*second >> 11) & 1u;
    if ((*second & 0xD000u) == 0xD000u || (*second & 0xD000u) == 0x9000u) {   // BL T1, B T4
        const uint32_t i1 = ~(j1 ^ s) & 1u, i2 = ~(j2 ^ s) & 1u;
        const uint32_t imm = s << 24 | i1 << 23 | i2 << 22 | uint32_t(first & 0x3FFu) << 12 | uint32_t(*second & 0x7FFu) << 1;
        return base + uint32_t(sign_extend(imm, 25));
    }
    if ((*second & 0xD000u) == 0x8000u && (first & 0x0380u) != 0x0380u) {   // B<c> T3 (cond 111x: other instructions)
        const uint32_t imm = s << 20 | j2 << 19 | j1 << 18 | uint32_t(first & 0x3Fu) << 12 | uint32_t(*second & 0x7FFu) << 1;
        return base + uint32_t(sign_extend(imm, 21));
    }
    return std::nullopt;
}

} // namespace

std::vector<uint32_t> direct_branch_targets(const SymbolTable& code)
{
    std::vector<uint32_t> targets;
    for (const CodeSection& section : code.code_sections()) {
        const std::vector<uint8_t>& bytes = section.bytes;
        auto halfword_at = [&](size_t offset) { return uint16_t(bytes[offset] | bytes[offset + 1] << 8); };
        for (size_t offset = 0; offset + 2 <= bytes.size();) {
            const uint16_t first = halfword_at(offset);
            const bool wide = starts_32_bit(first);
            const std::optional<uint16_t> second =
                wide && offset + 4 <= bytes.size() ? std::optional<uint16_t>(halfword_at(offset + 2)) : std::nullopt;
            if (const std::optional<uint32_t> target = branch_target(section.start + uint32_t(offset), first, second))
                targets.push_back(*target);
            offset += wide ? 4 : 2;
        }
    }
    std::sort(targets.begin(), targets.end());
    targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
    return targets;
}

EpilogueResult run_epilogue(const SymbolTable& code, std::array<uint32_t, 16>& registers, StackMemory& memory)
{
    std::array<uint32_t, 16> r = registers;
    uint32_t popped = 0;   // the registers this epilogue has popped
    // Pops the registers of `list` (bit n: register n) from SP, lowest first (A7.7.98 POP).
    auto pop = [&](uint32_t list) {
        popped |= list;
        for (uint32_t reg = 0; reg < 16; ++reg) {
            if ((list & (1u << reg)) == 0)
                continue;
            const std::optional<uint32_t> value = memory.read_word(r[sp]);
            if (!value)
                return false;
            r[reg] = *value;
            r[sp] += 4;
        }
        return true;
    };
    uint32_t address = r[pc];
    for (int count = 0; count < 16; ++count) {
        const std::optional<uint16_t> first = code.halfword(address);
        if (!first)
            return EpilogueResult::not_epilogue;
        std::optional<uint32_t> list;   // a POP's registers
        uint32_t size = 2;
        if ((*first & 0xFE00u) == 0xBC00u) {                        // POP T1: r0-r7, bit 8 PC
            list = (*first & 0xFFu) | ((*first & 0x100u) << 7);
        } else if ((*first & 0xFF00u) == 0x4600u) {                 // MOV T1: Rd = D:Rd, Rm
            const uint32_t d = ((*first >> 4) & 8u) | (*first & 7u), m = (*first >> 3) & 0xFu;
            if (d == pc || m == pc)
                return EpilogueResult::not_epilogue;   // a branch, or PC read
            r[d] = r[m];
        } else if ((*first & 0xFF80u) == 0xB000u) {                 // ADD SP, SP, #imm7:'00' (T2)
            r[sp] += uint32_t(*first & 0x7Fu) << 2;
        } else if ((*first & 0xFF87u) == 0x4700u) {                 // BX Rm
            // A return through LR or a register the epilogue popped (ARMv6-M's pop {r3}; bx r3);
            // a BX through another register is a jump (a linker's long-branch veneer: ldr r0,
            // =target; mov ip, r0; pop {r0}; bx ip).
            const uint32_t m = (*first >> 3) & 0xFu;
            if (m == pc || (m != 14 && (popped & (1u << m)) == 0))
                return EpilogueResult::not_epilogue;
            r[pc] = r[m];
            registers = r;
            return EpilogueResult::returned;
        } else if (starts_32_bit(*first)) {
            const std::optional<uint16_t> second = code.halfword(address + 2);
            if (!second)
                return EpilogueResult::not_epilogue;
            size = 4;
            if (*first == 0xE8BDu && (*second & 0x2000u) == 0) {                 // POP.W T2 (LDMIA SP!)
                list = *second;
            } else if (*first == 0xF85Du && (*second & 0x0FFFu) == 0x0B04u) {   // POP.W T3: LDR Rt, [SP], #4
                list = 1u << (*second >> 12);
            } else if ((*first & 0xFFBFu) == 0xECBDu && (*second & 0x0E00u) == 0x0A00u) {   // VPOP: imm8 words
                r[sp] += uint32_t(*second & 0xFFu) << 2;
            } else {
                return EpilogueResult::not_epilogue;
            }
        } else {
            return EpilogueResult::not_epilogue;
        }
        if (list) {
            if ((*list & (1u << sp)) != 0 || *list == 0)
                return EpilogueResult::not_epilogue;   // UNPREDICTABLE
            if (!pop(*list))
                return EpilogueResult::unreadable;
            if ((*list & (1u << pc)) != 0) {
                registers = r;
                return EpilogueResult::returned;
            }
        }
        address += size;
    }
    return EpilogueResult::not_epilogue;
}

// A wait that ends at pc: 32 bits from pc - 4 (0xF3AF first), else 16 from pc - 2.
bool follows_wait_instruction(const SymbolTable& code, uint32_t pc)
{
    if (const std::optional<uint16_t> wide = code.halfword(pc - 4); wide && *wide == 0xF3AF)
        return is_wait_instruction(code, pc - 4);
    const std::optional<uint16_t> narrow = code.halfword(pc - 2);
    return narrow && *narrow != 0xF3AF && is_wait_instruction(code, pc - 2);
}

bool is_wait_instruction(const SymbolTable& code, uint32_t pc)
{
    const std::optional<uint16_t> first = code.halfword(pc);
    if (!first)
        return false;
    if (*first == 0xF3AF) {   // WFI.W, WFE.W
        const std::optional<uint16_t> second = code.halfword(pc + 2);
        return second && (*second == 0x8003 || *second == 0x8002);
    }
    const std::optional<uint16_t> before = code.halfword(pc - 2);
    return (*first == 0xBF30 || *first == 0xBF20) && !(before && starts_32_bit(*before));
}

bool pc_shows_sleep(const SymbolTable& code, uint32_t pc, bool reads_pcsr)
{
    return follows_wait_instruction(code, pc) || (reads_pcsr && is_wait_instruction(code, pc));
}

} // namespace mcuprof::core

