#pragma once
// What the unwinder knows of the image, read once by the Unwinder: call-frame rows, the vector
// tables, the code and its exception tables. Private to src/image/unwind.
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "mcuprof/image/symbols.h"
#include "mcuprof/image/unwind/call_frames.h"
#include "mcuprof/image/unwind/exidx.h"

namespace mcuprof::core {

// One row of the call-frame table with what the unwinder needs besides: whether the
// function has put its return address anywhere by then.
struct UnwindRow : FrameRow {
    bool lr_saved = false;
};

// What the unwinder knows of the image: call-frame rows, the vector table, the code.
struct UnwindTables {
    // One image's exception table, with the code it covers: an entry extends to the next, so
    // the last entry of one image's table would take in the code of an image above it.
    struct ImageExidx {
        std::vector<std::pair<uint32_t, uint64_t>> code;   // [start, end) of its executable sections
        ExidxTable table;
    };

    std::vector<UnwindRow> rows;   // by start address
    std::optional<uint32_t> initial_sp;
    // Each image's vector table (B1.5.3), the image given first first: the one VTOR points at is
    // the one the handlers came from, whichever it is (a bootloader moves VTOR to its application's).
    std::vector<std::vector<uint32_t>> vector_tables;
    SymbolTable code;                                   // the functions and executable sections
    std::vector<uint32_t> function_starts;              // of every FDE and exception-table entry, sorted
    std::vector<uint32_t> branch_targets;               // of every direct call and branch, sorted
    std::vector<ImageExidx> exidx;                      // for code without .debug_frame
    std::vector<uint32_t> entries;                      // each image's ELF entry point

    // The exception-table entry of code no DWARF row covers, when it can be unwound.
    const ExidxEntry* exidx_entry(uint32_t address) const
    {
        for (const ImageExidx& image : exidx)
            for (const auto& [start, end] : image.code)
                if (address >= start && address < end) {
                    const ExidxEntry* entry = image.table.find(address);
                    return entry != nullptr && !entry->cannot_unwind ? entry : nullptr;
                }
        return nullptr;
    }

    // Whether `address` lies in the handler of exception `number`: from its vector to the
    // next function's start. Exception 1 is Reset.
    bool in_handler_function(uint32_t number, uint32_t address) const
    {
        for (const std::vector<uint32_t>& vectors : vector_tables)
            if (number != 0 && number < vectors.size() && (vectors[number] & 1u) != 0 &&   // a Thumb address
                in_function_at(vectors[number] & ~1u, address))
                return true;
        return false;
    }

    // Whether `address` lies in the function that starts at `start`: to its end by the symbol
    // table when a symbol starts there (an assembly handler without call-frame information
    // has one), else to the next function the call-frame tables know.
    bool in_function_at(uint32_t start, uint32_t address) const
    {
        if (address < start || !in_code(address))
            return false;
        if (const Function* function = code.find(start); function != nullptr && function->start == start)
            return address - start < function->size;
        auto next = std::upper_bound(function_starts.begin(), function_starts.end(), start);
        return next == function_starts.end() || address < *next;
    }

    // The reset handler (the vector table's Reset entry, B1.5.3) or the function at the ELF's
    // entry point: where every thread-mode chain of a bare-metal image begins. Reached, the
    // chain is whole, with or without call-frame information there (a vendor's assembly
    // startup has none).
    bool in_reset_function(uint32_t address) const
    {
        return in_handler_function(1, address) ||
               std::any_of(entries.begin(), entries.end(), [&](uint32_t entry) { return in_function_at(entry, address); });
    }

    bool is_function_start(uint32_t address) const
    {
        return std::binary_search(function_starts.begin(), function_starts.end(), address);
    }

    bool in_code(uint32_t address) const
    {
        return code.code_sections().empty() || code.in_code(address);   // nothing known: take any address
    }

    // Whether the function holding `address` (by the symbol table, else by the call-frame
    // tables) is entered only through its address (a thread's entry, started by its RTOS): no
    // BL or branch in the image goes to its start. False when no function is known to hold it.
    bool entered_only_by_address(uint32_t address) const
    {
        uint32_t start;
        if (const Function* function = code.find(address)) {
            start = function->start;
        } else {
            auto next = std::upper_bound(function_starts.begin(), function_starts.end(), address);
            if (next == function_starts.begin())
                return false;
            start = *std::prev(next);
        }
        return !std::binary_search(branch_targets.begin(), branch_targets.end(), start);
    }

    const UnwindRow* find(uint32_t address) const
    {
        auto it = std::upper_bound(rows.begin(), rows.end(), address,
                                   [](uint32_t a, const UnwindRow& r) { return a < r.start; });
        if (it == rows.begin())
            return nullptr;
        --it;
        return address < it->end ? &*it : nullptr;
    }
};

} // namespace mcuprof::core
