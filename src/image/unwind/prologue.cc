#include "mcuprof/image/unwind/prologue.h"

#include "mcuprof/image/symbols.h"
#include "mcuprof/image/unwind/thumb_code.h"

namespace mcuprof::core {
namespace {

using thumb_register::r7, thumb_register::sp, thumb_register::lr;
constexpr uint32_t pc_register = thumb_register::pc;   // `pc` names the halted PC here
constexpr int most_instructions = 64;   // a prologue is a handful; this bounds a runaway scan

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

// i:imm3:imm8 of a 32-bit data-processing (modified or plain immediate) instruction.
uint32_t imm12_of(uint16_t first, uint16_t second)
{
    return uint32_t(first & 0x0400u) << 1 | uint32_t(second & 0x7000u) >> 4 | uint32_t(second & 0xFFu);
}

// The symbolic state of the prologue: how far SP has moved, and which original register each
// register holds (a MOV copies; a PUSH saves the original the pushed register holds).
class PrologueRun {
public:
    PrologueRun()
    {
        for (uint32_t reg = 0; reg < 16; ++reg)
            holds_[reg] = reg;
    }

    // Pushes the registers of `list` (bit n: register n): the highest at the highest address.
    bool push(uint32_t list)
    {
        if (list == 0 || (list & (1u << sp | 1u << pc_register)) != 0)
            return false;   // UNPREDICTABLE, or not a prologue
        uint32_t count = 0;
        for (uint32_t reg = 0; reg < 16; ++reg)
            count += (list >> reg) & 1u;
        uint32_t below = frame_.size + 4 * count;   // the lowest register's slot
        for (uint32_t reg = 0; reg < 16; ++reg) {
            if ((list & (1u << reg)) == 0)
                continue;
            if (holds_[reg] != nothing) {
                std::optional<uint32_t>& slot = frame_.saved_below_cfa[holds_[reg]];
                if (!slot)   // a register pushed twice keeps its first, the caller's, value
                    slot = below;
            }
            below -= 4;
        }
        frame_.size += 4 * count;
        return true;
    }

    void allocate(uint32_t bytes) { frame_.size += bytes; }

    // MOV Rd, Rm.
    bool move(uint32_t d, uint32_t m)
    {
        if (d == r7 && m == sp) {
            frame_.cfa_above_r7 = frame_.size;
            holds_[d] = nothing;   // r7 is the frame pointer now, not the caller's r7
            return true;
        }
        if (d == sp || d == pc_register || d == lr || m == pc_register)
            return false;
        holds_[d] = holds_[m];
        return true;
    }

    // ADD r7, SP, #imm: the frame pointer, `imm` above SP.
    void frame_pointer(uint32_t imm)
    {
        frame_.cfa_above_r7 = frame_.size - imm;
        holds_[r7] = nothing;
    }

