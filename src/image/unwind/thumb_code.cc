#include "mcuprof/image/unwind/thumb_code.h"

#include <algorithm>

#include "mcuprof/image/unwind/halted_core.h"
#include "mcuprof/image/symbols.h"

namespace mcuprof::core {
namespace {

// Where a call or a tail call at `address` goes (BL, B: A7.7.18, A7.7.12), or nothing for any
// other instruction.
std::optional<uint32_t> branch_target(uint32_t address, const ThumbInstruction& instruction)
{
    if (instruction.kind != ThumbKind::branch && instruction.kind != ThumbKind::bl)
        return std::nullopt;
    return address + 4 + uint32_t(instruction.offset);   // a Thumb instruction reads PC as its address + 4
}

// The registers of a POP (A7.7.98), popped from SP lowest first; the epilogue's state.
struct EpilogueRun {
    std::array<uint32_t, 16> r;
    uint32_t popped = 0;   // the registers this epilogue has popped

    bool pop(uint32_t list, StackMemory& memory)
    {
        popped |= list;
        for (uint32_t n = 0; n < reg::count; ++n) {
            if ((list & reg::bit(n)) == 0)
                continue;
            const std::optional<uint32_t> value = memory.read_word(r[reg::sp]);
            if (!value)
                return false;
            r[n] = *value;
            r[reg::sp] += 4;
        }
        return true;
    }
};

// One step of an epilogue: nothing to go on with the next instruction, else how it ended.
std::optional<EpilogueResult> epilogue_step(const ThumbInstruction& instruction, EpilogueRun& run, StackMemory& memory)
{
    std::array<uint32_t, 16>& r = run.r;
    switch (instruction.kind) {
    case ThumbKind::pop: {
        const uint32_t list = instruction.registers;
        if ((list & reg::bit(reg::sp)) != 0 || list == 0)
            return EpilogueResult::not_epilogue;   // UNPREDICTABLE
        if (!run.pop(list, memory))
            return EpilogueResult::unreadable;
        if ((list & reg::bit(reg::pc)) != 0)
            return EpilogueResult::returned;
        return std::nullopt;
    }
    case ThumbKind::mov_register:
        if (instruction.d == reg::pc || instruction.m == reg::pc)
            return EpilogueResult::not_epilogue;   // a branch, or PC read
        r[instruction.d] = r[instruction.m];
        return std::nullopt;
    case ThumbKind::add_sp_immediate:
        if (instruction.d != reg::sp || instruction.encoding != 2)
            return EpilogueResult::not_epilogue;
        r[reg::sp] += instruction.imm;
        return std::nullopt;
    case ThumbKind::vpop:
        r[reg::sp] += instruction.imm;
        return std::nullopt;
    case ThumbKind::bx:
        // A return through LR or a register the epilogue popped (ARMv6-M's pop {r3}; bx r3);
        // a BX through another register is a jump (a linker's long-branch veneer: ldr r0,
        // =target; mov ip, r0; pop {r0}; bx ip).
        if (instruction.m == reg::pc || (instruction.m != reg::lr && (run.popped & reg::bit(instruction.m)) == 0))
            return EpilogueResult::not_epilogue;
        r[reg::pc] = r[instruction.m];
        return EpilogueResult::returned;
    default:
        return EpilogueResult::not_epilogue;
    }
}

// The wait instruction (WFI or WFE) that starts at `pc`, if one does; a 16-bit one only when
// it is not the second half of a 32-bit instruction.
std::optional<ThumbInstruction> wait_at(const SymbolTable& code, uint32_t pc)
{
    const std::optional<ThumbInstruction> instruction = decode_thumb(code, pc);
    if (!instruction || !instruction->is_wait())
        return std::nullopt;
    if (instruction->length == 2)
        if (const std::optional<uint16_t> before = code.halfword(pc - 2); before && starts_32_bit(*before))
            return std::nullopt;
    return instruction;
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
            if (const std::optional<ThumbInstruction> instruction = decode_thumb(first, second))
                if (const std::optional<uint32_t> target = branch_target(section.start + uint32_t(offset), *instruction))
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
    EpilogueRun run{registers};
    uint32_t address = run.r[reg::pc];
    for (int count = 0; count < 16; ++count) {
        const std::optional<ThumbInstruction> instruction = decode_thumb(code, address);
        if (!instruction)
            return EpilogueResult::not_epilogue;
        if (const std::optional<EpilogueResult> ended = epilogue_step(*instruction, run, memory)) {
            if (*ended == EpilogueResult::returned)
                registers = run.r;
            return *ended;
        }
        address += instruction->length;
    }
    return EpilogueResult::not_epilogue;
}

// A wait that ends at pc: 32 bits from pc - 4, else 16 from pc - 2.
bool follows_wait_instruction(const SymbolTable& code, uint32_t pc)
{
    const std::optional<ThumbInstruction> wide = wait_at(code, pc - 4);
    if (wide && wide->length == 4)
        return true;
    const std::optional<ThumbInstruction> narrow = wait_at(code, pc - 2);
    return narrow && narrow->length == 2;
}

bool is_wait_instruction(const SymbolTable& code, uint32_t pc)
{
    return wait_at(code, pc).has_value();
}

bool pc_shows_sleep(const SymbolTable& code, uint32_t pc, bool reads_pcsr)
{
    return follows_wait_instruction(code, pc) || (reads_pcsr && is_wait_instruction(code, pc));
}

} // namespace mcuprof::core
