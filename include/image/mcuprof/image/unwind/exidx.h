#pragma once
// The Arm exception-handling tables (.ARM.exidx, .ARM.extab; "Exception Handling ABI for the
// Arm Architecture", ARM IHI 0038): what GCC emits with -funwind-tables, and what remains of
// the call-frame information in an image built without -g (no .debug_frame). One entry per
// function: the unwinding instructions that undo its frame once its prologue has run.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mcuprof::core {

class Image;
class StackMemory;

struct ExidxEntry {
    uint32_t start = 0;                  // the function's first instruction (Thumb bit clear)
    bool cannot_unwind = false;          // EXIDX_CANTUNWIND, or a model this reader does not know
    std::vector<uint8_t> instructions;   // the unwinding instructions, in execution order
};

class ExidxTable {
public:
    // Reads .ARM.exidx and the .ARM.extab entries it points to (an image without them gives an
    // empty table). Throws core::Error naming the file and the entry when a pointer leads
    // outside the image.
    static ExidxTable read(const Image& elf);

    bool empty() const { return entries_.empty(); }
    const std::vector<ExidxEntry>& entries() const { return entries_; }
    // The entry of the function holding `address`: an entry covers up to the next entry's start.
    const ExidxEntry* find(uint32_t address) const;

private:
    std::vector<ExidxEntry> entries_;    // by start
};

// What running an entry's instructions gave.
enum class ExidxResult { unwound, refused, unreadable, malformed };

// Runs the unwinding instructions (ARM IHI 0038, 10.3) on `registers`: on return they are the
// caller's, SP the virtual stack pointer at the end, PC the return address (r15 when popped,
// r14 otherwise). `restored_return` tells whether the instructions restored it (popped r14 or
// r15) rather than leaving LR as it was.
ExidxResult run_exidx(const ExidxEntry& entry, std::array<uint32_t, 16>& registers, StackMemory& memory,
                      bool& restored_return);

} // namespace mcuprof::core