    // LR itself holds the return address all through a prologue (a move into LR ends the
    // read), but a call in the body overwrites it: a copy in a callee-saved register
    // (r4-r11) survives the calls.
    PrologueFrame finish()
    {
        frame_.return_register = lr;
        for (uint32_t reg = 4; reg <= 11; ++reg)
            if (holds_[reg] == lr) {
                frame_.return_register = reg;
                break;
            }
        return frame_;
    }

private:
    static constexpr uint32_t nothing = 16;   // a register that holds no caller's register
    PrologueFrame frame_;
    std::array<uint32_t, 16> holds_{};
};

// Whether an instruction from `address` up to `end`, swept linearly, may write LR: a
// BL or BLX, a MOV or ADD into LR, a POP or LDR of LR (A7.7.18, A7.7.19, A7.7.77, A7.7.4,
// A7.7.99, A7.7.43). A literal pool decoded as instructions can only add a false "yes".
bool writes_lr_between(const SymbolTable& code, uint32_t address, uint32_t end)
{
    for (int count = 0; address < end; ++count) {
        if (count == 4096)
            return true;   // too long to sweep: no sure answer
        const std::optional<uint16_t> first = code.halfword(address);
        if (!first)
            return true;
        if (!starts_32_bit(*first)) {
            if ((*first & 0xFF80u) == 0x4780u)                                  // BLX Rm
                return true;
            if ((*first & 0xFD00u) == 0x4400u && (*first & 0x87u) == 0x86u)   // ADD T2, MOV T1: Rd = D:Rd = LR
                return true;
            address += 2;
            continue;
        }
        const std::optional<uint16_t> second = code.halfword(address + 2);
        if (!second)
            return true;
        if ((*first & 0xF800u) == 0xF000u && (*second & 0xC000u) == 0xC000u)   // BL, BLX (immediate)
            return true;
        if (*first == 0xE8BDu && (*second & 0x4000u) != 0)                      // POP.W with LR
            return true;
        if ((*first & 0xFFF0u) == 0xF8D0u && (*second >> 12) == 14u)           // LDR.W LR, [Rn, #imm12]
            return true;
        if ((*first & 0xFFF0u) == 0xF850u && (*second >> 12) == 14u)           // LDR LR, [Rn, #+/-imm8] and indexed
            return true;
        address += 4;
    }
    return false;
}

} // namespace

std::optional<PrologueFrame> read_prologue(const SymbolTable& code, uint32_t start, uint32_t end, uint32_t pc)
{
    PrologueRun run;
    uint32_t address = start;
    for (int count = 0; count < most_instructions && address < pc; ++count) {
        const std::optional<uint16_t> first = code.halfword(address);
        if (!first)
            return std::nullopt;
        if (!starts_32_bit(*first)) {
            if ((*first & 0xFE00u) == 0xB400u) {                  // PUSH T1: r0-r7, bit 8 LR
                if (!run.push((*first & 0xFFu) | (*first & 0x100u) << 6))
                    return std::nullopt;
            } else if ((*first & 0xFF80u) == 0xB080u) {           // SUB SP, SP, #imm7:'00' (T1)
                run.allocate(uint32_t(*first & 0x7Fu) << 2);
            } else if ((*first & 0xFF00u) == 0xAF00u) {           // ADD r7, SP, #imm8:'00' (T1, Rd 7)
                run.frame_pointer(uint32_t(*first & 0xFFu) << 2);
            } else if ((*first & 0xFF00u) == 0x4600u) {           // MOV T1: Rd = D:Rd, Rm
                if (!run.move(uint32_t(*first >> 4 & 8u) | (*first & 7u), uint32_t(*first >> 3) & 0xFu))
                    return std::nullopt;
            } else {
                break;   // the body
            }
            address += 2;
            continue;
        }
        const std::optional<uint16_t> second = code.halfword(address + 2);
        if (!second)
            return std::nullopt;
        if (*first == 0xE92Du && (*second & 0xA000u) == 0) {               // PUSH.W T2 (STMDB SP!)
            if (!run.push(*second))
                return std::nullopt;
        } else if (*first == 0xF84Du && (*second & 0x0FFFu) == 0x0D04u) {  // PUSH.W T3: STR Rt, [SP, #-4]!
            if (!run.push(1u << (*second >> 12)))
                return std::nullopt;
        } else if ((*first & 0xFBFFu) == 0xF1ADu && (*second & 0x8F00u) == 0x0D00u) {   // SUB.W SP, SP, #const
            run.allocate(thumb_expand_immediate(imm12_of(*first, *second)));
        } else if ((*first & 0xFBFFu) == 0xF2ADu && (*second & 0x8F00u) == 0x0D00u) {   // SUBW SP, SP, #imm12
            run.allocate(imm12_of(*first, *second));
        } else if ((*first & 0xFFBFu) == 0xED2Du && (*second & 0x0E00u) == 0x0A00u) {   // VPUSH: imm8 words
            run.allocate(uint32_t(*second & 0xFFu) << 2);
        } else {
            break;
        }
        address += 4;
    }
    PrologueFrame frame = run.finish();
    // The whole body, not only up to the PC: a loop may have called from further on.
    frame.lr_written = writes_lr_between(code, address, end);
    return frame;
}

} // namespace mcuprof::core
