#include "mcuprof/image/unwind/prologue.h"

#include "mcuprof/image/symbols.h"
#include "mcuprof/image/unwind/thumb_decoder.h"

namespace mcuprof::core {
namespace {

using reg::r7, reg::sp, reg::lr;
constexpr uint32_t pc_register = reg::pc;   // `pc` names the halted PC here
constexpr int most_instructions = 64;   // a prologue is a handful; this bounds a runaway scan

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
// A7.7.98, A7.7.43). A literal pool decoded as instructions can only add a false "yes".
bool writes_lr_between(const SymbolTable& code, uint32_t address, uint32_t end)
{
    for (int count = 0; address < end; ++count) {
        if (count == 4096)
            return true;   // too long to sweep: no sure answer
        const std::optional<ThumbInstruction> instruction = decode_thumb(code, address);
        if (!instruction)
            return true;
        switch (instruction->kind) {
        case ThumbKind::bl:
        case ThumbKind::blx_immediate:
        case ThumbKind::blx_register:
            return true;
        case ThumbKind::mov_register:
        case ThumbKind::add_register:
        case ThumbKind::load_word:
            if (instruction->d == lr)
                return true;
            break;
        case ThumbKind::pop:
            if ((instruction->registers & reg::bit(lr)) != 0)
                return true;
            break;
        default:
            break;
        }
        address += instruction->length;
    }
    return false;
}

// One instruction of the prologue run on `run`: whether the prologue goes on (true), ends
// before it (false: the body), or cannot be a prologue's (nothing).
std::optional<bool> prologue_step(const ThumbInstruction& instruction, PrologueRun& run)
{
    switch (instruction.kind) {
    case ThumbKind::push:
        return run.push(instruction.registers) ? std::optional<bool>(true) : std::nullopt;
    case ThumbKind::sub_sp_immediate:
    case ThumbKind::vpush:
        run.allocate(instruction.imm);
        return true;
    case ThumbKind::add_sp_immediate:   // ADD r7, SP, #imm (T1): the frame pointer
        if (instruction.d != r7 || instruction.encoding != 1)
            return false;
        run.frame_pointer(instruction.imm);
        return true;
    case ThumbKind::mov_register:
        return run.move(instruction.d, instruction.m) ? std::optional<bool>(true) : std::nullopt;
    default:
        return false;
    }
}

} // namespace

std::optional<PrologueFrame> read_prologue(const SymbolTable& code, uint32_t start, uint32_t end, uint32_t pc)
{
    PrologueRun run;
    uint32_t address = start;
    for (int count = 0; count < most_instructions && address < pc; ++count) {
        const std::optional<ThumbInstruction> instruction = decode_thumb(code, address);
        if (!instruction)
            return std::nullopt;
        const std::optional<bool> goes_on = prologue_step(*instruction, run);
        if (!goes_on)
            return std::nullopt;
        if (!*goes_on)
            break;   // the body
        address += instruction->length;
    }
    PrologueFrame frame = run.finish();
    // The whole body, not only up to the PC: a loop may have called from further on.
    frame.lr_written = writes_lr_between(code, address, end);
    return frame;
}

} // namespace mcuprof::core
