#include "mcuprof/image/unwind/exidx.h"

#include <algorithm>
#include <cstdio>

#include <llvm/BinaryFormat/ELF.h>

#include "mcuprof/image/error.h"
#include "mcuprof/image/firmware.h"
#include "mcuprof/image/unwind/halted_core.h"
#include "mcuprof/cortex_m.h"
#include "mcuprof/hex.h"

namespace mcuprof::core {
namespace {

constexpr uint32_t exidx_cantunwind = 1u;   // ARM IHI 0038, 5: the function cannot be unwound

uint32_t little_endian_word(const uint8_t* p)
{
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

// A prel31 field (ARM IHI 0038, 4.4.2): bits 30-0 a signed offset from the field's own address.
uint32_t prel31(uint32_t word, uint32_t place)
{
    const int32_t offset = int32_t(word << 1) >> 1;
    return place + uint32_t(offset);
}

// The allocated sections' bytes, by address, to follow exidx pointers into .ARM.extab.
class ImageBytes {
public:
    void add(uint32_t address, std::string_view bytes) { sections_.push_back({address, bytes}); }
    std::optional<uint32_t> word(uint32_t address) const
    {
        for (const auto& [start, bytes] : sections_)
            if (address >= start && address - start + 4 <= bytes.size()) {
                return little_endian_word(reinterpret_cast<const uint8_t*>(bytes.data()) + (address - start));
            }
        return std::nullopt;
    }

private:
    std::vector<std::pair<uint32_t, std::string_view>> sections_;
};

// The instructions of a compact-model entry (ARM IHI 0038, 6.3): personality routine 0 holds
// three instruction bytes in the word itself; routines 1 and 2 hold two and name how many
// more words follow. Returns false for a model it does not know (a generic personality
// routine, whose data only that routine reads).
bool compact_instructions(uint32_t first, uint32_t first_address, const ImageBytes& image, ExidxEntry& entry,
                          const std::string& elf_path)
{
    if ((first & 0x80000000u) == 0)
        return false;   // a prel31 to a generic personality routine
    const uint32_t personality = (first >> 24) & 0xFu;
    auto& out = entry.instructions;
    if (personality == 0) {
        out = {uint8_t(first >> 16), uint8_t(first >> 8), uint8_t(first)};
        return true;
    }
    if (personality != 1 && personality != 2)
        return false;
    const uint32_t more = (first >> 16) & 0xFFu;
    out = {uint8_t(first >> 8), uint8_t(first)};
    for (uint32_t i = 1; i <= more; ++i) {
        auto word = image.word(first_address + 4 * i);
        if (!word)
            throw Error(elf_path, ".ARM.extab " + hex32(first_address), "the unwinding instructions run past the image");
        for (int shift = 24; shift >= 0; shift -= 8)
            out.push_back(uint8_t(*word >> shift));
    }
    return true;
}

} // namespace

ExidxTable ExidxTable::read(const Image& elf)
{
    const std::string& elf_path = elf.path();
    ExidxTable table;
    ImageBytes image;
    std::optional<std::pair<uint32_t, std::string_view>> exidx;
    for (const Section& section : elf.sections()) {
        if (section.type == llvm::ELF::SHT_NOBITS || section.size == 0 || !section.readable)
            continue;
        image.add(section.address, section.bytes);
        if (section.name == ".ARM.exidx")
            exidx.emplace(section.address, section.bytes);
    }
    if (!exidx)
        return table;
    const auto [base, bytes] = *exidx;
    for (size_t offset = 0; offset + 8 <= bytes.size(); offset += 8) {
        const uint32_t at = base + uint32_t(offset);
        const auto* p = reinterpret_cast<const uint8_t*>(bytes.data()) + offset;
        const uint32_t function_word = little_endian_word(p), data = little_endian_word(p + 4);
        ExidxEntry entry;
        entry.start = prel31(function_word, at) & ~1u;
        if (data == exidx_cantunwind) {
            entry.cannot_unwind = true;
        } else if (data & 0x80000000u) {
            entry.cannot_unwind = !compact_instructions(data, at + 4, image, entry, elf_path);
        } else {
            const uint32_t extab = prel31(data, at + 4);
            auto first = image.word(extab);
            if (!first)
                throw Error(elf_path, ".ARM.exidx entry at " + hex32(at), "points outside the image (" + hex32(extab) + ")");
            entry.cannot_unwind = !compact_instructions(*first, extab, image, entry, elf_path);
        }
        table.entries_.push_back(std::move(entry));
    }
    std::stable_sort(table.entries_.begin(), table.entries_.end(),
                     [](const ExidxEntry& a, const ExidxEntry& b) { return a.start < b.start; });
    return table;
}

const ExidxEntry* ExidxTable::find(uint32_t address) const
{
    auto it = std::upper_bound(entries_.begin(), entries_.end(), address,
                               [](uint32_t a, const ExidxEntry& e) { return a < e.start; });
    return it == entries_.begin() ? nullptr : &*std::prev(it);
}

namespace {

using cortex_m::core_reg::sp, cortex_m::core_reg::lr, cortex_m::core_reg::pc;

// The state of the unwinding instructions (ARM IHI 0038, 10.3): the virtual stack pointer and
// what the pops restored.
struct ExidxRun {
    std::array<uint32_t, 16>& r;
    StackMemory& memory;
    uint32_t vsp;
    bool& restored_return;   // a pop restored LR or PC
    bool pc_set = false;

