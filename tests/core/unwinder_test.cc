#include <doctest/doctest.h>

#include <map>

#include "mcuprof/core/error.h"
#include "mcuprof/core/unwinder.h"

using namespace mcuprof::core;

namespace {

// symbols_fixture.elf (tests/data/elf/symbols_fixture.S) has no call-frame information:
// the unwinder passes the leaf through LR and exception frames through EXC_RETURN only.
const std::string fixture = std::string(FIXTURES_DIR) + "/symbols_fixture.elf";

class FakeMemory : public StackMemory {
public:
    std::map<uint32_t, uint32_t> words;
    std::optional<uint32_t> read_word(uint32_t address) override
    {
        auto it = words.find(address);
        return it == words.end() ? std::nullopt : std::optional<uint32_t>(it->second);
    }
    // An exception frame as the core stacks it (ARMv7-M ARM B1.5.6): r0-r3, r12, lr, pc, xPSR.
    void frame(uint32_t at, uint32_t lr, uint32_t pc, uint32_t xpsr)
    {
        const uint32_t values[8] = {0, 1, 2, 3, 12, lr, pc, xpsr};
        for (uint32_t i = 0; i < 8; ++i)
            words[at + 4 * i] = values[i];
    }
};

} // namespace

TEST_CASE("unwinder: exception frames by EXC_RETURN, basic and extended, with the 4-byte realignment")
{
    const Unwinder unwinder(fixture);
    CHECK_FALSE(unwinder.has_frame_info());
    FakeMemory memory;
    CoreRegisters regs;
    regs.r[13] = 0x20001000;
    regs.r[15] = 0x08000002;   // func_a, the handler's leaf
    regs.r[14] = 0xFFFFFFE1;   // return to handler mode, MSP, extended (floating-point) frame
    regs.xpsr = 0x0000000F;    // IPSR 15: SysTick
    // First frame: 0x68 bytes (26 words) with xPSR bit 9 set (4 bytes of padding): the next
    // frame starts at 0x20001000 + 0x68 + 4. It interrupted local_b, whose LR is another
    // EXC_RETURN (a thread on MSP, basic frame), so the next frame is read there.
    memory.frame(0x20001000, 0xFFFFFFF9, 0x08000012, (1u << 9) | 0x0B);
    memory.frame(0x2000106C, 0x08000021, 0x08000024, 0x01000000);   // thread: in func_c, LR into func_c
    const UnwindResult result = unwinder.unwind(regs, memory);
    // 0x08000012: the interrupted instruction in local_b; 0x08000024 the one in func_c; then
    // func_c's LR, 0x08000021, less the Thumb bit and 2 (back into the call instruction):
    // 0x0800001E. The function it returns to is not a leaf and has no frame information.
    REQUIRE(result.stack.callers.size() == 3);
    CHECK(result.stack.callers[0] == 0x08000012u);
    CHECK(result.stack.callers[1] == 0x08000024u);
    CHECK(result.stack.callers[2] == 0x0800001Eu);
    CHECK(result.stop == UnwindStop::no_frame_info);
    CHECK(result.stack.truncated);
}

TEST_CASE("unwinder: a return to the thread stack without PSP, unreadable memory, reset LR, a stacked PC outside the code")
{
    const Unwinder unwinder(fixture);
    CoreRegisters regs;
    regs.r[13] = 0x20001000;
    regs.r[15] = 0x08000002;
    regs.xpsr = 0x0000000F;
    FakeMemory memory;

    regs.r[14] = 0xFFFFFFFD;   // thread mode on PSP: the link did not give PSP
    UnwindResult r = unwinder.unwind(regs, memory);
    CHECK(r.stop == UnwindStop::psp_unknown);
    CHECK(r.stack.callers.empty());

    regs.psp = 0x20002000;     // now it did, but nothing can be read there
    r = unwinder.unwind(regs, memory);
    CHECK(r.stop == UnwindStop::unreadable);

    memory.frame(0x20002000, 0xFFFFFFFF, 0xDEADBEEE, 0x01000000);   // garbage PC
    r = unwinder.unwind(regs, memory);
    CHECK(r.stop == UnwindStop::bad_frame);
    CHECK(r.stack.truncated);

    regs.r[14] = 0xFFFFFFFF;   // LR's reset value: the leaf is the root
    r = unwinder.unwind(regs, memory);
    CHECK(r.stop == UnwindStop::root);
    CHECK_FALSE(r.stack.truncated);
    CHECK(r.stack.callers.empty());
}

TEST_CASE("unwinder: an ELF that cannot be read is an error naming it")
{
    CHECK_THROWS_WITH_AS(Unwinder("/nonexistent/fw.elf"), doctest::Contains("/nonexistent/fw.elf"), Error);
}