    // Pops the registers of `mask` (bit n: r(n)) from vsp, lowest register first.
    bool pop(uint32_t mask)
    {
        std::optional<uint32_t> new_sp;
        for (uint32_t reg = 0; reg < 16; ++reg) {
            if ((mask & (1u << reg)) == 0)
                continue;
            auto value = memory.read_word(vsp);
            if (!value)
                return false;
            vsp += 4;
            if (reg == sp)
                new_sp = *value;
            else
                r[reg] = *value;
            pc_set = pc_set || reg == pc;
            restored_return = restored_return || reg == pc || reg == lr;
        }
        if (new_sp)   // "vsp = popped r13": after the whole pop
            vsp = *new_sp;
        return true;
    }
};

// The ULEB128 operand that follows instruction byte `i` (10110010 uleb128), `i` moved to its
// last byte; nothing when the bytes end first or it exceeds 32 bits.
std::optional<uint32_t> read_uleb128(const std::vector<uint8_t>& code, size_t& i)
{
    uint32_t value = 0, shift = 0;
    for (;;) {
        if (i + 1 >= code.size() || shift > 28)
            return std::nullopt;
        const uint8_t byte = code[++i];
        value |= uint32_t(byte & 0x7Fu) << shift;
        shift += 7;
        if ((byte & 0x80u) == 0)
            return value;
    }
}

} // namespace

ExidxResult run_exidx(const ExidxEntry& entry, std::array<uint32_t, 16>& r, StackMemory& memory, bool& restored_return)
{
    restored_return = false;
    ExidxRun run{r, memory, r[sp], restored_return};
    uint32_t& vsp = run.vsp;
    auto pop = [&](uint32_t mask) { return run.pop(mask); };
    const std::vector<uint8_t>& code = entry.instructions;
    for (size_t i = 0; i < code.size(); ++i) {
        const uint8_t op = code[i];
        auto next = [&]() -> std::optional<uint8_t> {
            if (i + 1 >= code.size())
                return std::nullopt;
            return code[++i];
        };
        if ((op & 0xC0u) == 0x00u) {                 // 00xxxxxx: vsp += (x << 2) + 4
            vsp += (uint32_t(op & 0x3Fu) << 2) + 4;
        } else if ((op & 0xC0u) == 0x40u) {          // 01xxxxxx: vsp -= (x << 2) + 4
            vsp -= (uint32_t(op & 0x3Fu) << 2) + 4;
        } else if ((op & 0xF0u) == 0x80u) {          // 1000iiii iiiiiiii: pop {r4-r15} under mask
            auto low = next();
            if (!low)
                return ExidxResult::malformed;
            const uint32_t mask = (uint32_t(op & 0x0Fu) << 8 | *low) << 4;
            if (mask == 0)
                return ExidxResult::refused;         // 0x80 0x00: refuse to unwind
            if (!pop(mask))
                return ExidxResult::unreadable;
        } else if ((op & 0xF0u) == 0x90u) {          // 1001nnnn: vsp = r[nnnn] (not 13, 15)
            const uint32_t reg = op & 0x0Fu;
            if (reg == sp || reg == pc)
                return ExidxResult::malformed;
            vsp = r[reg];
        } else if ((op & 0xF0u) == 0xA0u) {          // 1010Lnnn: pop r4-r[4+nnn], and r14 if L
            uint32_t mask = ((1u << ((op & 0x7u) + 1)) - 1) << 4;
            if (op & 0x08u)
                mask |= 1u << lr;
            if (!pop(mask))
                return ExidxResult::unreadable;
        } else if (op == 0xB0u) {                    // finish
            break;
        } else if (op == 0xB1u) {                    // 10110001 0000iiii: pop {r0-r3} under mask
            auto mask = next();
            if (!mask || *mask == 0 || (*mask & 0xF0u) != 0)
                return ExidxResult::malformed;
            if (!pop(*mask))
                return ExidxResult::unreadable;
        } else if (op == 0xB2u) {                    // 10110010 uleb128: vsp += 0x204 + (uleb128 << 2)
            const std::optional<uint32_t> value = read_uleb128(code, i);
            if (!value)
                return ExidxResult::malformed;
            vsp += 0x204u + (*value << 2);
        } else if (op == 0xB3u || op == 0xC8u || op == 0xC9u) {
            // VFP registers D[s]-D[s+c]: B3 stored by FSTMFDX (8 bytes each, plus one word),
            // C8 (D16 up) and C9 by VPUSH (8 bytes each). Not needed to find the caller.
            auto sc = next();
            if (!sc)
                return ExidxResult::malformed;
            vsp += 8u * ((*sc & 0x0Fu) + 1) + (op == 0xB3u ? 4u : 0u);
        } else if ((op & 0xF8u) == 0xB8u) {          // 10111nnn: D8-D[8+nnn] by FSTMFDX
            vsp += 8u * ((op & 0x7u) + 1) + 4u;
        } else if ((op & 0xF8u) == 0xD0u) {          // 11010nnn: D8-D[8+nnn] by VPUSH
            vsp += 8u * ((op & 0x7u) + 1);
        } else {
            return ExidxResult::malformed;           // spare, or iWMMXt (no Cortex-M has it)
        }
    }
    r[sp] = vsp;
    if (!run.pc_set)
        r[pc] = r[lr];
    return ExidxResult::unwound;
}

} // namespace mcuprof::core
